package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// containerdConfig is containerd's configuration: its own root, state and socket under the
// cluster's state directory (so it never touches a system containerd), cgroupfs, the locally
// built pause image, and the local registry over plain HTTP.
//
// The overlayfs snapshotter mounts container roots volatile: unmounting a plain overlay (at every
// container exit) syncs its whole upper filesystem, the root filesystem the etcd members' data
// shares, so each exit made every member's fsync wait for all the data written on the machine
// (1.4-1.6 s in CI). The runc shim is the one built with this containerd (runtime_path).
//
// restrict_oom_score_adj: this VM lacks CAP_SYS_RESOURCE, so runc cannot set the negative
// oom_score_adj of the sandbox ("can't get final child's PID from pipe: EOF") unless it is
// clamped to the current value.
//
// A further node's containerd runs in the host's network namespace (see nodeSpec): its CNI
// plugins are wrappers that enter the node's namespace, and its streaming server listens at the
// node bridge's address.
func (c *Cluster) containerdConfig(n nodeSpec) string {
	cniBin, stream := "/usr/lib/cni", ""
	if n.netns != "" {
		cniBin = n.path("cni", "bin")
		stream = fmt.Sprintf("  stream_server_address = %q\n", c.cfg.NodeIP)
	}
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  restrict_oom_score_adj = true
  enable_unprivileged_ports = true
  enable_unprivileged_icmp = true
%[10]s  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = %[12]q
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[11]q
    conf_dir = %[6]q
%[13]s
[plugins."io.containerd.internal.v1.opt"]
  path = %[8]q

[plugins."io.containerd.snapshotter.v1.overlayfs"]
  mount_options = ["volatile"]
`, n.path("containerd", "root"), n.path("containerd", "state"), n.socket(),
		n.socket()+".ttrpc", c.cfg.Image(PauseImage), n.path("cni", "net.d"), c.cfg.Registry, n.path("containerd", "opt"), RegistryAlias, stream, cniBin,
		c.cfg.containerdBin("containerd-shim-runc-v2"), c.registryConfig(n))
}

// registryConfig is how node n's containerd reaches the local registry: by its own name and
// RegistryAlias, over plain HTTP; under the foreign profile by ForeignRegistry alone, from the
// hosts files of registryHosts (an image named by the registry's own name then fails to pull,
// as it would on a customer's cluster: CRI's mirrors would fall back to the name itself).
func (c *Cluster) registryConfig(n nodeSpec) string {
	if c.cfg.Profile == ProfileForeign {
		return fmt.Sprintf("  [plugins.\"io.containerd.grpc.v1.cri\".registry]\n    config_path = %q\n", n.path("containerd", "certs.d"))
	}
	return fmt.Sprintf(`  [plugins."io.containerd.grpc.v1.cri".registry]
    [plugins."io.containerd.grpc.v1.cri".registry.mirrors."%[1]s"]
      endpoint = ["http://%[1]s"]
    [plugins."io.containerd.grpc.v1.cri".registry.mirrors."%[2]s"]
      endpoint = ["http://%[1]s"]
`, c.cfg.Registry, RegistryAlias)
}

// registryHosts are the foreign profile's containerd hosts files (path -> content): its
// registry's name served by the local registry, and the local registry's own name by an
// address where nothing listens.
func (c *Cluster) registryHosts(n nodeSpec) map[string]string {
	if c.cfg.Profile != ProfileForeign {
		return nil
	}
	return map[string]string{
		n.path("containerd", "certs.d", ForeignRegistry, "hosts.toml"): fmt.Sprintf("server = %q\n", "http://"+c.cfg.Registry),
		n.path("containerd", "certs.d", c.cfg.Registry, "hosts.toml"):  "# The foreign profile: this name does not pull here.\nserver = \"http://127.0.0.1:1\"\n",
	}
}

func criClient(socket string) (runtimeapi.RuntimeServiceClient, func(), error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return runtimeapi.NewRuntimeServiceClient(conn), func() { _ = conn.Close() }, nil
}

// removeAllPods stops and removes every pod sandbox through CRI, which kills the containers
// and runs CNI DEL (freeing IPs, deleting veths and network namespaces).
func (c *Cluster) removeAllPods(ctx context.Context, socket string) error {
	if _, err := os.Stat(socket); err != nil {
		return nil
	}
	rt, closeFn, err := criClient(socket)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("listing pod sandboxes: %w", err)
	}
	for _, sb := range resp.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			c.logf("stopping sandbox %s: %v", sb.Metadata.GetName(), err)
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			c.logf("removing sandbox %s: %v", sb.Metadata.GetName(), err)
		}
	}
	c.logf("removed %d pod sandboxes", len(resp.Items))
	return nil
}

// killShims kills the containerd shims (and so their containers) that still belong to the
// containerd of socket after it stopped.
func killShims(socket string) int {
	pids := shimPIDs(socket)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

// shimPIDs are the containerd shims of the containerd of socket.
func shimPIDs(socket string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, "containerd-shim") && strings.Contains(cmd, " "+socket+" ") {
			var pid int
			if _, err := fmt.Sscanf(p, "/proc/%d/cmdline", &pid); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
