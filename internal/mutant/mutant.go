// Package mutant holds the operator's seeded bugs (issue 45 §1): each one a real bug class,
// placed at the decision point where the bug would be, behind On(name). In every shipped build
// On is the constant false (off.go, built without the mutants tag), so the compiler removes
// the mutants; a build with -tags mutants reads the one active mutant from $QUORATE_MUTANT at
// start (on.go). `make mutants` builds such an image, runs the scenarios each mutant should
// fail, and records which killed it (docs/conformance.md, "Mutants").
package mutant

import "sort"

// EnvVar names the active mutant in a build with the mutants tag.
const EnvVar = "QUORATE_MUTANT"

// Mutant is one seeded bug.
type Mutant struct {
	Name string
	// Class is the bug class it stands for.
	Class string
	// Where is the decision point it changes (package and function).
	Where string
	// Description says what the bug does, and why it belongs to its class.
	Description string
	// Scenarios are the conformance scenarios (their names, the scenario= label) expected to
	// kill it.
	Scenarios []string
	// Equivalent, when not empty, argues why the mutant may change nothing a scenario can
	// observe: a survivor with an argument is an equivalent mutant, one without a missing
	// scenario.
	Equivalent string
}

// Registry lists every mutant, by name.
var Registry = []Mutant{
	{Name: "replace-remove-first", Class: "membership: remove before add",
		Where:       "internal/planner changeMembership",
		Description: "a voter that loses its volume (or diverged, or must move to another volume) is removed before its replacement is added: redundancy drops during the repair, and a second failure loses quorum",
		Scenarios:   []string{"pvc-loss", "storage-migration"}},
	{Name: "skip-leader-move", Class: "planned stop of the leader",
		Where:       "internal/planner rollPods, removeVoter",
		Description: "the leader's pod is replaced (or the leader removed) in turn like a follower's, without moving leadership away first: every planned stop of the leader costs an election",
		Scenarios:   []string{"scale-down-leader", "etcd-upgrade"},
		Equivalent:  "for a roll only: etcd's graceful stop (SIGTERM) transfers leadership itself before the member exits, so a roll or upgrade without the operator's move shows no election (etcd-upgrade's longest write gap was 172 ms with it); removing the leader has no such guard, which scale-down-leader shows"},
	{Name: "bootstrap-blank-volume", Class: "data loss bootstraps a new cluster",
		Where:       "internal/launcher Volume.Check",
		Description: "a member that has run and finds its volume empty is not refused: a bootstrap pod starts etcd with --initial-cluster-state=new on the blank volume, a second cluster beside the first (split brain)",
		Scenarios:   []string{"data-wiped", "data-wiped-single"}},
	{Name: "add-two-learners", Class: "membership: two changes at once",
		Where:       "internal/planner changeMembership",
		Description: "while a learner waits for promotion another learner is added when more voters are needed: two membership changes in flight (etcd refuses a second learner by default, so the scale-up stalls)",
		Scenarios:   []string{"scale"}},
	{Name: "promote-before-caught-up", Class: "membership: promote a lagging learner",
		Where:       "internal/planner gateHealth",
		Description: "an unhealthy learner (not started, no leader) does not hold up membership changes, so it is promoted at once",
		Scenarios:   []string{"scale"},
		Equivalent:  "etcd's leader refuses to promote a learner whose log is not within 90% of its own (ErrLearnerNotReady), and the operator retries the promotion every 2 s until it is: the only change is the retries"},
	{Name: "pdb-counts-learners", Class: "disruption budget counts non-voters",
		Where:       "internal/resources PDB",
		Description: "the PodDisruptionBudget's minAvailable leaves learners out while its selector counts their pods: with a learner up, a drain may evict a voter the quorum needs",
		Scenarios:   []string{"node-drain", "scale", "learner-budget"}},
	{Name: "skip-cluster-id-check", Class: "identity: member of another cluster",
		Where:       "internal/planner checkIdentity",
		Description: "a member that answers with another cluster's ID does not halt membership changes: the operator acts on a cluster that is not the one it owns",
		Scenarios:   []string{"data-swapped", "retained-adopted", "data-wiped"},
		Equivalent:  "no member of this launcher answers with another cluster's ID: the launcher refuses a volume whose marker names another cluster (ForeignData halts whatever this mutant does), and data that is not the marker's member of the marker's cluster, before etcd starts (the write-ahead log's head) and again once it answers (launcher-trusts-marker, which data-swapped kills, is that check left out). The planner's check is the line behind them, for members whose pods still run an older launcher during an operator upgrade; data-swapped runs with this mutant and passes"},
	{Name: "launcher-trusts-marker", Class: "identity: member of another cluster",
		Where:       "internal/launcher DataIdentity.mismatch",
		Description: "the launcher takes the volume's marker for the data's identity: another cluster's (or member's) data put behind a member's marker is started, and serves that cluster's keys to this cluster's clients through its Service",
		Scenarios:   []string{"data-swapped"}},
	{Name: "keep-force-new-cluster", Class: "recovery flag survives the recovery",
		Where:       "internal/launcher Options.forceOnce",
		Description: "--force-new-cluster is kept on a restart of the survivor after its forced recovery: a container restart makes a one-member cluster again beside the members that rejoined",
		Scenarios:   []string{"quorum-recovered"},
		Equivalent:  "the planner replaces the survivor's forced pod with an ordinary one (recovery phase Rejoining) before any member rejoins, so no container restart can meet a forced pod beside rejoined members; the launcher's guard is a second line for a planner whose record of the recovery was lost (strayForcedPod replaces such a pod too). quorum-recovered restarts the survivor after the cluster grew back and passes with the mutant (2026-11-28)"},
	{Name: "force-without-fence", Class: "forced recovery beside a live majority",
		Where:       "internal/planner restartSurvivor",
		Description: "the survivor of a forced recovery is forced without fencing the other members first: a majority the operator could not reach (paused, partitioned) still runs and comes back as a second cluster with the same ID",
		Scenarios:   []string{"recovery-fences-paused"}},
	{Name: "retain-by-prefix", Class: "retention deletes what is not its own",
		Where:       "internal/backup/blobstore Retain",
		Description: "a schedule's retention takes every object under its key prefix for its own: a schedule whose name extends another's (nightly, nightly-weekly) loses its snapshots to the other's retention, and their EtcdBackups still say Completed",
		Scenarios:   []string{"backup-restore"}},
	{Name: "no-join-finalizer", Class: "deletion takes a shared quorum away",
		Where:       "controllers/etcdcluster Reconciler.Reconcile (keepFinalizer)",
		Description: "an EtcdCluster joining an external cluster is not held by the join finalizer: deleted mid-join, its pods go with the garbage collector while they are still voters of the external cluster, which loses its quorum (3 of 6 voters gone)",
		Scenarios:   []string{"join-aborted"}},
	{Name: "quota-ignores-volume", Class: "a full disk before NOSPACE",
		Where:       "controllers/etcdcluster withDefaults",
		Description: "a cluster whose spec sets no quota gets etcd's 2 GiB default whatever its volume holds: on small volumes the database fills the disk before the quota stops it, and every member crashes on \"no space left on device\" at once",
		Scenarios:   []string{"disk-full"}},
	{Name: "ready-before-answers", Class: "readiness before the member serves",
		Where:       "internal/resources etcdContainer (readiness probe)",
		Description: "the member's readiness is a TCP connect to its client port instead of etcd's /readyz: a pod counts Ready (in the Service, for the PDB, for the roll's settle time) before its etcd has a leader and answers",
		Scenarios:   []string{"follower-hung", "etcd-upgrade", "pod-deletion", "node-drain"}},
	{Name: "drop-expectations", Class: "acting on a stale cache",
		Where:       "internal/expectations Satisfied",
		Description: "the check that the cache has seen the operator's own creates and deletes always passes: a pass plans from a cache that does not show its last change, and repeats or undoes it",
		Scenarios:   []string{"scale", "pod-deletion", "steady-operator-kill"},
		Equivalent:  "for every checker: an informer's cache is always some earlier true state, never a later one, so a stale cache only shows names as still taken. A repeated create meets AlreadyExists (then a live read and the ownership check), a repeated delete carries the UID the cache showed (a new object of that name exists only once the cache saw the old one gone), a pod is created only once the cache shows its PVC, and membership is planned from etcd's live member list (FreeName counts etcd's members too; etcd refuses a second learner). What it can change is churn: repeated deletes and Events, and one race at bootstrap (spec.replicas raised before the pass that follows the bootstrap sees its PVCs: the new members start as bootstrap pods that cannot form, and are collected once the cluster forms). A delay on the operator's traffic cannot widen the window: the cache and the client share one connection to the API server, so writes and watch events are delayed alike and keep their order (review of 2026-11-29)"},
	{Name: "delete-voter-pvc", Class: "deleting the volume of a member that still votes",
		Where:       "internal/planner ensureObjects",
		Description: "a member whose pod is gone is taken for a removed one, whatever etcd's member list says, and its PVC is collected: a voter whose pod was deleted or evicted loses its data",
		Scenarios:   []string{"pod-deletion", "node-drain", "power-loss"}},
	{Name: "roll-two-at-once", Class: "rolling more than one member at once",
		Where:       "internal/planner gateHealth",
		Description: "during a rollout the health gate lets the next pod be replaced while the previous one has not come back: two members down at once, and a 3-member cluster loses quorum",
		Scenarios:   []string{"etcd-upgrade", "bad-image-reverted"}},
	{Name: "ignore-ownership", Class: "two operators act on one cluster",
		Where:       "controllers/ownership Ownership.Claim, Confirm",
		Description: "the cluster's claim (its Lease) is not consulted: every install acts on every cluster it sees, two installs at once during a scope migration",
		Scenarios:   []string{"scope-migration", "claim-pruned"}},
	{Name: "restore-skip-hash", Class: "restore of an unverified snapshot",
		Where:       "internal/backup/blobstore Fetch",
		Description: "a fetched snapshot whose SHA-256 differs from the one its backup recorded (or the restore asks for) is restored anyway",
		Scenarios:   []string{"backup-restore", "backup-restore-tls"}},
	{Name: "renew-wrong-ca", Class: "certificate renewed from the wrong CA",
		Where:       "controllers/certificates Manager.ensureLeaf",
		Description: "a certificate due for renewal is signed by the cluster's other CA (peer for client/server, cluster for peer): members that trust the CA that signed the old one refuse it",
		Scenarios:   []string{"cert-rotation"}},
	{Name: "remove-without-quorum-probe", Class: "membership change on a stale view of quorum",
		Where:       "controllers/etcdcluster observation.keepsQuorum",
		Description: "a voter is removed on the pass's observation alone, without probing that the voters that stay reach a leader now: a partition since the observation turns the removal into a lost quorum (a bug this project's review found)",
		Scenarios:   []string{"failpoint-slow-voters-scale-down", "scale-partition-minority", "scale"}},
}

// Lookup returns the mutant of that name.
func Lookup(name string) (Mutant, bool) {
	for _, m := range Registry {
		if m.Name == name {
			return m, true
		}
	}
	return Mutant{}, false
}

// Names are the registry's names, sorted.
func Names() []string {
	out := make([]string, 0, len(Registry))
	for _, m := range Registry {
		out = append(out, m.Name)
	}
	sort.Strings(out)
	return out
}
