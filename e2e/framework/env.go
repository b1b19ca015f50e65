package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/support/kind"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/chaos"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/e2e/localcluster"
	"github.com/quorate-dev/quorate/e2e/report"
	"github.com/quorate-dev/quorate/internal/buildinfo"
)

// Scheme knows the core types, EtcdCluster, Chaos Mesh's types and OLM's.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(v1alpha1.AddToScheme(Scheme))
	utilruntime.Must(chaos.AddToScheme(Scheme))
	utilruntime.Must(operatorsv1alpha1.AddToScheme(Scheme))
	utilruntime.Must(operatorsv1.AddToScheme(Scheme))
	utilruntime.Must(operatorsv2.AddToScheme(Scheme))
}

// Suite is the state shared by every scenario of a run.
type Suite struct {
	Opts      *Options
	Client    client.Client
	Clientset *kubernetes.Clientset
	Report    *report.Report
	// Labels are the --labels the run selects scenarios by.
	Labels map[string][]string
	// Node reaches the node's containers and volumes (the local provider's node is this
	// machine); nil with other providers.
	Node *localcluster.Node
	mu   sync.Mutex
	// namespaces are the namespaces the run created and has not deleted (interrupt.go).
	namespaces []string
	nsMu       sync.Mutex
	kubectl    string
	// kubeconfig of the cluster the suite runs on.
	kubeconfig string
	// scorecardOut is the process's stdout: with --scorecard, everything else goes to stderr so
	// that stdout holds only the TestStatus JSON.
	scorecardOut *os.File
}

// Setup prepares the environment the options describe and returns the suite; call it from
// TestMain after RegisterFlags.
func Setup(opts *Options) (env.Environment, *Suite, error) {
	cfg, err := envconf.NewFromFlags()
	if err != nil {
		return nil, nil, err
	}
	if err := opts.checkPeers(); err != nil {
		return nil, nil, err
	}
	if err := opts.checkWorkloadCPU(); err != nil {
		return nil, nil, err
	}
	if err := opts.checkClientProfiles(); err != nil {
		return nil, nil, err
	}
	if err := opts.checkMissingPrerequisites(); err != nil {
		return nil, nil, err
	}
	if err := opts.checkShape(); err != nil {
		return nil, nil, err
	}
	testenv := env.NewWithConfig(cfg)
	s := &Suite{Opts: opts, kubectl: "kubectl", scorecardOut: os.Stdout, Report: &report.Report{Title: "Quorate conformance", Quorate: buildinfo.Version, Generated: time.Now()}, Labels: cfg.Labels()}
	if err := s.provide(testenv, cfg); err != nil {
		return nil, nil, err
	}
	testenv.Setup(s.connect)
	testenv.Finish(s.writeReport)
	return testenv, s, nil
}

// provide has the environment create and destroy the cluster as --provider says (nothing for
// an existing cluster).
func (s *Suite) provide(testenv env.Environment, cfg *envconf.Config) error {
	opts := s.Opts
	switch opts.Provider {
	case "local":
		if err := localcluster.CheckProfile(opts.ClusterProfile); err != nil {
			return fmt.Errorf("--cluster-profile: %w", err)
		}
		p := localcluster.NewProvider().WithNodes(opts.Nodes).WithProfile(opts.ClusterProfile)
		p.WithVersion(opts.K8sVersion)
		lc := localcluster.DefaultConfig(opts.ClusterName, localcluster.ResolveVersion(opts.K8sVersion))
		s.kubectl = lc.Kubectl()
		s.Node = localcluster.NewNode(lc)
		if opts.ChaosSocket == "" {
			opts.ChaosSocket = lc.ContainerdSocket()
		}
		testenv.Setup(envfuncs.CreateCluster(p, opts.ClusterName))
		testenv.Finish(envfuncs.ExportClusterLogs(opts.ClusterName, filepath.Join(opts.ReportDir, "cluster-logs")), envfuncs.DestroyCluster(opts.ClusterName))
	case "kind":
		testenv.Setup(envfuncs.CreateClusterWithOpts(kind.NewProvider().WithVersion(opts.K8sVersion), opts.ClusterName))
		testenv.Finish(envfuncs.DestroyCluster(opts.ClusterName))
	case "existing":
		if cfg.KubeconfigFile() == "" {
			cfg.WithKubeconfigFile(os.Getenv("KUBECONFIG"))
		}
	default:
		return fmt.Errorf("--provider must be existing, local or kind, not %q", opts.Provider)
	}
	return nil
}

// Kubeconfig is the kubeconfig file of the cluster the suite runs on (empty: the client's
// defaults), for tools the suite runs as a user would (the kubectl plugin).
func (s *Suite) Kubeconfig() string { return s.kubeconfig }

// connect makes the suite's clients for the cluster and installs what the options ask for.
func (s *Suite) connect(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	opts := s.Opts
	rc := cfg.Client().RESTConfig()
	s.kubeconfig = cfg.KubeconfigFile()
	var err error
	if s.Client, err = client.New(rc, client.Options{Scheme: Scheme}); err != nil {
		return ctx, err
	}
	if s.Clientset, err = kubernetes.NewForConfig(rc); err != nil {
		return ctx, err
	}
	s.cleanUpOnSignal()
	if v, err := s.Clientset.Discovery().ServerVersion(); err == nil {
		s.Report.K8sVersion = v.GitVersion
	}
	if opts.ScenarioRole != "" {
		if err := CheckHeldToScenarios(ctx, s.Client, 30*time.Second); err != nil {
			return ctx, err
		}
	}
	if opts.Install {
		if err := s.install(ctx, cfg.KubeconfigFile()); err != nil {
			return ctx, err
		}
	}
	for _, name := range opts.PeerNames() {
		if err := s.installPeer(ctx, cfg.KubeconfigFile(), name); err != nil {
			return ctx, err
		}
	}
	if opts.InstallChaos {
		if err := s.installChaosMesh(ctx, cfg.KubeconfigFile()); err != nil {
			return ctx, err
		}
	}
	if opts.InstallS3 {
		if err := s.runHack(ctx, cfg.KubeconfigFile(), "s3.sh"); err != nil {
			return ctx, fmt.Errorf("installing the S3 object store: %w", err)
		}
	}
	if opts.InstallCSI {
		if err := s.runHack(ctx, cfg.KubeconfigFile(), "csi.sh"); err != nil {
			return ctx, fmt.Errorf("installing the CSI storage stack: %w", err)
		}
	}
	if opts.InstallStores {
		if err := s.runHack(ctx, cfg.KubeconfigFile(), "stores.sh"); err != nil {
			return ctx, fmt.Errorf("installing the emulated cloud stores: %w", err)
		}
	}
	if opts.InstallOLM {
		if err := s.installOLM(ctx, cfg.KubeconfigFile()); err != nil {
			return ctx, err
		}
	}
	return ctx, s.recordEnvironment(ctx)
}

// writeReport writes the report of every scenario, lists the unexpected results, and the
// scorecard's status when asked.
func (s *Suite) writeReport(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	opts := s.Opts
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.Report.Write(opts.ReportDir); err != nil {
		return ctx, err
	}
	fmt.Fprintf(os.Stderr, "report written to %s (index.html, summary.md, junit.xml): %s\n", opts.ReportDir, s.Report.Counts())
	if opts.DoneFile != "" {
		// Sonobuoy's worker sends what the done file names, a directory as a tarball.
		if err := os.WriteFile(opts.DoneFile, []byte(opts.ReportDir), 0o644); err != nil {
			return ctx, fmt.Errorf("writing the done file: %w", err)
		}
	}
	if skips := s.Report.Skips(); len(skips) > 0 {
		fmt.Fprintf(os.Stderr, "%d scenario(s) skipped for a missing prerequisite:\n", len(skips))
		for _, k := range skips {
			fmt.Fprintf(os.Stderr, "  %s\n", k)
		}
	}
	if failures := s.Report.Failures(); len(failures) > 0 {
		fmt.Fprintf(os.Stderr, "%d scenario result(s) not as expected (details in summary.md):\n", len(failures))
		for _, f := range failures {
			fmt.Fprintf(os.Stderr, "  %s\n", f)
		}
	}
	if opts.Scorecard {
		return ctx, s.Report.WriteScorecard(s.scorecardOut)
	}
	return ctx, nil
}

// installPeer builds and installs another etcd operator with hack/peers.sh, with this
// machine's etcd images.
func (s *Suite) installPeer(ctx context.Context, kubeconfig, name string) error {
	root, err := localcluster.FindRepoRoot()
	if err != nil {
		return fmt.Errorf("--peers needs the Quorate repository (hack/peers.sh): %w", err)
	}
	kustomize, err := kustomizeBinary(root)
	if err != nil {
		return err
	}
	repo := s.Opts.PeersEtcdRepository
	if repo == "" {
		repo = etcdRepository()
	}
	if err := s.runHack(ctx, kubeconfig, "peers.sh", "install", name, s.kubectl, kustomize, repo); err != nil {
		return fmt.Errorf("installing the %s etcd operator: %w", name, err)
	}
	return nil
}

func etcdRepository() string {
	if r := os.Getenv("ETCD_IMAGE_REPOSITORY"); r != "" {
		return r
	}
	return "localhost:5000/quorate/etcd"
}

// install deploys Quorate from this repository with hack/deploy.sh.
func (s *Suite) install(ctx context.Context, kubeconfig string) error {
	root, err := localcluster.FindRepoRoot()
	if err != nil {
		return fmt.Errorf("--install-operator needs the Quorate repository: %w", err)
	}
	if s.Opts.OperatorImage == "" {
		b, err := os.ReadFile(filepath.Join(root, "bin", "operator-image"))
		if err != nil {
			return fmt.Errorf("--install-operator needs --operator-image (or run make image first)")
		}
		s.Opts.OperatorImage = strings.TrimSpace(string(b))
	}
	kustomize, err := kustomizeBinary(root)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "deploy.sh"), kustomize, s.kubectl, s.Opts.OperatorImage, etcdRepository())
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "OWNERSHIP_TERM="+s.Opts.OwnershipTerm.String(), "CERTIFICATE_PROPAGATION="+s.Opts.CertPropagation.String())
	if s.Node != nil && s.Opts.Nodes > 1 {
		// The node scenarios drain, power off and cut off the etcd pool's nodes: the operator
		// stays on node 1 with the control plane, as the workload does.
		cmd.Env = append(cmd.Env, "NODE_SELECTOR="+localcluster.PoolLabel+"="+localcluster.PoolSystem)
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("installing Quorate: %w", err)
	}
	return nil
}

// InstallNamespaced deploys a second Quorate install into namespace ns, managing that
// namespace alone (config/namespaced), from this repository, with the suite's operator image.
// Deleting it is registered with the run's cleanups.
func (r *Run) InstallNamespaced(ctx context.Context, ns string) error {
	s := r.Suite
	root, err := localcluster.FindRepoRoot()
	if err != nil {
		return fmt.Errorf("a namespaced install needs the Quorate repository: %w", err)
	}
	if s.Opts.OperatorImage == "" {
		return fmt.Errorf("a namespaced install needs --operator-image")
	}
	kustomize, err := kustomizeBinary(root)
	if err != nil {
		return err
	}
	etcdRepo := os.Getenv("ETCD_IMAGE_REPOSITORY")
	if etcdRepo == "" {
		etcdRepo = "localhost:5000/quorate/etcd"
	}
	r.Event("action", "install", "Quorate installed for namespace "+ns+" alone")
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "deploy.sh"), kustomize, s.kubectl, s.Opts.OperatorImage, etcdRepo, ns)
	cmd.Env = append(os.Environ(), "OWNERSHIP_TERM="+s.Opts.OwnershipTerm.String(), "CERTIFICATE_PROPAGATION="+s.Opts.CertPropagation.String())
	if s.kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+s.kubeconfig)
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("installing Quorate for namespace %s: %w", ns, err)
	}
	r.OnCleanup(func(ctx context.Context) error { return r.RemoveNamespacedInstall(ctx, ns) })
	return nil
}

// RemoveNamespacedInstall deletes the operator Deployment of a namespaced install and waits
// until its pods are gone (its ServiceAccount and bindings go with the namespace).
func (r *Run) RemoveNamespacedInstall(ctx context.Context, ns string) error {
	r.Event("action", "uninstall", "Quorate install for namespace "+ns+" removed")
	return r.DeleteAndWait(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: label.OperatorDeployment}})
}

// kustomizeBinary is $KUSTOMIZE or the newest kustomize the Makefile built into bin/.
func kustomizeBinary(root string) (string, error) {
	if k := os.Getenv("KUSTOMIZE"); k != "" {
		return k, nil
	}
	matches, _ := filepath.Glob(filepath.Join(root, "bin", "kustomize-*"))
	if len(matches) == 0 {
		return "", fmt.Errorf("no kustomize in bin/: run make deploy once, or set KUSTOMIZE")
	}
	return matches[len(matches)-1], nil
}

// installChaosMesh builds and installs Chaos Mesh with hack/chaos-mesh.sh.
func (s *Suite) installChaosMesh(ctx context.Context, kubeconfig string) error {
	root, err := localcluster.FindRepoRoot()
	if err != nil {
		return fmt.Errorf("--install-chaos-mesh needs the Quorate repository: %w", err)
	}
	if s.Opts.ChaosSocket == "" {
		return fmt.Errorf("--install-chaos-mesh needs --containerd-socket: the path of the nodes' containerd socket")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "chaos-mesh.sh"), s.Opts.ChaosSocket)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "KUBECTL="+s.kubectl)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("installing Chaos Mesh: %w", err)
	}
	return nil
}

// runHack runs a script of hack/ against the cluster.
func (s *Suite) runHack(ctx context.Context, kubeconfig, script string, args ...string) error {
	root, err := localcluster.FindRepoRoot()
	if err != nil {
		return fmt.Errorf("hack/%s needs the Quorate repository: %w", script, err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", script), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "KUBECTL="+s.kubectl)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// installOLM installs OLM with hack/olm.sh and builds the catalogs of the previous and the
// current release with hack/olm-catalog.sh, for the OLM scenarios.
func (s *Suite) installOLM(ctx context.Context, kubeconfig string) error {
	root, err := localcluster.FindRepoRoot()
	if err != nil {
		return fmt.Errorf("--install-olm needs the Quorate repository: %w", err)
	}
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig, "KUBECTL="+s.kubectl)
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "olm.sh"))
	cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("installing OLM: %w", err)
	}
	if s.Opts.OLMv1 {
		kustomize, err := kustomizeBinary(root)
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "olmv1.sh"))
		cmd.Env, cmd.Stdout, cmd.Stderr = append(env, "KUSTOMIZE="+kustomize), os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("installing OLM v1: %w", err)
		}
	}
	etcdRepo := os.Getenv("ETCD_IMAGE_REPOSITORY")
	if etcdRepo == "" {
		etcdRepo = "localhost:5000/quorate/etcd"
	}
	cmd = exec.CommandContext(ctx, filepath.Join(root, "hack", "olm-catalog.sh"), etcdRepo)
	cmd.Env, cmd.Stderr = env, os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("building the OLM catalogs: %w", err)
	}
	images := strings.Fields(string(out))
	if len(images) != 2 {
		return fmt.Errorf("hack/olm-catalog.sh printed %q, not two catalog images", out)
	}
	s.Opts.OLMCatalogs = strings.Join(images, ",")
	return nil
}

func (s *Suite) add(r report.Scenario) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Report.Scenarios = append(s.Report.Scenarios, r)
}
