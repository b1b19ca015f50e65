package localcluster

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Node gives scenarios what only the node can do: stop a container the way a crash or a power
// loss does (the kubelet restarts it), reach the directory behind a volume, and, with several
// nodes, lose or cut off a whole node. The local cluster's nodes are this machine (node 1) and
// network namespaces on it: their volumes and containers are all here.
type Node struct {
	cfg Config
	c   *Cluster
}

// NewNode returns the nodes of the local cluster cfg describes.
func NewNode(cfg Config) *Node { return &Node{cfg: cfg, c: New(cfg, os.Stderr)} }

// Addresses are the node's addresses that pods see: its own, which they reach it at, and the
// pod bridge's gateway, which connections from the node to pods come from.
func (n *Node) Addresses() []net.IP {
	ips := []net.IP{net.ParseIP(n.cfg.NodeIP)}
	if _, cidr, err := net.ParseCIDR(n.cfg.NodePodCIDR); err == nil && cidr.IP.To4() != nil {
		gw := slices.Clone(cidr.IP.To4())
		gw[3]++
		ips = append(ips, gw)
	}
	return ips
}

// KillContainers stops, with no grace period, the running containers of the pods in namespace
// whose names are in pods (every pod of the namespace when pods is empty), and only the
// container named container when it is not empty. It returns how many it stopped.
func (n *Node) KillContainers(ctx context.Context, namespace string, pods []string, container string) (int, error) {
	total := 0
	for _, node := range n.cfg.startedNodes() {
		k, err := killContainers(ctx, node.socket(), namespace, pods, container)
		total += k
		if err != nil {
			return total, fmt.Errorf("node %s: %w", node.name, err)
		}
	}
	return total, nil
}

// StopSandbox stops the sandbox of pod namespace/name on whichever node runs it, as a node's
// runtime that loses it would (a crash of its pause process, a containerd restart that cleans
// it up): the kubelet makes a new sandbox and runs the pod's init containers again before its
// containers. It returns how many sandboxes it stopped.
func (n *Node) StopSandbox(ctx context.Context, namespace, name string) (int, error) {
	total := 0
	for _, node := range n.cfg.startedNodes() {
		k, err := stopSandbox(ctx, node.socket(), namespace, name)
		total += k
		if err != nil {
			return total, fmt.Errorf("node %s: %w", node.name, err)
		}
	}
	return total, nil
}

func stopSandbox(ctx context.Context, socket, namespace, name string) (int, error) {
	rt, closeFn, err := criClient(socket)
	if err != nil {
		return 0, err
	}
	defer closeFn()
	resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{"io.kubernetes.pod.namespace": namespace, "io.kubernetes.pod.name": name},
	}})
	if err != nil {
		return 0, fmt.Errorf("listing pod sandboxes: %w", err)
	}
	for _, sb := range resp.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			return 0, fmt.Errorf("stopping the sandbox of %s/%s: %w", namespace, name, err)
		}
	}
	return len(resp.Items), nil
}

func killContainers(ctx context.Context, socket, namespace string, pods []string, container string) (int, error) {
	rt, closeFn, err := criClient(socket)
	if err != nil {
		return 0, err
	}
	defer closeFn()
	filter := &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.pod.namespace": namespace},
	}
	if container != "" {
		filter.LabelSelector["io.kubernetes.container.name"] = container
	}
	resp, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return 0, fmt.Errorf("listing containers: %w", err)
	}
	want := map[string]bool{}
	for _, p := range pods {
		want[p] = true
	}
	// Stop them all at once, as a power loss does.
	errs := make(chan error, len(resp.Containers))
	stopped := 0
	for _, c := range resp.Containers {
		if len(want) > 0 && !want[c.Labels["io.kubernetes.pod.name"]] {
			continue
		}
		stopped++
		go func() {
			_, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.Id, Timeout: 0})
			errs <- err
		}()
	}
	for i := 0; i < stopped; i++ {
		if err := <-errs; err != nil {
			return stopped, fmt.Errorf("stopping a container: %w", err)
		}
	}
	return stopped, nil
}

// SettleDisk writes back everything left dirty on this machine's filesystems (sync(2)) and
// returns how long that took. The cluster, its nodes' containers and volumes, the suite and its
// reports share one root filesystem, and on ext4 an fsync waits for the data the journal commit
// carries: a cluster's image imports or the last scenario's saved history, written back 30 s
// later, held every etcd member's fsync for 1.2-1.6 s inside the next scenario's window. A
// scenario's load starts on a settled disk; what the scenario itself writes stays in its window.
func (n *Node) SettleDisk() time.Duration {
	start := time.Now()
	syscall.Sync()
	return time.Since(start)
}

// VolumeDir is the directory on the node that holds a PersistentVolume's data.
func (n *Node) VolumeDir(pv *corev1.PersistentVolume) (string, error) {
	switch {
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path, nil
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path, nil
	}
	return "", fmt.Errorf("PersistentVolume %s is neither a hostPath nor a local volume: its data is not on this node", pv.Name)
}

// CopyDir copies the tree at src to dst, which must not exist yet, keeping every file's and
// directory's mode and owner (a volume's files belong to the pod's user).
func (n *Node) CopyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(to, info.Mode().Perm()); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := copyVolumeFile(p, to, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s is neither a regular file nor a directory", p)
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no owner", p)
		}
		return os.Lchown(to, int(st.Uid), int(st.Gid))
	})
}

func copyVolumeFile(from, to string, mode fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// EmptyDir removes everything inside dir (not dir itself), as a wiped disk would.
func (n *Node) EmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
