package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/support"

	"github.com/quorate-dev/quorate/e2e/label"
)

// Provider is an e2e-framework cluster provider for the local cluster, so a suite creates it
// with envfuncs.CreateCluster(localcluster.NewProvider(), name) exactly as it would a kind
// cluster. LoadImage pushes an image to the local registry the node pulls from.
type Provider struct {
	name, version string
	nodes         int
	profile       string
	cluster       *Cluster
	restConfig    *rest.Config
}

var (
	_ support.E2EClusterProvider                = (*Provider)(nil)
	_ support.E2EClusterProviderWithImageLoader = (*Provider)(nil)
)

// NewProvider returns a provider for the default version.
func NewProvider() *Provider { return &Provider{version: DefaultVersion} }

func (p *Provider) SetDefaults() support.E2EClusterProvider {
	if p.version == "" {
		p.version = DefaultVersion
	}
	return p
}

func (p *Provider) WithName(name string) support.E2EClusterProvider { p.name = name; return p }

// WithVersion selects the Kubernetes version (v1.35.4, or 1.35 for the pinned patch).
func (p *Provider) WithVersion(version string) support.E2EClusterProvider {
	p.version = ResolveVersion(version)
	return p
}

// WithNodes sets how many nodes a cluster the provider starts has (1 when unset).
func (p *Provider) WithNodes(n int) *Provider { p.nodes = n; return p }

// WithProfile sets the admission profile of a cluster the provider starts (profile.go).
func (p *Provider) WithProfile(profile string) *Provider { p.profile = profile; return p }

// WithPath is accepted for interface compatibility; binaries come from the build cache.
func (p *Provider) WithPath(string) support.E2EClusterProvider { return p }

func (p *Provider) WithOpts(opts ...support.ClusterOpts) support.E2EClusterProvider {
	for _, o := range opts {
		o(p)
	}
	return p
}

// ResolveVersion maps "1.35" or "v1.35" to the pinned patch release; full versions pass.
func ResolveVersion(v string) string {
	if v == "" {
		return DefaultVersion
	}
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	for _, known := range Versions {
		if strings.HasPrefix(known, v+".") || known == v {
			return known
		}
	}
	return v
}

func (p *Provider) handle() *Cluster {
	if p.cluster == nil {
		cfg := DefaultConfig(p.name, p.version)
		if p.nodes > 0 {
			cfg.Nodes = p.nodes
		}
		cfg.Profile = p.profile
		p.cluster = New(cfg, os.Stderr)
	}
	return p.cluster
}

// Create starts the cluster and returns its kubeconfig path.
func (p *Provider) Create(ctx context.Context, _ ...string) (string, error) {
	c := p.handle()
	if c.cfg.Profile == ProfileForeign {
		return "", fmt.Errorf("the foreign profile is a cluster the suite must not have built for itself (its images pull only as %s/...): start it with `make cluster-up PROFILE=foreign` and run the suite there as customers do, as the Job (make conformance-foreign, docs/conformance.md)", ForeignRegistry)
	}
	if err := c.Up(ctx); err != nil {
		return "", err
	}
	return c.cfg.Kubeconfig, nil
}

// CreateWithConfig ignores the file: the local cluster has no configuration file yet.
func (p *Provider) CreateWithConfig(ctx context.Context, _ string) (string, error) {
	return p.Create(ctx)
}

func (p *Provider) GetKubeconfig() string { return p.handle().cfg.Kubeconfig }

func (p *Provider) GenerateKubeconfig(...string) (string, error) { return p.GetKubeconfig(), nil }

func (p *Provider) GetKubectlContext() string { return "quorate-" + p.handle().cfg.Name }

// ExportLogs copies the daemons' logs into dest, and the logs of every container named
// manager (the operators', Quorate's and a peer's, in whatever namespace they were installed)
// into dest/pods: they say what the operator decided and why.
func (p *Provider) ExportLogs(_ context.Context, dest string) error {
	src := p.handle().cfg.path("logs")
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dest, e.Name())); err != nil {
			return err
		}
	}
	for _, n := range p.handle().cfg.startedNodes() {
		if err := copyContainerLogs(n.podLogsDir(), label.OperatorContainer, filepath.Join(dest, "pods")); err != nil {
			return err
		}
	}
	return nil
}

// podLogDir is where node 1's kubelet writes its containers' logs (the kubelet's default).
const podLogDir = "/var/log/pods"

// podLogsDir is where node n's kubelet writes its containers' logs: node 1's the default, every
// further node's a directory of its own in its state, since a kubelet removes the log
// directories of the pods it does not know, which in a shared one are every other node's.
func (n nodeSpec) podLogsDir() string {
	if n.index == 1 {
		return podLogDir
	}
	return n.path("pod-logs")
}

// copyContainerLogs copies root/<namespace>_<pod>_<uid>/<container>/<restart>.log of the
// containers named container into dest, under the same relative paths.
func copyContainerLogs(root, container, dest string) error {
	files, err := filepath.Glob(filepath.Join(root, "*", container, "*.log"))
	if err != nil {
		return err
	}
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dest, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		if err := copyFile(f, filepath.Join(dest, rel)); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

func (p *Provider) Destroy(ctx context.Context) error { return p.handle().Down(ctx) }

// WaitForControlPlane waits for CoreDNS and the volume provisioner to be available.
func (p *Provider) WaitForControlPlane(ctx context.Context, client klient.Client) error {
	r, err := resources.New(client.RESTConfig())
	if err != nil {
		return err
	}
	for _, d := range [][2]string{{"kube-system", "k8s-app=kube-dns"}, {"local-path-storage", "app=local-path-provisioner"}} {
		var pods corev1.PodList
		if err := wait.For(conditions.New(r).ResourceListN(&pods, 1, resources.WithLabelSelector(d[1])), wait.WithContext(ctx), wait.WithTimeout(3*time.Minute)); err != nil {
			return fmt.Errorf("waiting for %s pods in %s: %w", d[1], d[0], err)
		}
	}
	return nil
}

func (p *Provider) KubernetesRestConfig() *rest.Config {
	if p.restConfig == nil {
		p.restConfig, _ = p.handle().RestConfig()
	}
	return p.restConfig
}

// LoadImage makes an image available to the node: an image already in the local registry
// needs nothing; an image in buildah's local storage is pushed to the registry.
func (p *Provider) LoadImage(ctx context.Context, image string, _ ...string) error {
	if strings.HasPrefix(image, p.handle().cfg.Registry+"/") && exec.CommandContext(ctx, "skopeo", "inspect", "--tls-verify=false", "docker://"+image).Run() == nil {
		return nil
	}
	return run(ctx, "buildah", "--storage-driver", "vfs", "push", "--tls-verify=false", image, "docker://"+p.registryName(image))
}

// LoadImageArchive pushes a docker or OCI archive to the local registry under its own name.
func (p *Provider) LoadImageArchive(ctx context.Context, archive string, args ...string) error {
	if len(args) == 0 {
		return fmt.Errorf("LoadImageArchive needs the image name to push %s as", archive)
	}
	transport := "docker-archive:"
	if strings.HasSuffix(archive, ".oci.tar") {
		transport = "oci-archive:"
	}
	return run(ctx, "skopeo", "copy", "--dest-tls-verify=false", transport+archive, "docker://"+p.registryName(args[0]))
}

func (p *Provider) registryName(image string) string {
	reg := p.handle().cfg.Registry
	if strings.HasPrefix(image, reg+"/") {
		return image
	}
	if i := strings.Index(image, "/"); i > 0 && strings.ContainsAny(image[:i], ".:") {
		image = image[i+1:]
	}
	return reg + "/" + image
}
