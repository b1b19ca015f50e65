package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

const egressChain = "QUORATE-EGRESS"

// sysctls the node needs: routing between the pod bridge and the host, and iptables seeing
// bridged traffic (so Service translation works between pods on the same bridge).
var sysctls = [][2]string{{"net.ipv4.ip_forward", "1"}, {"net.bridge.bridge-nf-call-iptables", "1"}}

func sysctlPath(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

func sysctl(key, value string) error {
	if err := os.WriteFile(sysctlPath(key), []byte(value), 0o644); err != nil {
		return fmt.Errorf("setting %s=%s: %w", key, value, err)
	}
	return nil
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

// setupNetwork creates the node bridge with the node IP, turns on forwarding and bridge
// netfilter, and rejects pod traffic that would leave the machine.
func (c *Cluster) setupNetwork(ctx context.Context) error {
	// Remember the host's values so Down can put them back.
	var orig []string
	for _, kv := range sysctls {
		if b, err := os.ReadFile(sysctlPath(kv[0])); err == nil {
			orig = append(orig, kv[0]+"="+strings.TrimSpace(string(b)))
		}
	}
	if err := os.WriteFile(c.cfg.path("sysctl.orig"), []byte(strings.Join(orig, "\n")), 0o644); err != nil {
		return err
	}
	for _, kv := range sysctls {
		if err := sysctl(kv[0], kv[1]); err != nil {
			return err
		}
	}
	if !linkExists(c.cfg.NodeBridge) {
		if err := run(ctx, "ip", "link", "add", c.cfg.NodeBridge, "type", "bridge"); err != nil {
			return err
		}
	}
	if err := run(ctx, "ip", "addr", "replace", c.cfg.NodeCIDR, "dev", c.cfg.NodeBridge); err != nil {
		return err
	}
	if err := run(ctx, "ip", "link", "set", c.cfg.NodeBridge, "up"); err != nil {
		return err
	}
	// Pods and further nodes may reach each other, Services and the nodes; nothing else. (Their
	// traffic to the host itself is not forwarded; Services are translated before this chain.)
	_ = run(ctx, "iptables", "-w", "-N", egressChain)
	if err := run(ctx, "iptables", "-w", "-F", egressChain); err != nil {
		return err
	}
	for _, rule := range [][]string{
		{"-d", c.cfg.PodCIDR, "-j", "RETURN"},
		{"-d", c.cfg.NodeCIDR, "-j", "RETURN"},
		{"-s", c.cfg.PodCIDR, "-j", "REJECT"},
		{"-s", c.cfg.NodeCIDR, "-j", "REJECT"},
	} {
		if err := run(ctx, "iptables", append([]string{"-w", "-A", egressChain}, rule...)...); err != nil {
			return err
		}
	}
	if exec.CommandContext(ctx, "iptables", "-w", "-C", "FORWARD", "-j", egressChain).Run() != nil {
		if err := run(ctx, "iptables", "-w", "-I", "FORWARD", "1", "-j", egressChain); err != nil {
			return err
		}
	}
	return nil
}

// clusterChain: chains the cluster's components create (kubelet, kube-proxy, CNI, ours).
func clusterChain(name string) bool {
	for _, p := range []string{"KUBE-", "CNI-", "QUORATE-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// removeChains deletes every rule that jumps to a cluster chain, then the chains themselves,
// in every table of iptables and ip6tables.
func removeChains(ctx context.Context) []error {
	var errs []error
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle", "raw"} {
			out, err := exec.CommandContext(ctx, bin, "-w", "-t", table, "-S").Output()
			if err != nil {
				continue
			}
			var chains []string
			for _, line := range strings.Split(string(out), "\n") {
				f := strings.Fields(line)
				switch {
				case len(f) >= 2 && f[0] == "-N" && clusterChain(f[1]):
					chains = append(chains, f[1])
				case len(f) >= 2 && f[0] == "-A" && !clusterChain(f[1]):
					if i := slices.Index(f, "-j"); i > 0 && i+1 < len(f) && clusterChain(f[i+1]) {
						args := append([]string{"-w", "-t", table, "-D"}, f[1:]...)
						if err := run(ctx, bin, unquote(args)...); err != nil {
							errs = append(errs, err)
						}
					}
				}
			}
			for _, ch := range chains {
				_ = run(ctx, bin, "-w", "-t", table, "-F", ch)
			}
			for _, ch := range chains {
				if err := run(ctx, bin, "-w", "-t", table, "-X", ch); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errs
}

// unquote strips the quotes iptables -S puts around comments.
func unquote(args []string) []string {
	out := make([]string, 0, len(args))
	joined := strings.Join(args, " ")
	var cur strings.Builder
	inQuote := false
	for _, r := range joined {
		switch {
		case r == '"':
			inQuote = !inQuote
		case r == ' ' && !inQuote:
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(out, cur.String())
}

// teardownNetwork removes what setupNetwork, the node's components and the pods' CNI created
// on the host, and restores the sysctls it changed.
func (c *Cluster) teardownNetwork(ctx context.Context) []error {
	errs := removeChains(ctx)
	if b, err := os.ReadFile(c.cfg.path("sysctl.orig")); err == nil {
		for _, kv := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				_ = sysctl(k, v)
			}
		}
	}
	for _, link := range []string{c.cfg.CNIBridge, c.cfg.NodeBridge} {
		if linkExists(link) {
			if err := run(ctx, "ip", "link", "del", link); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// cniConfig is the pod network: a bridge with host-local IPAM and port mapping. ipMasq is off:
// pod traffic is never translated towards the outside, where it may not go.
func (c *Cluster) cniConfig(n nodeSpec) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "quorate",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, c.cfg.CNIBridge, n.podCIDR, n.path("cni", "ipam"))
}

// removeOrphanPodNetns deletes the pod network namespaces (/run/netns/cni-*) that no process
// is in. containerd deletes a pod's namespace with the pod; one that was killed (a CI run cut
// off, a node lost for good) leaves them behind, each holding a veth. A namespace some process
// is in belongs to a running pod, maybe of another cluster on this machine, and is kept.
func removeOrphanPodNetns(ctx context.Context) (int, error) {
	entries, err := os.ReadDir(netnsDir)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, err
	}
	files := map[string]uint64{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "cni-") {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(netnsDir, e.Name()), &st); err == nil {
			files[e.Name()] = st.Ino
		}
	}
	if len(files) == 0 {
		return 0, nil
	}
	var errs []error
	n := 0
	for _, name := range orphanNetns(files, netnsInUse()) {
		if err := run(ctx, "ip", "netns", "del", name); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

const netnsDir = "/run/netns"

// orphanNetns names, sorted, the namespaces (name → inode) whose inode no process is in.
func orphanNetns(files map[string]uint64, inUse map[uint64]bool) []string {
	var out []string
	for name, ino := range files {
		if !inUse[ino] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// netnsInUse is the set of network namespace inodes some process is in.
func netnsInUse() map[uint64]bool {
	used := map[uint64]bool{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		link, err := os.Readlink(filepath.Join("/proc", p.Name(), "ns", "net"))
		if err != nil {
			continue
		}
		if ino, err := netnsInode(link); err == nil {
			used[ino] = true
		}
	}
	return used
}

// netnsInode reads the inode out of a /proc/PID/ns/net link ("net:[INODE]").
func netnsInode(link string) (uint64, error) {
	return strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "net:["), "]"), 10, 64)
}
