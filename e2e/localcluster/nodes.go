package localcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/quorate-dev/quorate/internal/pki"
)

// PoolLabel is the node label that says which pool a node belongs to: node 1, which runs the
// control plane and the add-ons, is in PoolSystem; every further node is in PoolEtcd, for the
// members of the clusters the node scenarios create.
const (
	PoolLabel  = "node.quorate.dev/pool"
	PoolSystem = "system"
	PoolEtcd   = "etcd"
)

// pool is the node's pool.
func (n nodeSpec) pool() string {
	if n.index == 1 {
		return PoolSystem
	}
	return PoolEtcd
}

// MaxNodes bounds Config.Nodes: every node runs its own containerd, kubelet and kube-proxy on
// the machine's 2 cores.
const MaxNodes = 5

// cniPlugins are the CNI plugins a node's containerd runs (containerd's loopback, and the
// plugins of cniConfig).
var cniPlugins = []string{"bridge", "host-local", "portmap", "loopback"}

// nodeSpec is one node of the cluster.
//
// Node 1 is this machine itself: its kubelet and kube-proxy run in the host's network
// namespace, at the node bridge's address, and its files are the cluster's own.
//
// Node i > 1 is a network namespace joined to the node bridge by a veth pair, at the bridge's
// address + i-1, with its own pod bridge and pod CIDR (the host routes that CIDR to it). Its
// kubelet and kube-proxy run in that namespace, under a cgroup root of their own. Its
// containerd runs in the host's namespace, so that it pulls from the registry on the host's
// loopback; the CNI plugins it runs enter the node's namespace (cniWrapper), so pods attach to
// the node's pod bridge. Its streaming server listens at the node bridge's address, which the
// node's kubelet reaches.
type nodeSpec struct {
	index      int
	name       string
	ip         string
	podCIDR    string
	dir        string // its configuration and state
	netns      string // its network namespace; "" for node 1
	cgroupRoot string // its kubelet's cgroup root; "" for node 1 (the default, /)
}

// node returns the i-th node (1-based) of the cluster.
func (c Config) node(i int) nodeSpec {
	if i == 1 {
		return nodeSpec{index: 1, name: c.NodeName, ip: c.NodeIP, podCIDR: c.NodePodCIDR, dir: c.StateDir}
	}
	return nodeSpec{
		index:      i,
		name:       fmt.Sprintf("%s-node-%d", c.Name, i),
		ip:         addToIP(c.NodeIP, 3, i-1),
		podCIDR:    addToCIDR(c.NodePodCIDR, 2, i-1),
		dir:        c.path("nodes", strconv.Itoa(i)),
		netns:      fmt.Sprintf("quorate-%s-n%d", c.Name, i),
		cgroupRoot: fmt.Sprintf("/quorate-%s-n%d", c.Name, i),
	}
}

// startedNodes are the nodes Up created: node 1 and one directory under nodes/ for each
// further node. Down, Running and the suite's Node read them from the state directory, which
// is the one record another process can see.
func (c Config) startedNodes() []nodeSpec {
	nodes := []nodeSpec{c.node(1)}
	entries, _ := os.ReadDir(c.path("nodes"))
	var idx []int
	for _, e := range entries {
		if i, err := strconv.Atoi(e.Name()); err == nil && i > 1 {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	for _, i := range idx {
		nodes = append(nodes, c.node(i))
	}
	return nodes
}

// addToIP adds n to byte b of the IPv4 address s.
func addToIP(s string, b, n int) string {
	ip := slices.Clone(net.ParseIP(s).To4())
	ip[b] += byte(n)
	return ip.String()
}

// addToCIDR adds n to byte b of the IPv4 network s.
func addToCIDR(s string, b, n int) string {
	ip, cidr, _ := net.ParseCIDR(s)
	ones, _ := cidr.Mask.Size()
	return fmt.Sprintf("%s/%d", addToIP(ip.String(), b, n), ones)
}

func (n nodeSpec) path(parts ...string) string {
	return filepath.Join(append([]string{n.dir}, parts...)...)
}

// daemon is the name of the node's instance of a daemon (its PID and log file).
func (n nodeSpec) daemon(base string) string {
	if n.index == 1 {
		return base
	}
	return fmt.Sprintf("%s-%d", base, n.index)
}

// certName is the base name of the node's certificate of kind ("kubelet", "kubelet-client").
func (n nodeSpec) certName(kind string) string { return n.daemon(kind) }

func (n nodeSpec) socket() string { return n.path("containerd", "containerd.sock") }

// veth is the host's end of the pair that joins the node to the node bridge.
func (n nodeSpec) veth() string { return fmt.Sprintf("qnode%d", n.index) }

func (n nodeSpec) netnsPath() string { return filepath.Join("/run/netns", n.netns) }

// inNetns prefixes a command so that it runs in the node's network namespace.
func (n nodeSpec) inNetns(args ...string) []string {
	if n.netns == "" {
		return args
	}
	return append([]string{"nsenter", "--net=" + n.netnsPath(), "--"}, args...)
}

func (n nodeSpec) daemons(c *Cluster) []daemon {
	return []daemon{c.containerdDaemon(n), c.kubeletDaemon(n), c.kubeProxyDaemon(n)}
}

// cniWrapper runs a CNI plugin in the node's network namespace (the container's namespace is
// given to the plugin by path, so only the plugin's own side moves).
func (n nodeSpec) cniWrapper(plugin string) string {
	return fmt.Sprintf("#!/bin/sh\nexec nsenter --net=%s -- /usr/lib/cni/%s \"$@\"\n", n.netnsPath(), plugin)
}

// writeNodePKI signs the node's kubelet serving and client certificates with the cluster CA and
// writes the kubelet's kubeconfig.
func (c *Cluster) writeNodePKI(n nodeSpec) error {
	caCert, err := os.ReadFile(c.pki("ca.crt"))
	if err != nil {
		return err
	}
	caKey, err := os.ReadFile(c.pki("ca.key"))
	if err != nil {
		return err
	}
	ca, err := pki.LoadCA(caCert, caKey)
	if err != nil {
		return err
	}
	now := time.Now()
	for name, req := range map[string]pki.Request{
		n.certName("kubelet-client"): {CommonName: "system:node:" + n.name, Organization: []string{"system:nodes"}, Usage: pki.ClientOnly},
		n.certName("kubelet"):        {CommonName: n.name, Usage: pki.ServerAndClient, DNSNames: []string{n.name, "localhost"}, IPs: []net.IP{net.ParseIP(n.ip)}},
	} {
		pair, err := ca.Sign(req, now)
		if err != nil {
			return fmt.Errorf("signing %s: %w", name, err)
		}
		if err := os.WriteFile(c.pki(name+".crt"), pair.CertPEM, 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(c.pki(name+".key"), pair.KeyPEM, 0o600); err != nil {
			return err
		}
	}
	return c.writeKubeconfig(n.path(n.certName("kubelet-client")+".kubeconfig"), n.certName("kubelet-client"))
}

// writeNodeConfigs writes every file the node's daemons read.
func (c *Cluster) writeNodeConfigs(n nodeSpec) error {
	files := map[string]string{
		n.path("containerd", "config.toml"):           c.containerdConfig(n),
		n.path("cni", "net.d", "10-quorate.conflist"): c.cniConfig(n),
		n.path("kubelet-config.yaml"):                 c.kubeletConfig(n),
		n.path("kube-proxy-config.yaml"):              c.kubeProxyConfig(n),
	}
	if n.netns != "" {
		for _, p := range cniPlugins {
			files[n.path("cni", "bin", p)] = n.cniWrapper(p)
		}
		if err := os.MkdirAll(n.podLogsDir(), 0o755); err != nil {
			return err
		}
	}
	maps.Copy(files, c.registryHosts(n))
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if filepath.Base(filepath.Dir(p)) == "bin" {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			return err
		}
	}
	return nil
}

// setupNodeNetwork creates node n's network namespace, joins it to the node bridge, routes
// its pod CIDR from the host, and turns on forwarding and bridge netfilter inside it.
func (c *Cluster) setupNodeNetwork(ctx context.Context, n nodeSpec) error {
	if _, err := os.Stat(n.netnsPath()); err != nil {
		if err := run(ctx, "ip", "netns", "add", n.netns); err != nil {
			return err
		}
	}
	if !linkExists(n.veth()) {
		if err := run(ctx, "ip", "link", "add", n.veth(), "type", "veth", "peer", "name", "eth0", "netns", n.netns); err != nil {
			return err
		}
	}
	_, bridgeNet, err := net.ParseCIDR(c.cfg.NodeCIDR)
	if err != nil {
		return err
	}
	ones, _ := bridgeNet.Mask.Size()
	in := func(args ...string) error {
		return run(ctx, "ip", append([]string{"netns", "exec", n.netns}, args...)...)
	}
	steps := []func() error{
		func() error { return run(ctx, "ip", "link", "set", n.veth(), "master", c.cfg.NodeBridge, "up") },
		func() error { return in("ip", "link", "set", "lo", "up") },
		func() error { return in("ip", "addr", "replace", fmt.Sprintf("%s/%d", n.ip, ones), "dev", "eth0") },
		func() error { return in("ip", "link", "set", "eth0", "up") },
		func() error { return in("ip", "route", "replace", "default", "via", c.cfg.NodeIP) },
		func() error { return run(ctx, "ip", "route", "replace", n.podCIDR, "via", n.ip) },
	}
	for _, kv := range sysctls {
		steps = append(steps, func() error { return in("sysctl", "-qw", kv[0]+"="+kv[1]) })
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// cgroupHierarchies are the mounted cgroup hierarchies (every v1 controller, and the unified
// one).
func cgroupHierarchies() []string {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*")
	var out []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		out = []string{"/sys/fs/cgroup"}
	}
	return out
}

// createCgroupRoot makes the node's cgroup root in every hierarchy, with the cpuset of its
// parent (a new v1 cpuset has none, and no task could join it).
func createCgroupRoot(root string) error {
	for _, h := range cgroupHierarchies() {
		d := filepath.Join(h, root)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", d, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if cur, _ := os.ReadFile(filepath.Join(d, f)); strings.TrimSpace(string(cur)) == "" {
					_ = os.WriteFile(filepath.Join(d, f), b, 0o644)
				}
			}
		}
	}
	return nil
}

// startNode creates node n (n.index > 1) and starts its daemons; Up waits for it to be Ready.
func (c *Cluster) startNode(ctx context.Context, n nodeSpec) error {
	for _, d := range []string{"containerd", "cni/net.d", "cni/bin", "kubelet"} {
		if err := os.MkdirAll(n.path(d), 0o755); err != nil {
			return err
		}
	}
	if err := c.writeNodePKI(n); err != nil {
		return err
	}
	if err := c.writeNodeConfigs(n); err != nil {
		return err
	}
	if err := c.setupNodeNetwork(ctx, n); err != nil {
		return err
	}
	if err := createCgroupRoot(n.cgroupRoot); err != nil {
		return err
	}
	return c.startNodeDaemons(ctx, n)
}

// startNodeDaemons starts containerd, waits until its socket answers (a socket file left by a
// containerd that was killed does not), then starts the kubelet and kube-proxy.
func (c *Cluster) startNodeDaemons(ctx context.Context, n nodeSpec) error {
	ds := n.daemons(c)
	if err := c.start(ds[0]); err != nil {
		return err
	}
	if err := c.waitFor(ctx, ds[0].name, "the containerd CRI socket of "+n.name, time.Minute, func(ctx context.Context) error {
		conn, err := (&net.Dialer{}).DialContext(ctx, "unix", n.socket())
		if err != nil {
			return err
		}
		return conn.Close()
	}); err != nil {
		return err
	}
	for _, d := range ds[1:] {
		if err := c.start(d); err != nil {
			return err
		}
	}
	return nil
}

// kubeletRestarts is how often a kubelet that dies before its node is Ready is started again.
const kubeletRestarts = 3

// waitNodesReady waits until every node is Ready, restarting a kubelet that dies on the way.
func (c *Cluster) waitNodesReady(ctx context.Context, cs kubernetes.Interface, nodes []nodeSpec) error {
	for _, n := range nodes {
		if err := c.waitRestarting(ctx, c.kubeletDaemon(n), "node "+n.name+" Ready", 3*time.Minute, kubeletRestarts, func(ctx context.Context) error {
			node, err := cs.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("node not Ready")
		}); err != nil {
			return err
		}
	}
	return nil
}

// stopNode stops node n's daemons and removes its pods, containers and network namespace (a
// further node's). The cgroups and mounts go with the cluster's.
func (c *Cluster) stopNode(ctx context.Context, n nodeSpec) []error {
	var errs []error
	c.stop(n.daemon("kubelet"), 20*time.Second)
	if _, ok := c.running(n.daemon("containerd")); ok {
		if err := c.removeAllPods(ctx, n.socket()); err != nil {
			c.logf("removing the pods of %s through CRI: %v", n.name, err)
		}
	}
	c.stop(n.daemon("kube-proxy"), 15*time.Second)
	c.stop(n.daemon("containerd"), 15*time.Second)
	if k := killShims(n.socket()); k > 0 {
		c.logf("killed %d leftover containerd shims of %s", k, n.name)
	}
	if n.netns != "" {
		// The veth first (its peer goes with it): deleting the namespace first would take the
		// pair away in the background, racing a delete of the host's end.
		if linkExists(n.veth()) {
			if err := run(ctx, "ip", "link", "del", n.veth()); err != nil {
				errs = append(errs, err)
			}
		}
		if _, err := os.Stat(n.netnsPath()); err == nil {
			if err := run(ctx, "ip", "netns", "del", n.netns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// findNode returns the started node named name.
func (c Config) findNode(name string) (nodeSpec, error) {
	var names []string
	for _, n := range c.startedNodes() {
		if n.name == name {
			return n, nil
		}
		names = append(names, n.name)
	}
	return nodeSpec{}, fmt.Errorf("the local cluster %s has no node %q (its nodes: %s)", c.Name, name, strings.Join(names, ", "))
}

// furtherNode returns the started node named name, which must not be node 1.
func (c Config) furtherNode(name string) (nodeSpec, error) {
	n, err := c.findNode(name)
	if err == nil && n.netns == "" {
		err = errHostNode
	}
	return n, err
}

var errHostNode = errors.New("node 1 is this machine itself, which runs the control plane: only a further node (--nodes > 1) can be lost or partitioned")

// PowerOff stops node name the way a power loss does: its link goes down first, so that no
// process's last words (a FIN, a reset) reach anyone, then its kubelet, kube-proxy, containerd,
// shims and every container are killed at once. PowerOn starts it again.
func (nd *Node) PowerOff(ctx context.Context, name string) error {
	n, err := nd.cfg.furtherNode(name)
	if err != nil {
		return err
	}
	if err := run(ctx, "ip", "link", "set", n.veth(), "down"); err != nil {
		return err
	}
	var pids []int
	for _, d := range []string{"kubelet", "kube-proxy", "containerd"} {
		if pid, ok := nd.c.running(n.daemon(d)); ok {
			pids = append(pids, pid)
		}
	}
	pids = append(pids, shimPIDs(n.socket())...)
	pids = append(pids, cgroupPIDs(n.cgroupRoot)...)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return nil
}

// PowerOn joins a node PowerOff stopped to the network again and starts its daemons; its
// kubelet then restarts its pods. A node whose last power-on was cut short (some daemons run)
// is powered off first; a node that runs them all is refused.
func (nd *Node) PowerOn(ctx context.Context, name string) error {
	n, err := nd.cfg.furtherNode(name)
	if err != nil {
		return err
	}
	var on []string
	for _, d := range []string{"kubelet", "kube-proxy", "containerd"} {
		if _, ok := nd.c.running(n.daemon(d)); ok {
			on = append(on, d)
		}
	}
	switch len(on) {
	case 3:
		return fmt.Errorf("node %s is not off: its kubelet, kube-proxy and containerd run", name)
	case 0:
	default:
		// A power-on cut short (its context ended while containerd started): off again
		// first, so that this one starts every daemon afresh.
		if err := nd.PowerOff(ctx, name); err != nil {
			return err
		}
	}
	if err := run(ctx, "ip", "link", "set", n.veth(), "up"); err != nil {
		return err
	}
	return nd.c.startNodeDaemons(ctx, n)
}

// Partition cuts node name off the network (the host's end of its link goes down: nothing
// reaches it or leaves it, and connections hang rather than fail), or joins it again.
func (nd *Node) Partition(ctx context.Context, name string, cut bool) error {
	n, err := nd.cfg.furtherNode(name)
	if err != nil {
		return err
	}
	state := "up"
	if cut {
		state = "down"
	}
	return run(ctx, "ip", "link", "set", n.veth(), state)
}

// NodeNames are the names of the cluster's nodes, node 1 first.
func (nd *Node) NodeNames() []string {
	var out []string
	for _, n := range nd.cfg.startedNodes() {
		out = append(out, n.name)
	}
	return out
}

// cgroupPIDs are the processes in cgroup root and below (in the pids hierarchy, or the
// unified one).
func cgroupPIDs(root string) []int {
	var pids []int
	for _, h := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		base := filepath.Join(h, root)
		if _, err := os.Stat(filepath.Join(base, "cgroup.procs")); err != nil {
			continue
		}
		_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
			return nil
		})
		return pids
	}
	return pids
}
