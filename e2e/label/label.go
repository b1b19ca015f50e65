// Package label names the labels of the conformance scenarios (--labels and --skip-labels
// select by them; quorate-report groups by some) and the labels of the operator's pods.
package label

import "github.com/quorate-dev/quorate/internal/names"

// Keys of the scenarios' labels.
const (
	// Suite groups scenarios (values: the Suite* constants).
	Suite = "suite"
	// Scenario is every scenario's name.
	Scenario = "scenario"
	// Needs names what the scenario needs of the cluster: NeedsNode, or a kernel feature a
	// fault needs (netem).
	Needs = "needs"
	// Fault is the chaos fault a scenario injects.
	Fault = "fault"
	// Base is the scenario a chaos or benchmark scenario repeats (steady, scale,
	// etcd-upgrade, pod-deletion).
	Base = "base"
	// Operator is the operator a peers or benchmark scenario drives.
	Operator = "operator"
	// Operation is the peers benchmark's operation.
	Operation = "operation"
	// Run numbers a benchmark's repetitions.
	Run = "run"
	// Seed is the seed of a campaign run (suite=campaign), which with its run index replays it.
	Seed = "seed"
	// DrawOperations and DrawFaults are the lists a campaign run drew its operation and fault
	// from (comma-separated): a replay must give the same.
	DrawOperations = "draw-operations"
	DrawFaults     = "draw-faults"
	// Failpoint is the etcd failpoint a failpoint scenario arms (suite=failpoints).
	Failpoint = "failpoint"
	// Moment is how long after a campaign run's operation began its fault was injected.
	Moment = "moment"
	// Rate is the operation rate of a bench-rate scenario.
	Rate = "rate"
	// InstallMode is how OLM installs the operator (AllNamespaces, OwnNamespace).
	InstallMode = "install-mode"
	// OLM is the OLM version of an OLM scenario (v1; v0 unlabelled).
	OLM = "olm"
	// Migration is what a scenario migrates (scope).
	Migration = "migration"
	// Security is the security feature a scenario exercises (auth, tls).
	Security = "security"
)

// Values of Suite.
const (
	SuiteCore          = "core"
	SuiteNegative      = "negative"
	SuiteSafety        = "safety"
	SuiteChaos         = "chaos"
	SuiteChaosNegative = "chaos-negative"
	SuiteOLM           = "olm"
	SuiteMigration     = "migration"
	SuiteBackup        = "backup"
	SuiteBench         = "bench"
	SuiteBenchRate     = "bench-rate"
	SuitePeers         = "peers"
	SuiteNodes         = "nodes"
	SuiteCampaign      = "campaign"
	SuiteFailpoints    = "failpoints"
)

// NeedsNode: the scenario acts on the node's containers and volumes (Needs).
const NeedsNode = "node"

// The operator's pods carry ControlPlane=ControlPlaneOperator and AppName=Quorate
// (config/manager): the first alone is every kubebuilder operator's, and OLM puts
// AllNamespaces operators in one shared namespace.
const (
	ControlPlane         = "control-plane"
	ControlPlaneOperator = "controller-manager"
	AppName              = "app.kubernetes.io/name"
	Quorate              = "quorate"
	// OperatorSelector selects the operator's pods, as a label selector string.
	OperatorSelector = ControlPlane + "=" + ControlPlaneOperator + "," + AppName + "=" + Quorate
)

// OperatorDeployment is the name of the operator's Deployment in every install.
const OperatorDeployment = "quorate-controller-manager"

// OperatorContainer is the name of the container that runs quorate-operator in the operator's
// pods.
const OperatorContainer = names.OperatorContainer

// OperatorLabels are the labels that select the operator's pods, as a map (a new one each call).
func OperatorLabels() map[string]string { return names.OperatorLabels() }
