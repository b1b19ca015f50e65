package etcd

import (
	"reflect"
	"strings"
	"testing"
)

// etcd's metrics as a member of three writes them: it reaches 8e9e05c52164694d and lost its
// connection to 91bc3c398fb3c146 (a peer it never reached has no series).
const activePeersMetrics = `# HELP etcd_network_active_peers The current number of active peer connections.
# TYPE etcd_network_active_peers gauge
etcd_network_active_peers{Local="fd422379fda50e48",Remote="8e9e05c52164694d"} 1
etcd_network_active_peers{Local="fd422379fda50e48",Remote="91bc3c398fb3c146"} 0
# HELP etcd_network_disconnected_peers_total The total number of disconnected peers.
# TYPE etcd_network_disconnected_peers_total counter
etcd_network_disconnected_peers_total{Local="fd422379fda50e48",Remote="91bc3c398fb3c146"} 1
# HELP etcd_server_has_leader Whether or not a leader exists. 1 is existence, 0 is not.
# TYPE etcd_server_has_leader gauge
etcd_server_has_leader 1
`

func TestParseActivePeers(t *testing.T) {
	got, err := parseActivePeers(strings.NewReader(activePeersMetrics))
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]bool{0x8e9e05c52164694d: true, 0x91bc3c398fb3c146: false}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := parseActivePeers(strings.NewReader(`etcd_network_active_peers{Local="a",Remote="not-hex"} 1` + "\n")); err == nil {
		t.Error("a Remote that is not a member ID was accepted")
	}
}
