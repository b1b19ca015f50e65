package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Versions of the Kubernetes matrix: the newest patch of each minor the module proxy serves.
var Versions = []string{"v1.33.13", "v1.34.4", "v1.35.4", "v1.36.3"}

// DefaultVersion is the version CI's smoke test runs.
const DefaultVersion = "v1.35.4"

// Images the cluster itself runs, built locally and served by the local registry.
const (
	PauseImage     = "localhost:5000/quorate/pause:3.10"
	CoreDNSImage   = "localhost:5000/quorate/coredns:v1.15.0"
	LocalPathImage = "localhost:5000/quorate/local-path-provisioner:v0.0.30"
	HelperImage    = "localhost:5000/quorate/busybox:local"
	// RegistryAlias is a second name of the local registry, without a port, which the node's
	// containerd maps to it: for programs that read an image's tag as what follows the first
	// ':' of its reference (the etcd-io etcd operator does, so "localhost:5000/…" breaks its
	// upgrades). It resolves nowhere else.
	RegistryAlias = "registry.quorate.local"
)

// Config describes one local cluster.
type Config struct {
	Name        string
	K8sVersion  string
	EtcdVersion string // of the control plane's own etcd
	RepoRoot    string // where hack/ scripts live
	CacheDir    string // built binaries and images ($QUORATE_CACHE)
	StateDir    string // everything the running cluster writes; removed by Down
	// StateInMemory mounts a tmpfs on StateDir (QUORATE_STATE_TMPFS=1): the nodes' etcd data,
	// volumes, containerd roots and images then live in memory, and no member's fsync waits on
	// the machine's disk. CI sets it: its VM's disk at times completes no write for seconds
	// (docs/local-cluster.md).
	StateInMemory bool
	Kubeconfig    string // where the admin kubeconfig is written for the user
	// Profile is the admission profile (profile.go): "" or openshift-like.
	Profile string

	// ContainerdVersion is the containerd every node runs, built from source
	// (hack/build-containerd.sh): from 1.7 on it mounts container roots volatile (containerd.go).
	ContainerdVersion string

	// Nodes is how many nodes the cluster has. Node 1 is this machine itself; every further
	// node is a network namespace on NodeBridge with its own containerd, kubelet and
	// kube-proxy (nodes.go).
	Nodes       int
	NodeName    string
	NodeBridge  string
	NodeIP      string
	NodeCIDR    string
	CNIBridge   string
	PodCIDR     string
	NodePodCIDR string
	ServiceCIDR string
	APIServerIP string // first address of ServiceCIDR
	DNSIP       string
	Registry    string // host:port of the local registry

	EtcdClientPort, EtcdPeerPort, APIServerPort int
}

// DefaultConfig returns the configuration of the cluster named name at version.
func DefaultConfig(name, version string) Config {
	if name == "" {
		name = "quorate"
	}
	if version == "" {
		version = DefaultVersion
	}
	home, _ := os.UserHomeDir()
	cache := os.Getenv("QUORATE_CACHE")
	if cache == "" {
		cache = filepath.Join(home, ".cache", "quorate")
	}
	root, _ := FindRepoRoot()
	return Config{
		Name: name, K8sVersion: version, EtcdVersion: "v3.6.16", ContainerdVersion: "v1.7.34",
		RepoRoot: root, CacheDir: cache,
		StateDir:      filepath.Join("/var/lib/quorate", name),
		StateInMemory: os.Getenv("QUORATE_STATE_TMPFS") == "1",
		Kubeconfig:    filepath.Join(home, ".kube", "quorate-"+name+".yaml"),
		Nodes:         1,
		NodeName:      name + "-node-1", NodeBridge: "quorate0", NodeIP: "10.87.0.1", NodeCIDR: "10.87.0.1/24",
		CNIBridge: "qcni0", PodCIDR: "10.244.0.0/16", NodePodCIDR: "10.244.0.0/24",
		ServiceCIDR: "10.96.0.0/16", APIServerIP: "10.96.0.1", DNSIP: "10.96.0.10",
		Registry:       "localhost:5000",
		EtcdClientPort: 12379, EtcdPeerPort: 12380, APIServerPort: 6443,
	}
}

// FindRepoRoot walks up from the working directory to the Quorate module root.
func FindRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/quorate-dev/quorate\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the Quorate repository (no go.mod of github.com/quorate-dev/quorate above the working directory)")
		}
		dir = parent
	}
}

func (c Config) path(parts ...string) string {
	return filepath.Join(append([]string{c.StateDir}, parts...)...)
}

func (c Config) k8sBin(name string) string {
	return filepath.Join(c.CacheDir, "k8s", c.K8sVersion, "bin", name)
}

func (c Config) containerdBin(name string) string {
	return filepath.Join(c.CacheDir, "containerd", c.ContainerdVersion, "bin", name)
}

func (c Config) etcdBin() string {
	return filepath.Join(c.CacheDir, "etcd", c.EtcdVersion, "bin", "etcd")
}

// Kubectl is the path of the kubectl of the cluster's version.
func (c Config) Kubectl() string { return c.k8sBin("kubectl") }

// ContainerdSocket is the CRI socket of the node (Chaos Mesh's daemon talks to it).
func (c Config) ContainerdSocket() string { return c.path("containerd", "containerd.sock") }

func (c Config) apiServerURL() string {
	return fmt.Sprintf("https://%s:%d", c.NodeIP, c.APIServerPort)
}
