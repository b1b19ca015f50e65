package localcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func testConfig(t *testing.T) Config {
	cfg := DefaultConfig("q", "v1.35.4")
	cfg.StateDir = t.TempDir()
	return cfg
}

func TestNodeSpecs(t *testing.T) {
	cfg := testConfig(t)
	want := []nodeSpec{
		{index: 1, name: "q-node-1", ip: "10.87.0.1", podCIDR: "10.244.0.0/24", dir: cfg.StateDir},
		{index: 2, name: "q-node-2", ip: "10.87.0.2", podCIDR: "10.244.1.0/24", dir: filepath.Join(cfg.StateDir, "nodes", "2"), netns: "quorate-q-n2", cgroupRoot: "/quorate-q-n2"},
		{index: 5, name: "q-node-5", ip: "10.87.0.5", podCIDR: "10.244.4.0/24", dir: filepath.Join(cfg.StateDir, "nodes", "5"), netns: "quorate-q-n5", cgroupRoot: "/quorate-q-n5"},
	}
	for _, w := range want {
		if got := cfg.node(w.index); !reflect.DeepEqual(got, w) {
			t.Errorf("node(%d) = %+v, want %+v", w.index, got, w)
		}
	}
	// Node 1's files are the cluster's own, where a one-node cluster always had them.
	n1 := cfg.node(1)
	if n1.socket() != cfg.ContainerdSocket() || n1.daemon("kubelet") != "kubelet" || n1.certName("kubelet-client") != "kubelet-client" {
		t.Errorf("node 1: socket %s, kubelet daemon %s, client certificate %s", n1.socket(), n1.daemon("kubelet"), n1.certName("kubelet-client"))
	}
	n2 := cfg.node(2)
	if got := n2.inNetns("kubelet", "--v=1"); !reflect.DeepEqual(got, []string{"nsenter", "--net=/run/netns/quorate-q-n2", "--", "kubelet", "--v=1"}) {
		t.Errorf("node 2 runs %q", got)
	}
	if got := n1.inNetns("kubelet"); !reflect.DeepEqual(got, []string{"kubelet"}) {
		t.Errorf("node 1 runs %q", got)
	}
	if got, want := n2.cniWrapper("bridge"), "#!/bin/sh\nexec nsenter --net=/run/netns/quorate-q-n2 -- /usr/lib/cni/bridge \"$@\"\n"; got != want {
		t.Errorf("CNI wrapper:\n%s\nwant:\n%s", got, want)
	}
	if n1.pool() != PoolSystem || n2.pool() != PoolEtcd {
		t.Errorf("pools: node 1 %s, node 2 %s", n1.pool(), n2.pool())
	}
}

func TestStartedNodesReadsTheStateDirectory(t *testing.T) {
	cfg := testConfig(t)
	for _, d := range []string{"3", "2", "notanode", "1"} {
		if err := os.MkdirAll(filepath.Join(cfg.StateDir, "nodes", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, n := range cfg.startedNodes() {
		got = append(got, n.name)
	}
	if want := []string{"q-node-1", "q-node-2", "q-node-3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("started nodes %q, want %q", got, want)
	}
	nd := NewNode(cfg)
	if !reflect.DeepEqual(nd.NodeNames(), got) {
		t.Errorf("NodeNames %q", nd.NodeNames())
	}
	_, err := cfg.findNode("q-node-9")
	if want := `the local cluster q has no node "q-node-9" (its nodes: q-node-1, q-node-2, q-node-3)`; err == nil || err.Error() != want {
		t.Errorf("findNode: %v, want %s", err, want)
	}
	for name, f := range map[string]func() error{
		"PowerOff":  func() error { return nd.PowerOff(context.Background(), "q-node-1") },
		"PowerOn":   func() error { return nd.PowerOn(context.Background(), "q-node-1") },
		"Partition": func() error { return nd.Partition(context.Background(), "q-node-1", true) },
	} {
		if err := f(); !errors.Is(err, errHostNode) {
			t.Errorf("%s of node 1: %v, want %v", name, err, errHostNode)
		}
	}
}

func TestFurtherNodeConfigs(t *testing.T) {
	c := New(testConfig(t), os.Stderr)
	n1, n2 := c.cfg.node(1), c.cfg.node(2)

	k1, k2 := c.kubeletConfig(n1), c.kubeletConfig(n2)
	if strings.Contains(k1, "cgroupRoot") || strings.Contains(k1, "podLogsDir") {
		t.Errorf("node 1's kubelet has a cgroup root:\n%s", k1)
	}
	for _, line := range []string{"address: 10.87.0.2\n", "cgroupRoot: /quorate-q-n2\n", "containerRuntimeEndpoint: unix://" + n2.socket() + "\n", `tlsCertFile: "` + c.pki("kubelet-2.crt") + `"`, `podLogsDir: "` + n2.path("pod-logs") + `"` + "\n"} {
		if !strings.Contains(k2, line) {
			t.Errorf("node 2's kubelet configuration lacks %q:\n%s", line, k2)
		}
	}
	d2 := c.kubeletDaemon(n2)
	if d2.name != "kubelet-2" || !slices.Contains(d2.args, "--node-labels="+PoolLabel+"="+PoolEtcd) || !slices.Contains(d2.args, "--hostname-override=q-node-2") {
		t.Errorf("node 2's kubelet: %s %q", d2.name, d2.args)
	}

	c1, c2 := c.containerdConfig(n1), c.containerdConfig(n2)
	if !strings.Contains(c1, `bin_dir = "/usr/lib/cni"`) || strings.Contains(c1, "stream_server_address") {
		t.Errorf("node 1's containerd changed:\n%s", c1)
	}
	for _, line := range []string{`bin_dir = "` + n2.path("cni", "bin") + `"`, `stream_server_address = "10.87.0.1"`, `address = "` + n2.socket() + `"`, `conf_dir = "` + n2.path("cni", "net.d") + `"`} {
		if !strings.Contains(c2, line) {
			t.Errorf("node 2's containerd configuration lacks %q:\n%s", line, c2)
		}
	}
	if cni := c.cniConfig(n2); !strings.Contains(cni, `"subnet": "10.244.1.0/24"`) {
		t.Errorf("node 2's pod network:\n%s", cni)
	}
}
