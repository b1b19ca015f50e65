package resources

import (
	"fmt"
	"strings"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/version"
)

// InitialCluster renders etcd's --initial-cluster for the given member names.
func InitialCluster(c *v1alpha1.EtcdCluster, members []string) string {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = m + "=" + names.PeerURL(c.Name, c.Namespace, m, c.Spec.TLS.IsEnabled())
	}
	return strings.Join(parts, ",")
}

// EtcdFlags are the etcd server flags of one member.
func EtcdFlags(c *v1alpha1.EtcdCluster, v version.Version, member, state, initialCluster string) []string {
	tls := c.Spec.TLS.IsEnabled()
	scheme := "http"
	if tls {
		scheme = "https"
	}
	o := c.Spec.Etcd
	flags := []string{
		"--name=" + member,
		"--data-dir=" + DataDir,
		fmt.Sprintf("--listen-client-urls=%s://0.0.0.0:%d", scheme, names.ClientPort),
		fmt.Sprintf("--listen-peer-urls=%s://0.0.0.0:%d", scheme, names.PeerPort),
		fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", names.MetricsPort),
		"--advertise-client-urls=" + names.ClientURL(c.Name, c.Namespace, member, tls),
		"--initial-advertise-peer-urls=" + names.PeerURL(c.Name, c.Namespace, member, tls),
		"--initial-cluster=" + initialCluster,
		"--initial-cluster-state=" + state,
		"--initial-cluster-token=" + string(c.UID),
		fmt.Sprintf("--heartbeat-interval=%d", o.HeartbeatIntervalMillis),
		fmt.Sprintf("--election-timeout=%d", o.ElectionTimeoutMillis),
		fmt.Sprintf("--quota-backend-bytes=%d", o.QuotaBackendBytes),
		"--auto-compaction-mode=" + o.AutoCompactionMode,
		"--auto-compaction-retention=" + o.AutoCompactionRetention,
		"--logger=zap",
		"--log-outputs=stderr",
		version.InitialCorruptCheckFlag(v),
		version.CorruptCheckTimeFlag(v),
	}
	if version.SplitsClientHTTP(v) {
		flags = append(flags, fmt.Sprintf("--listen-client-http-urls=%s://0.0.0.0:%d", scheme, names.ClientHTTPPort))
	}
	if tls {
		flags = append(flags,
			"--client-cert-auth=true",
			"--trusted-ca-file="+ServerTLSDir+"/ca.crt",
			"--cert-file="+ServerTLSDir+"/tls.crt",
			"--key-file="+ServerTLSDir+"/tls.key",
			"--peer-client-cert-auth=true",
			"--peer-trusted-ca-file="+PeerTLSDir+"/ca.crt",
			"--peer-cert-file="+PeerTLSDir+"/tls.crt",
			"--peer-key-file="+PeerTLSDir+"/tls.key",
			version.PeerSkipClientSANFlag(v),
		)
		flags = append(flags, PeerIdentityFlags(c)...)
	}
	return flags
}

// PeerIdentityFlags pin the peers a member talks to, either way, to the cluster's own peer
// certificate (its common name, names.PeerCN) when the operator generates it: a certificate
// of the same CA with another name (the applications' and the operator's client
// certificates, which clusters from before the peer CA sign with the peer's CA, or a peer
// certificate of another cluster) is refused on the peer port, and a member does not take a
// server that presents one for a peer. Peer certificates from the user's own Secret
// (spec.tls.peerSecretName; an external cluster's during a join) are trusted by their CA
// alone: their names are the user's. Members get the flag when their pods are next
// replaced; it is not part of the member spec hash, so installing this release rolls nothing.
func PeerIdentityFlags(c *v1alpha1.EtcdCluster) []string {
	if !c.Spec.TLS.IsEnabled() || c.Spec.TLS.PeerSecretName != "" {
		return nil
	}
	return []string{"--peer-cert-allowed-cn=" + names.PeerCN(c.Name)}
}
