package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is one local cluster.
type Cluster struct {
	cfg Config
	out io.Writer
}

// New returns a handle on the cluster cfg describes; it starts nothing.
func New(cfg Config, out io.Writer) *Cluster {
	if out == nil {
		out = os.Stderr
	}
	return &Cluster{cfg: cfg, out: out}
}

// Config returns the cluster's configuration.
func (c *Cluster) Config() Config { return c.cfg }

func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.out, "[%s] localcluster: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// The control plane's daemons in start order; Down stops them in reverse, after every node's.
var controlPlane = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// Running reports whether the control plane's daemons and every node's are all alive.
func (c *Cluster) Running() bool {
	names := slices.Clone(controlPlane)
	for _, n := range c.cfg.startedNodes() {
		for _, d := range n.daemons(c) {
			names = append(names, d.name)
		}
	}
	for _, d := range names {
		if _, ok := c.running(d); !ok {
			return false
		}
	}
	return true
}

// RestConfig is the admin client configuration.
func (c *Cluster) RestConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", c.cfg.path("admin.kubeconfig"))
}

func (c *Cluster) script(ctx context.Context, name string, args ...string) (string, error) {
	return c.scriptIn(ctx, os.Environ(), name, args...)
}

// scriptIn runs hack/<name> with the environment env (and the cluster's QUORATE_CACHE), its
// stderr to the cluster's output, and returns its stdout.
func (c *Cluster) scriptIn(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.cfg.RepoRoot, "hack", name), args...)
	cmd.Stderr = c.out
	cmd.Env = append(slices.Clone(env), "QUORATE_CACHE="+c.cfg.CacheDir)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/%s %s: %w", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Prepare builds (or finds in the cache) everything the cluster runs: Debian packages,
// Kubernetes and etcd binaries, and the base images in the local registry.
func (c *Cluster) Prepare(ctx context.Context) error {
	if c.cfg.RepoRoot == "" {
		return errors.New("cannot find the Quorate repository: run from inside it")
	}
	steps := [][]string{
		{"install-deps.sh"},
		{"build-k8s.sh", c.cfg.K8sVersion},
		{"build-etcd.sh", c.cfg.EtcdVersion},
		{"build-containerd.sh", c.cfg.ContainerdVersion},
		{"registry.sh", "start"},
		{"images.sh", "base"},
	}
	for _, s := range steps {
		if _, err := c.script(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) preflight() error {
	if os.Geteuid() != 0 {
		return errNotRoot
	}
	if c.cfg.Nodes < 1 || c.cfg.Nodes > MaxNodes {
		return fmt.Errorf("a local cluster has 1 to %d nodes, not %d", MaxNodes, c.cfg.Nodes)
	}
	if c.cfg.Profile == ProfileForeign && c.cfg.Nodes < ForeignNodes {
		return fmt.Errorf("the foreign profile has node 1 and an etcd pool of at least two nodes: --nodes %d or more, not %d", ForeignNodes, c.cfg.Nodes)
	}
	if _, err := os.Stat(c.cfg.StateDir); err == nil {
		return fmt.Errorf("%s is left over from a previous cluster that is not running: run `make cluster-down CLUSTER=%s` (or `quorate-localcluster down --name %s`) to remove it", c.cfg.StateDir, c.cfg.Name, c.cfg.Name)
	}
	for _, l := range []string{c.cfg.NodeBridge, c.cfg.CNIBridge} {
		if linkExists(l) {
			return fmt.Errorf("network interface %s is left over from a previous cluster: run `make cluster-down CLUSTER=%s` to remove it", l, c.cfg.Name)
		}
	}
	ports := map[int]string{c.cfg.EtcdClientPort: "127.0.0.1", c.cfg.EtcdPeerPort: "127.0.0.1", c.cfg.APIServerPort: "0.0.0.0",
		10250: "0.0.0.0", 10248: "127.0.0.1", 10257: "127.0.0.1", 10259: "127.0.0.1", 10256: "127.0.0.1", 10249: "127.0.0.1"}
	keys := make([]int, 0, len(ports))
	for p := range ports {
		keys = append(keys, p)
	}
	sort.Ints(keys)
	for _, p := range keys {
		if err := portFree(ports[p], p); err != nil {
			return err
		}
	}
	return nil
}

// Up creates and starts the cluster, waiting until a pod can be scheduled, resolve names and
// get a volume. If the cluster is already running it returns at once.
func (c *Cluster) Up(ctx context.Context) error {
	start := time.Now()
	if c.Running() {
		c.logf("cluster %s is already running (kubeconfig %s)", c.cfg.Name, c.cfg.Kubeconfig)
		return nil
	}
	if err := c.preflight(); err != nil {
		return err
	}
	if err := c.Prepare(ctx); err != nil {
		return err
	}
	c.removeNetpolTable(ctx)
	c.logf("prepared binaries and images in %s", time.Since(start).Round(time.Second))
	if err := c.up(ctx); err != nil {
		return fmt.Errorf("%w\n(logs are in %s; `make cluster-down` removes what was started)", err, c.cfg.path("logs"))
	}
	c.logf("cluster %s (Kubernetes %s) is up in %s; export KUBECONFIG=%s", c.cfg.Name, c.cfg.K8sVersion, time.Since(start).Round(time.Second), c.cfg.Kubeconfig)
	return nil
}

func (c *Cluster) up(ctx context.Context) error {
	t0 := time.Now()
	if err := c.prepareState(ctx); err != nil {
		return err
	}
	cs, etcdReady, err := c.startControlPlane(ctx)
	if err != nil {
		return err
	}
	nodes, err := c.startNodes(ctx, cs)
	if err != nil {
		return err
	}
	c.logf("%d node(s) Ready %s after etcd (%s after start)", len(nodes), time.Since(etcdReady).Round(100*time.Millisecond), time.Since(t0).Round(100*time.Millisecond))
	if err := c.applyAddons(ctx); err != nil {
		return err
	}
	if err := c.applyProfile(ctx); err != nil {
		return err
	}
	return c.installKubeconfig()
}

// prepareState makes the cluster's state directory (in memory if so configured), its
// certificates and configuration files, and its network.
func (c *Cluster) prepareState(ctx context.Context) error {
	if c.cfg.StateInMemory {
		if err := mountTmpfs(c.cfg.StateDir); err != nil {
			return err
		}
		c.logf("the cluster's state is in memory: a tmpfs on %s (QUORATE_STATE_TMPFS=1)", c.cfg.StateDir)
	}
	for _, d := range []string{"", "run", "logs", "volumes", "containerd", "cni/net.d", "kubelet"} {
		if err := os.MkdirAll(c.cfg.path(d), 0o755); err != nil {
			return err
		}
	}
	if err := c.writePKI(); err != nil {
		return err
	}
	if err := c.writeConfigs(); err != nil {
		return err
	}
	if err := c.writeProfile(); err != nil {
		return err
	}
	return c.setupNetwork(ctx)
}

// startControlPlane starts etcd, then the kube-apiserver, then the controller manager and the
// scheduler, and returns a client of the API server and when etcd was healthy.
func (c *Cluster) startControlPlane(ctx context.Context) (*kubernetes.Clientset, time.Time, error) {
	if err := c.start(c.etcdDaemon()); err != nil {
		return nil, time.Time{}, err
	}
	if err := c.waitFor(ctx, "etcd", "etcd health", time.Minute, func(ctx context.Context) error {
		return httpOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/health", c.cfg.EtcdClientPort))
	}); err != nil {
		return nil, time.Time{}, err
	}
	etcdReady := time.Now()
	if err := c.start(c.apiServerDaemon()); err != nil {
		return nil, etcdReady, err
	}
	rc, err := c.RestConfig()
	if err != nil {
		return nil, etcdReady, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, etcdReady, err
	}
	if err := c.waitFor(ctx, "kube-apiserver", "kube-apiserver /readyz", 2*time.Minute, func(ctx context.Context) error {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}); err != nil {
		return nil, etcdReady, err
	}
	for _, d := range []daemon{c.controllerManagerDaemon(), c.schedulerDaemon()} {
		if err := c.start(d); err != nil {
			return nil, etcdReady, err
		}
	}
	return cs, etcdReady, nil
}

// startNodes starts the first node's daemons and the other nodes, and waits until every node
// is Ready.
func (c *Cluster) startNodes(ctx context.Context, cs *kubernetes.Clientset) ([]nodeSpec, error) {
	if err := c.startNodeDaemons(ctx, c.cfg.node(1)); err != nil {
		return nil, err
	}
	nodes := []nodeSpec{c.cfg.node(1)}
	for i := 2; i <= c.cfg.Nodes; i++ {
		n := c.cfg.node(i)
		if err := c.startNode(ctx, n); err != nil {
			return nil, fmt.Errorf("node %s: %w", n.name, err)
		}
		nodes = append(nodes, n)
	}
	if err := c.waitNodesReady(ctx, cs, nodes); err != nil {
		return nil, err
	}
	return nodes, nil
}

// installKubeconfig copies the admin kubeconfig to where the configuration says.
func (c *Cluster) installKubeconfig() error {
	admin, err := os.ReadFile(c.cfg.path("admin.kubeconfig"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.cfg.Kubeconfig), 0o755); err != nil {
		return err
	}
	return os.WriteFile(c.cfg.Kubeconfig, admin, 0o600)
}

func httpOK(ctx context.Context, url string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// Down stops every process of the cluster and removes its containers, network namespaces,
// mounts, iptables rules, interfaces, cgroups and state directory. It is safe to run twice and
// on a half-started cluster. The binary and image caches are kept.
func (c *Cluster) Down(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return errNotRoot
	}
	start := time.Now()
	c.stopExternal()
	var errs []error
	nodes := c.cfg.startedNodes()
	for i := len(nodes) - 1; i >= 0; i-- {
		errs = append(errs, c.stopNode(ctx, nodes[i])...)
	}
	for i := len(controlPlane) - 1; i >= 0; i-- {
		c.stop(controlPlane[i], 15*time.Second)
	}
	// Every containerd of the cluster is stopped: what pod namespaces are left with no process
	// in them, a killed one left behind (this cluster's, or an earlier one's).
	if n, err := removeOrphanPodNetns(ctx); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		c.logf("removed %d pod network namespaces no process was in", n)
	}
	errs = append(errs, c.teardownNetwork(ctx)...)
	c.removeNetpolTable(ctx)
	if n, err := unmountUnder(c.cfg.StateDir); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		c.logf("unmounted %d mounts", n)
	}
	var cgroupRoots []string
	for _, n := range nodes[1:] {
		cgroupRoots = append(cgroupRoots, n.cgroupRoot)
	}
	if n := removeKubepodsCgroups(cgroupRoots); n > 0 {
		c.logf("removed %d pod cgroups", n)
	}
	for _, d := range []string{podLogDir, "/var/log/containers"} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			_ = os.RemoveAll(filepath.Join(d, e.Name()))
		}
	}
	if err := os.RemoveAll(c.cfg.StateDir); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", c.cfg.StateDir, err))
	}
	_ = os.Remove(c.cfg.Kubeconfig)
	if _, err := c.script(ctx, "registry.sh", "stop"); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster %s is down but left some things behind: %w", c.cfg.Name, err)
	}
	c.logf("cluster %s is down; everything removed in %s", c.cfg.Name, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// mountTmpfs mounts a tmpfs on dir, creating dir. Its size limit is what the machine's memory
// allows (tmpfs takes memory only for what is written); Down unmounts it with the rest.
func mountTmpfs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=75%,mode=0755"); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s (QUORATE_STATE_TMPFS=1): %w", dir, err)
	}
	return nil
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) (int, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 {
			p := strings.ReplaceAll(fields[4], `\040`, " ")
			if p == dir || strings.HasPrefix(p, dir+"/") {
				points = append(points, p)
			}
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return len(points), errors.Join(errs...)
}

// removeKubepodsCgroups removes the cgroups node 1's kubelet created (cgroupfs driver) and the
// cgroup roots of the further nodes, leaves first.
func removeKubepodsCgroups(nodeRoots []string) int {
	n := 0
	var roots []string
	for _, r := range append([]string{"/kubepods"}, nodeRoots...) {
		for _, h := range cgroupHierarchies() {
			if fi, err := os.Stat(filepath.Join(h, r)); err == nil && fi.IsDir() {
				roots = append(roots, filepath.Join(h, r))
			}
		}
	}
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if syscall.Rmdir(d) == nil {
				n++
			}
		}
	}
	return n
}

// netpolTable is the nftables table the NetworkPolicy agent (hack/netpol.sh, the foreign
// profile) keeps in its node's network namespace. Node 1's is the host's, where a killed agent
// leaves it, dropping new connections to the addresses in its sets.
const netpolTable = "inet kube-network-policies"

// removeNetpolTable deletes netpolTable from the host's network namespace, if there is one:
// a killed agent of this or an earlier cluster left it (Down, and Up before it starts).
func (c *Cluster) removeNetpolTable(ctx context.Context) {
	out, err := exec.CommandContext(ctx, "nft", append([]string{"delete", "table"}, strings.Fields(netpolTable)...)...).CombinedOutput()
	switch {
	case errors.Is(err, exec.ErrNotFound):
		c.logf("no nft command (hack/install-deps.sh installs it): cannot look for the NetworkPolicy agent's table %s, which a killed agent leaves in the host's network namespace", netpolTable)
	case err == nil:
		c.logf("removed the NetworkPolicy agent's nftables table %s from the host (it would drop new connections to the addresses it held)", netpolTable)
	case !strings.Contains(string(out), "No such file or directory"):
		c.logf("removing the NetworkPolicy agent's table %s: %v: %s", netpolTable, err, strings.TrimSpace(string(out)))
	}
}
