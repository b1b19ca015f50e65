// Package framework is the machinery of Quorate's conformance scenarios: flags, the cluster to
// run on (the local cluster provider, kind, or an existing cluster), installing Quorate,
// creating an EtcdCluster with the workload beside it, driving a scenario while recording its
// events, collecting the history, running every checker and adding the result to the report.
package framework

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/quorate-dev/quorate/e2e/workload"
	"github.com/quorate-dev/quorate/internal/buildinfo"
	"github.com/quorate-dev/quorate/internal/envflag"
)

// Options are the suite's own flags (e2e-framework adds --kubeconfig, --namespace, --labels,
// --feature and the rest).
type Options struct {
	Provider    string
	K8sVersion  string
	ClusterName string
	// Nodes is how many nodes a local cluster the suite starts has; the node scenarios
	// (suite=nodes) need 4: node 1 and three for their members.
	Nodes int
	// ClusterProfile is the admission profile of a local cluster the suite starts
	// (openshift-like: OpenShift's pod restrictions, docs/local-cluster.md).
	ClusterProfile string
	ReportDir      string
	Duration       time.Duration
	Rate           float64
	Clients        int
	OpenLoop       bool
	// Budgets are the availability budgets of the scenario classes (--budget-*).
	Budgets     Budgets
	EtcdVersion string
	EtcdImage   string
	UpgradeFrom string
	// LearnerReadyVersion is an etcd release before 3.5.19, whose learners pass readiness: the
	// learner-budget scenario runs at it ("": it is skipped).
	LearnerReadyVersion string
	// UpgradePatchFrom is the etcd version the side-by-side benchmark's patch upgrade starts at.
	UpgradePatchFrom string
	Install          bool
	OperatorImage    string
	WorkloadImage    string
	InstallChaos     bool
	InstallS3        bool
	// S3OverTLS: the backup and archive scenarios reach the S3 store over TLS, trusting its
	// private CA through storage.caBundle (Run.S3Storage).
	S3OverTLS     bool
	InstallStores bool
	ChaosSocket   string
	OperatorNS    string
	InstallOLM    bool
	OLMCatalogs   string
	OLMVersions   string
	OLMv1         bool
	KeepFailed    bool
	// MissingPrerequisites is what a scenario whose prerequisite the cluster lacks gets:
	// SkipMissing or FailMissing.
	MissingPrerequisites string
	// The EtcdClusters' shape on a cluster that is not the suite's own (Shape), as given;
	// Shape holds them parsed.
	StorageClass, MemberNodeSelector, MemberTolerations, MemberResources string
	Shape                                                                Shape
	// FsyncProbe measures fsync on the scenarios' storage before the first scenario.
	FsyncProbe bool
	// NamespacePrefix starts the name of every namespace a scenario creates.
	NamespacePrefix string
	// ScenarioRole is the ClusterRole the suite binds itself to in each scenario namespace it
	// creates (the Job's namespace-scoped rights, config/conformance); empty: none.
	ScenarioRole string
	Scorecard    bool
	Quiet        bool
	// DoneFile, when set, gets the report directory's path once the report is written: the
	// done file of a Sonobuoy plugin.
	DoneFile string
	// StorageClasses: FROM,TO for the storage-migration scenario.
	StorageClasses string
	// ExpansionStorageClass is the StorageClass, one that expands volumes, the
	// volume-expansion scenario runs on ("": the scenario is left out).
	ExpansionStorageClass string
	// InstallCSI installs the CSI-only storage stack (hack/csi.sh) before the scenarios.
	InstallCSI bool
	// OwnershipTerm is the --ownership-term of the operators the suite installs.
	OwnershipTerm time.Duration
	// CertPropagation is the --certificate-propagation of the operators the suite installs.
	CertPropagation time.Duration
	// BenchRuns is how many times each benchmark scenario runs (0: none).
	BenchRuns int
	// CampaignRuns, CampaignFrom and CampaignSeed pick the randomized campaign's runs
	// (suite=campaign): runs CampaignFrom to CampaignFrom+CampaignRuns-1 of the seed.
	// CampaignOperations and CampaignFaults narrow what the runs draw from (all when empty).
	CampaignRuns, CampaignFrom         int
	CampaignSeed                       uint64
	CampaignOperations, CampaignFaults string
	// FailpointImage is an etcd image built with its gofail failpoints (hack/images.sh
	// etcd-failpoints), which the failpoint scenarios run (suite=failpoints); without it they
	// are skipped, saying so.
	FailpointImage string
	// FailpointUpgradeFromImage is the same build at --etcd-upgrade-from, which the
	// failpoint scenarios of an upgrade start from (suite=failpoints, operation=upgrade).
	FailpointUpgradeFromImage string
	// Peers are the other etcd operators the side-by-side benchmark (suite=peers) runs
	// against Quorate, comma-separated (etcd-io, cozystack); they are installed with
	// hack/peers.sh before the scenarios.
	Peers string
	// PeersEtcdRepository is the etcd image repository the peers are installed with (the
	// Quorate install's when empty).
	PeersEtcdRepository string
	// PeersBareVersions gives the peers etcd versions without a leading v ("3.6.16"), which
	// the etcd-io operator's version parser accepts (it rejects "v3.6.16", and then never
	// upgrades); hack/images.sh tags every etcd image both ways.
	PeersBareVersions bool
	// ConvergeTimeout is how long the side-by-side benchmark waits for an operator to converge
	// after each operation before it writes the operation down as not done.
	ConvergeTimeout time.Duration
	// BenchRates are the rates of the rate benchmark (suite=bench-rate).
	BenchRates string
	// WorkloadCPU is the workload pod's CPU request ("" or "0": none). Without one the pod is
	// BestEffort, which the kernel starves first (cgroup cpu.shares 2): its own stalls would
	// then read as write gaps of the cluster.
	WorkloadCPU string
	workloadCPU resource.Quantity
	// ClientProfiles are the workload's client profiles, comma-separated (e2e/workload.Profile):
	// each runs its own load beside the others, with its own keys and history, and every
	// checker judges each history against the scenario's budget.
	ClientProfiles string
	clientProfiles []workload.Profile
}

// checkClientProfiles parses --client-profiles.
func (o *Options) checkClientProfiles() error {
	ps, err := workload.ParseProfiles(o.ClientProfiles)
	if err != nil {
		return fmt.Errorf("--client-profiles=%q: %w", o.ClientProfiles, err)
	}
	o.clientProfiles = ps
	return nil
}

// Profiles are the workload's client profiles (--client-profiles), the default alone when
// none were parsed.
func (o *Options) Profiles() []workload.Profile {
	if len(o.clientProfiles) == 0 {
		return []workload.Profile{workload.DefaultProfile}
	}
	return o.clientProfiles
}

// maxNamespacePrefix leaves room in a namespace's 63 characters for the longest scenario name
// and "-NNNN".
const maxNamespacePrefix = 20

// checkShape parses the shaping flags into Shape, and checks --namespace-prefix.
func (o *Options) checkShape() error {
	sh, err := parseShape(o.StorageClass, o.MemberNodeSelector, o.MemberTolerations, o.MemberResources)
	if err != nil {
		return err
	}
	o.Shape = sh
	if len(o.NamespacePrefix) > maxNamespacePrefix {
		return fmt.Errorf("--namespace-prefix=%q is longer than %d characters: with a scenario's name and a number it would not fit a namespace's 63", o.NamespacePrefix, maxNamespacePrefix)
	}
	if errs := validation.IsDNS1123Label(o.NamespacePrefix + "x"); len(errs) > 0 {
		return fmt.Errorf("--namespace-prefix=%q cannot start a namespace's name: %s", o.NamespacePrefix, strings.Join(errs, "; "))
	}
	return nil
}

// checkMissingPrerequisites checks --missing-prerequisites.
func (o *Options) checkMissingPrerequisites() error {
	if o.MissingPrerequisites != SkipMissing && o.MissingPrerequisites != FailMissing {
		return fmt.Errorf("--missing-prerequisites=%q: give %s or %s", o.MissingPrerequisites, SkipMissing, FailMissing)
	}
	return nil
}

// checkWorkloadCPU parses --workload-cpu.
func (o *Options) checkWorkloadCPU() error {
	if o.WorkloadCPU == "" {
		return nil
	}
	q, err := resource.ParseQuantity(o.WorkloadCPU)
	if err != nil || q.Sign() < 0 {
		return fmt.Errorf("--workload-cpu=%q is not a CPU quantity such as 250m or 1 (or 0 for no request)", o.WorkloadCPU)
	}
	o.workloadCPU = q
	return nil
}

// RegisterFlags adds the suite's flags to the global flag set.
func RegisterFlags() *Options {
	o := &Options{}
	flag.StringVar(&o.Provider, "provider", "existing", "where to run: existing (the cluster of --kubeconfig), local (start a local cluster built from source), kind")
	flag.StringVar(&o.K8sVersion, "k8s-version", "v1.35.4", "Kubernetes version of a cluster the suite starts (local or kind)")
	flag.StringVar(&o.ClusterName, "cluster-name", "quorate-e2e", "name of a cluster the suite starts")
	flag.StringVar(&o.ClusterProfile, "cluster-profile", "", "admission profile of a local cluster the suite starts (--provider=local): empty, or openshift-like (Pod Security Admission restricted everywhere, and every namespace's pods given a user and fsGroup from its own UID range, any other rejected, as OpenShift's restricted-v2 SCC does); the foreign profile is refused here: start it with make cluster-up PROFILE=foreign and run the suite there as the Job (make conformance-foreign)")
	flag.IntVar(&o.Nodes, "nodes", 1, "nodes of a local cluster the suite starts (--provider=local): node 1 is this machine, each further one a network namespace with its own containerd, kubelet and kube-proxy; the node scenarios (suite=nodes) need 4: node 1 and three for their members")
	flag.StringVar(&o.ReportDir, "report-dir", "quorate-report", "directory for the report (JUnit, Markdown, HTML, histories)")
	flag.DurationVar(&o.Duration, "duration", 30*time.Second, "load time of steady phases (before, between and after a scenario's actions)")
	flag.Float64Var(&o.Rate, "rate", workload.DefaultRate, "operations per second the workload issues")
	flag.IntVar(&o.Clients, "clients", workload.DefaultClients, "concurrent workload clients (connections)")
	flag.StringVar(&o.WorkloadCPU, "workload-cpu", "250m", "CPU request of the workload pod (0: none); without one the pod is BestEffort and is starved first when the node is busy, and its own stalls read as write gaps")
	flag.StringVar(&o.ClientProfiles, "client-profiles", envflag.Or("QUORATE_CLIENT_PROFILES", string(workload.DefaultProfile)), "the workload's client profiles, comma-separated, each its own load (at --rate with --clients) and history, every checker judging each: member-aware (learns the members' URLs from the member list and balances over them), service-only (the client Service alone, as most applications are configured); more than the default needs a workload image of this version ($QUORATE_CLIENT_PROFILES sets the default)")
	flag.BoolVar(&o.OpenLoop, "open-loop", false, "the workload issues operations on schedule whether or not earlier ones returned, instead of one at a time per client")
	o.Budgets.register()
	flag.StringVar(&o.EtcdVersion, "etcd-version", "3.6.16", "etcd version of the clusters the scenarios create")
	flag.StringVar(&o.UpgradeFrom, "etcd-upgrade-from", "3.5.35", "etcd version the etcd-upgrade scenario starts at, before it upgrades to --etcd-version")
	flag.StringVar(&o.LearnerReadyVersion, "etcd-learner-ready-version", "", "an etcd release before 3.5.19, whose learners pass readiness (a learner's pod counts as healthy to the PodDisruptionBudget): the learner-budget scenario runs at it, and is skipped without it (make e2e-learner-budget builds 3.5.17's image and gives it)")
	flag.StringVar(&o.UpgradePatchFrom, "etcd-upgrade-patch-from", "3.6.15", "etcd version the side-by-side benchmark's patch upgrade (suite=peers) starts at, before it upgrades to --etcd-version")
	flag.StringVar(&o.EtcdImage, "etcd-image", "", "etcd image override for the clusters (default: the operator's image for the version)")
	flag.BoolVar(&o.Install, "install-operator", false, "install Quorate (from this repository's config/) before the scenarios; off when Quorate is already installed, e.g. from OperatorHub")
	flag.StringVar(&o.OperatorImage, "operator-image", os.Getenv("QUORATE_OPERATOR_IMAGE"), "operator image to install with --install-operator")
	flag.StringVar(&o.WorkloadImage, "workload-image", envflag.Or("QUORATE_WORKLOAD_IMAGE", "localhost:5000/quorate/workload:"+buildinfo.Version), "image of the conformance workload")
	flag.BoolVar(&o.InstallChaos, "install-chaos-mesh", false, "build and install Chaos Mesh (hack/chaos-mesh.sh) before the scenarios; the chaos scenarios need it")
	flag.BoolVar(&o.InstallS3, "install-s3", false, "build and install an S3 object store (versitygw, hack/s3.sh) before the scenarios; the backup scenarios need it")
	flag.BoolVar(&o.S3OverTLS, "s3-over-tls", false, "the backup and archive scenarios (backup-restore, restored-member-wiped, archive-follows-writes, restore-to-a-point, archive-retention, cluster-lost) reach the suite's S3 store over TLS, its private CA named in storage.caBundle, as a store in production is (the cases of backup-restore that must fail stay on plain HTTP); off: over plain HTTP")
	flag.BoolVar(&o.InstallStores, "install-stores", false, "build and install emulated cloud object stores (fake-gcs-server and Azurite, hack/stores.sh) before the scenarios; backup-restore-gcs and backup-restore-azure need them")
	flag.StringVar(&o.ChaosSocket, "containerd-socket", "", "containerd socket of the nodes, for --install-chaos-mesh (known for --provider=local)")
	flag.BoolVar(&o.InstallOLM, "install-olm", false, "install OLM (hack/olm.sh) and build the catalogs of the previous and the current release (hack/olm-catalog.sh) for the OLM scenarios")
	flag.StringVar(&o.OLMCatalogs, "olm-catalogs", "", "PREVIOUS,CURRENT: catalog images for the OLM scenarios (suite=olm), the first serving the previous release only, the second both; set by --install-olm")
	flag.StringVar(&o.OLMVersions, "olm-versions", "0.1.0,0.2.0", "PREVIOUS,CURRENT: the bundle versions in those catalogs (the OLM v1 scenario asks for them by version)")
	flag.BoolVar(&o.OLMv1, "olmv1", false, "also run the OLM v1 scenario (ClusterCatalog, ClusterExtension); with --install-olm, OLM v1 is installed too (hack/olmv1.sh)")
	flag.StringVar(&o.OperatorNS, "operator-namespace", "quorate-system", "namespace of the Quorate operator (the operator-kill fault targets its pods)")
	flag.BoolVar(&o.Scorecard, "scorecard", false, "print the result as operator-sdk scorecard v1alpha3 TestStatus JSON on stdout (for a scorecard custom test)")
	flag.BoolVar(&o.KeepFailed, "keep-failed", false, "keep the namespaces of failed scenarios for inspection")
	flag.StringVar(&o.StorageClass, "storage-class", os.Getenv("QUORATE_STORAGE_CLASS"), "($QUORATE_STORAGE_CLASS) StorageClass of the members' volumes of every EtcdCluster the suite creates (empty: the cluster's default; storage-migration names its own)")
	flag.StringVar(&o.MemberNodeSelector, "member-node-selector", os.Getenv("QUORATE_MEMBER_NODE_SELECTOR"), "($QUORATE_MEMBER_NODE_SELECTOR) KEY=VALUE,...: the node selector of every EtcdCluster's member pods (an etcd node pool)")
	flag.StringVar(&o.MemberTolerations, "member-tolerations", os.Getenv("QUORATE_MEMBER_TOLERATIONS"), "($QUORATE_MEMBER_TOLERATIONS) KEY[=VALUE]:EFFECT,...: tolerations of every EtcdCluster's member pods (a tainted etcd node pool); without =VALUE the key tolerates any value")
	flag.StringVar(&o.MemberResources, "member-resources", os.Getenv("QUORATE_MEMBER_RESOURCES"), "($QUORATE_MEMBER_RESOURCES) cpu=QUANTITY,memory=QUANTITY: the requests of every EtcdCluster's member pods (a namespace whose LimitRange or quota asks for them)")
	flag.BoolVar(&o.FsyncProbe, "fsync-probe", true, "before the first scenario, measure how long a small write and its fdatasync take on a fresh volume of the scenarios' StorageClass (a pod of the workload image), for the report's environment")
	flag.StringVar(&o.NamespacePrefix, "namespace-prefix", envflag.Or("QUORATE_NAMESPACE_PREFIX", "qc-"), "($QUORATE_NAMESPACE_PREFIX) start of every namespace the suite creates (the Job's admission policy, config/conformance/policy.yaml, allows qc- alone)")
	flag.StringVar(&o.MissingPrerequisites, "missing-prerequisites", envflag.Or("QUORATE_MISSING_PREREQUISITES", SkipMissing), "what a scenario whose prerequisite the cluster lacks (Chaos Mesh, the S3 store, node access, nodes, StorageClasses) gets: skip (reported skipped, naming it; never a pass) or fail (on a cluster meant to have them all)")
	flag.StringVar(&o.ScenarioRole, "scenario-role", "", "after creating each scenario namespace, bind the suite's own identity to this ClusterRole there and wait until the rights apply (the Job in config/conformance: quorate-conformance-scenario, its only rights inside a namespace); empty: bind nothing, the credentials must already allow it")
	flag.StringVar(&o.DoneFile, "done-file", "", "once the report is written, write its directory's path into this file (as a Sonobuoy plugin: /tmp/sonobuoy/results/done, with --report-dir under /tmp/sonobuoy/results; config/sonobuoy)")
	flag.BoolVar(&o.Quiet, "quiet", false, "no progress lines")
	flag.DurationVar(&o.OwnershipTerm, "ownership-term", 20*time.Second, "--ownership-term of the operators the suite installs (shorter than the operator's default, so that the scope-migration scenario's takeovers are quick)")
	flag.IntVar(&o.BenchRuns, "bench-runs", 0, "run each benchmark scenario (suite=bench: a rolling etcd upgrade, the leader's pod deleted) this many times; quorate-report bench summarises them")
	flag.IntVar(&o.CampaignRuns, "campaign-runs", 0, "run this many runs of the randomized campaign (suite=campaign: an operation and a fault at a random moment, drawn from --campaign-seed and the run's index); make campaign tabulates them")
	flag.IntVar(&o.CampaignFrom, "campaign-from", 0, "index of the campaign's first run (to resume a campaign, or replay one run with --campaign-runs=1)")
	flag.Uint64Var(&o.CampaignSeed, "campaign-seed", 0, "the campaign's seed, 1 to 999999999 (recorded in each run's labels: seed, run)")
	flag.StringVar(&o.CampaignOperations, "campaign-operations", "", "the operations campaign runs draw from, comma-separated (default all: scale, roll, upgrade, storage-move, backup, restore); replay with the same list")
	flag.StringVar(&o.CampaignFaults, "campaign-faults", "", "the faults campaign runs draw from, comma-separated (default all that keep a quorum: the chaos library's and node-loss); replay with the same list")
	flag.StringVar(&o.FailpointUpgradeFromImage, "failpoint-upgrade-from-image", "", "an etcd image built with its gofail failpoints at --etcd-upgrade-from (make e2e-failpoints builds it), which the failpoint scenarios of an upgrade start from, upgrading to --failpoint-etcd-image; without it they are skipped")
	flag.StringVar(&o.FailpointImage, "failpoint-etcd-image", "", "an etcd image built with its gofail failpoints at --etcd-version (make e2e-failpoints builds it), which the failpoint scenarios (suite=failpoints) run; without it they are skipped")
	flag.StringVar(&o.Peers, "peers", "", "run the side-by-side benchmark (suite=peers) against these other etcd operators too, comma-separated: etcd-io, cozystack (built from their source and installed with hack/peers.sh); quorate-report peers tabulates it")
	flag.BoolVar(&o.PeersBareVersions, "peers-bare-versions", false, "give the peers etcd versions and image tags without the leading v (3.6.16): the etcd-io operator's parser rejects v3.6.16 and then never upgrades (docs/measurements.md)")
	flag.StringVar(&o.PeersEtcdRepository, "peers-etcd-repository", "", "etcd image repository of the peers (default: Quorate's, $ETCD_IMAGE_REPOSITORY or localhost:5000/quorate/etcd); make bench-peers gives the local registry's name without a port, registry.quorate.local/quorate/etcd, because the etcd-io operator reads the version after the first ':' of the image")
	flag.DurationVar(&o.ConvergeTimeout, "converge-timeout", 5*time.Minute, "how long the side-by-side benchmark waits for an operator to converge after an operation before writing it down as not done")
	flag.StringVar(&o.BenchRates, "bench-rates", "250,500,1000,2000,4000", "operations per second of the rate benchmark's runs (suite=bench-rate: a steady 3-member cluster under the open-loop load at each rate)")
	flag.DurationVar(&o.CertPropagation, "certificate-propagation", 2*time.Minute, "--certificate-propagation of the operators the suite installs: how long each phase of a CA rotation lasts at least (the kubelet projects an updated Secret within its sync period, a minute by default; the local cluster's is 15 s, and make e2e passes 45s)")
	flag.StringVar(&o.ExpansionStorageClass, "expansion-storage-class", os.Getenv("QUORATE_EXPANSION_STORAGE_CLASS"), "($QUORATE_EXPANSION_STORAGE_CLASS) a StorageClass that expands volumes (allowVolumeExpansion): the volume-expansion scenario grows a cluster's volumes in place on it (the local cluster's is quorate-csi, with --install-csi); empty leaves it out")
	flag.BoolVar(&o.InstallCSI, "install-csi", false, "build and install the CSI-only storage stack (hack/csi.sh: kubernetes-csi sidecars and Quorate's hostpath driver, StorageClass quorate-csi) before the scenarios")
	flag.StringVar(&o.StorageClasses, "storage-classes", "local-path,local-path-b", "FROM,TO: the StorageClasses the storage-migration scenario moves a cluster between (the local cluster has both); empty leaves it out")
	return o
}
