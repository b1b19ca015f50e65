package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/names"
)

// The randomized campaign (make campaign): each run picks an operation, a fault and the moment
// the fault starts after the operation began, from its seed and its index alone, and runs them
// under the workload with every checker. Nothing is expected to fail: a run whose checker fails
// is a bug, replayed by giving the same seed and index.

// MaxCampaignSeed bounds a campaign's seed: a run's name (campaign-SEED-INDEX) must leave room
// for the namespace prefix and number in a namespace's 63 characters.
const MaxCampaignSeed = 999_999_999

// campaignMoments: the fault starts 0, 0.5, ..., 15 s after the operation began (a scale or a
// roll of three members takes 10-60 s here, so the fault lands in its middle as often as at
// its start or after its end).
const (
	campaignMomentStep = 500 * time.Millisecond
	campaignMoments    = 31
)

// CampaignPlan is what one run of a campaign does. It depends on the seed, the index and the
// operations and faults to choose from alone, so a run is replayed by giving those again.
type CampaignPlan struct {
	Seed      uint64
	Index     int
	Operation string
	Fault     string
	// Moment is how long after the operation began the fault is injected.
	Moment time.Duration
}

// PlanCampaignRun draws run index of the campaign seed from operations and faults (neither
// empty).
func PlanCampaignRun(seed uint64, index int, operations, faults []string) CampaignPlan {
	// PCG's output is fixed by its algorithm; the draws take it modulo n themselves rather than
	// through IntN, whose method the standard library may change.
	rng := rand.NewPCG(seed, uint64(index))
	draw := func(n int) int { return int(rng.Uint64() % uint64(n)) }
	return CampaignPlan{Seed: seed, Index: index,
		Operation: operations[draw(len(operations))],
		Fault:     faults[draw(len(faults))],
		Moment:    time.Duration(draw(campaignMoments)) * campaignMomentStep}
}

// Name is the run's scenario name.
func (p CampaignPlan) Name() string { return fmt.Sprintf("campaign-%d-%d", p.Seed, p.Index) }

func (p CampaignPlan) String() string {
	return fmt.Sprintf("%s: %s, %s injected %s after it began", p.Name(), p.Operation, p.Fault, p.Moment)
}

// campaignOp is an operation a campaign run performs.
type campaignOp struct {
	name string
	// replicas the run starts and ends with: 5 for an operation that stops members one at a
	// time (roll, upgrade), so that the fault taking another one down leaves a quorum; 3
	// otherwise.
	replicas int32
	needs    []framework.Prerequisite
	// version the cluster starts at ("": the suite's).
	version string
	spec    func(*v1alpha1.EtcdClusterSpec)
	do      func(ctx context.Context, r *framework.Run, p CampaignPlan) error
}

// campaignOps are the operations a campaign can pick, in a fixed order (the draw indexes it).
// storage-move needs --storage-classes FROM,TO and upgrade an --etcd-upgrade-from other than
// --etcd-version; they are left out without them.
func campaignOps(opts *framework.Options) []campaignOp {
	ops := []campaignOp{
		{name: "scale", replicas: 3, do: func(ctx context.Context, r *framework.Run, _ CampaignPlan) error {
			return scaleThrough(ctx, r)
		}},
		{name: "roll", replicas: 5, do: campaignRoll},
	}
	if opts.UpgradeFrom != "" && opts.UpgradeFrom != opts.EtcdVersion {
		to := opts.EtcdVersion
		ops = append(ops, campaignOp{name: "upgrade", replicas: 5, version: opts.UpgradeFrom,
			do: func(ctx context.Context, r *framework.Run, _ CampaignPlan) error { return campaignUpgrade(ctx, r, to) }})
	}
	if from, to, ok := strings.Cut(opts.StorageClasses, ","); ok {
		ops = append(ops, campaignOp{name: "storage-move", replicas: 3, needs: []framework.Prerequisite{framework.StorageClasses(from, to)},
			spec: func(s *v1alpha1.EtcdClusterSpec) { s.Storage.StorageClassName = &from },
			do:   func(ctx context.Context, r *framework.Run, _ CampaignPlan) error { return r.MigrateStorage(ctx, to, 3) }})
	}
	ops = append(ops,
		campaignOp{name: "backup", replicas: 3, needs: []framework.Prerequisite{framework.ObjectStore},
			do: func(ctx context.Context, r *framework.Run, p CampaignPlan) error {
				_, err := campaignBackup(ctx, r, p)
				return err
			}},
		campaignOp{name: "restore", replicas: 3, needs: []framework.Prerequisite{framework.ObjectStore},
			do: func(ctx context.Context, r *framework.Run, p CampaignPlan) error {
				b, err := campaignBackup(ctx, r, p)
				if err != nil {
					return err
				}
				return restoreAndVerify(ctx, r, b, v1alpha1.RestoreSource{BackupName: b.Name}, false)
			}})
	return ops
}

// campaignFault is a fault a campaign run injects: one of the chaos library (Faults) that
// leaves a quorum, or node-loss (the leader's node powered off, which only the local
// provider can).
type campaignFault struct {
	name      string
	partition bool
	// needs is a kernel feature the fault needs (label needs=); prerequisites what the
	// cluster must have (Chaos Mesh).
	needs         string
	prerequisites []framework.Prerequisite
	nodes         int
	inject        func(ctx context.Context, r *framework.Run) error
	// spec adjusts the cluster for the fault (nil: nothing): a failpoint fault runs etcd built
	// with its failpoints.
	spec func(*v1alpha1.EtcdClusterSpec)
	// failpoint: the fault arms an etcd failpoint; an upgrade under it starts from
	// --failpoint-upgrade-from-image.
	failpoint bool
}

// campaignNodeLoss is the node-loss fault's name.
const campaignNodeLoss = "node-loss"

// campaignFaults are the faults a campaign can pick, in a fixed order (the draw indexes it).
func campaignFaults(opts *framework.Options) []campaignFault {
	var out []campaignFault
	for _, f := range Faults(opts.OperatorNS) {
		if f.QuorumLost {
			// The campaign's runs must keep a quorum: an operation cannot go on without one.
			continue
		}
		out = append(out, campaignFault{name: f.Name, partition: f.Partition, needs: f.Needs, prerequisites: []framework.Prerequisite{framework.ChaosMesh},
			inject: func(ctx context.Context, r *framework.Run) error { return r.Inject(ctx, f.Build, faultWindow, nil) }})
	}
	out = append(out, campaignFault{name: campaignNodeLoss, partition: true, nodes: 3, inject: campaignPowerOffLeader})
	return append(out, campaignFailpointFaults(opts)...)
}

// campaignFailpointFaults make etcd itself panic or stall at a point of its own code, as the
// failpoint scenarios do (failpoints.go), at the run's moment: the leader panics before it
// saves raft entries, a follower before a backend commit, or the leader's WAL syncs take
// 300 ms longer for the fault window. The cluster runs etcd built with its failpoints
// (--failpoint-etcd-image; an upgrade starts from --failpoint-upgrade-from-image).
func campaignFailpointFaults(opts *framework.Options) []campaignFault {
	spec := func(s *v1alpha1.EtcdClusterSpec) {
		image := opts.FailpointImage
		if s.Version == opts.UpgradeFrom && s.Version != opts.EtcdVersion {
			image = opts.FailpointUpgradeFromImage
		}
		runFailpointBuild(s, image)
	}
	var out []campaignFault
	for _, c := range []failpointCase{
		{name: "failpoint-leader-panic", failpoint: "raftBeforeSave", action: "panic", target: targetLeader},
		{name: "failpoint-follower-panic", failpoint: "beforeCommit", action: "panic", target: targetFollower},
		{name: "failpoint-leader-slow", failpoint: "walBeforeSync", action: "sleep(300)", target: targetLeader, hold: faultWindow},
	} {
		out = append(out, campaignFault{name: c.name, failpoint: true, spec: spec, prerequisites: []framework.Prerequisite{framework.FailpointImage},
			inject: func(ctx context.Context, r *framework.Run) error { return injectFailpoint(ctx, r, c) }})
	}
	return out
}

// injectFailpoint arms c on its target and waits until it fired (and, for a stall, was held
// for c.hold). A target whose pod the operation replaces before the failpoint fired (the
// failpoint goes with its process) is chosen again, up to 3 times, as the chaos faults are.
func injectFailpoint(ctx context.Context, r *framework.Run, c failpointCase) error {
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var a armed
		// The target may be between pods (a roll, an upgrade): it is armed once a member of
		// the kind asked for is ready.
		err = r.WaitFor(ctx, fmt.Sprintf("%s=%s armed on the %s", c.failpoint, c.action, c.target), 2*time.Minute, func() (err error) {
			a, err = armFailpoint(ctx, r, c)
			return err
		})
		if err != nil {
			return err
		}
		if err = waitFired(ctx, r, c, a); !errors.Is(err, errReplacedBeforeFired) || attempt == 3 {
			return err
		}
		r.T.Logf("%v; arming the %s again (attempt %d of 3)", err, c.target, attempt+1)
	}
	return err
}

// CampaignScenarios are runs from through from+runs-1 of the campaign seed, over the
// operations and faults named (every one when empty).
func CampaignScenarios(opts *framework.Options, seed uint64, from, runs int, operations, faults string) ([]framework.Scenario, error) {
	if seed == 0 || seed > MaxCampaignSeed {
		return nil, fmt.Errorf("--campaign-seed=%d: give a seed from 1 to %d", seed, MaxCampaignSeed)
	}
	if from < 0 || runs < 0 {
		return nil, fmt.Errorf("--campaign-from=%d --campaign-runs=%d: neither may be negative", from, runs)
	}
	ops, err := pick("--campaign-operations", operations, campaignOps(opts), func(o campaignOp) string { return o.name })
	if err != nil {
		return nil, err
	}
	fs, err := pick("--campaign-faults", faults, campaignFaults(opts), func(f campaignFault) string { return f.name })
	if err != nil {
		return nil, err
	}
	opNames, faultNames := namesOf(ops, func(o campaignOp) string { return o.name }), namesOf(fs, func(f campaignFault) string { return f.name })
	var out []framework.Scenario
	for i := from; i < from+runs; i++ {
		p := PlanCampaignRun(seed, i, opNames, faultNames)
		sc := campaignScenario(p, ops[slices.Index(opNames, p.Operation)], fs[slices.Index(faultNames, p.Fault)])
		// What the run drew from: a replay must draw from the same lists.
		sc.Labels[label.DrawOperations], sc.Labels[label.DrawFaults] = strings.Join(opNames, ","), strings.Join(faultNames, ",")
		out = append(out, sc)
	}
	return out, nil
}

// pick narrows all to the comma-separated names given, keeping all's order (the draw's);
// every one of all when none are given.
func pick[T any](flag, given string, all []T, name func(T) string) ([]T, error) {
	if strings.TrimSpace(given) == "" {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(given, ",") {
		n = strings.TrimSpace(n)
		if !slices.ContainsFunc(all, func(t T) bool { return name(t) == n }) {
			return nil, fmt.Errorf("%s: %q is not one of %s", flag, n, strings.Join(namesOf(all, name), ","))
		}
		want[n] = true
	}
	var out []T
	for _, t := range all {
		if want[name(t)] {
			out = append(out, t)
		}
	}
	return out, nil
}

func namesOf[T any](all []T, name func(T) string) []string {
	out := make([]string, len(all))
	for i, t := range all {
		out[i] = name(t)
	}
	return out
}

// campaignScenario is one run: a 3-member cluster under load; the operation starts, the fault
// is injected p.Moment later and held; both must end, then the cluster must settle.
func campaignScenario(p CampaignPlan, op campaignOp, f campaignFault) framework.Scenario {
	sc := framework.Scenario{Name: p.Name(), Replicas: op.replicas, Class: framework.Fault, Version: op.version, Spec: op.spec,
		Needs: append(slices.Clone(op.needs), f.prerequisites...),
		Labels: map[string]string{label.Suite: label.SuiteCampaign, label.Seed: strconv.FormatUint(p.Seed, 10), label.Run: strconv.Itoa(p.Index),
			label.Operation: p.Operation, label.Fault: p.Fault, label.Moment: p.Moment.String()}}
	if f.partition {
		sc.Class = framework.Partition
	}
	if f.spec != nil {
		sc.Spec = func(s *v1alpha1.EtcdClusterSpec) {
			if op.spec != nil {
				op.spec(s)
			}
			f.spec(s)
		}
	}
	if f.failpoint && op.version != "" {
		sc.Needs = append(sc.Needs, framework.FailpointUpgradeImages)
	}
	if f.needs != "" {
		sc.Labels[label.Needs] = f.needs
	}
	if f.nodes > 0 {
		sc.Nodes, sc.NeedsNode = f.nodes, true
	}
	sc.Steps = []framework.Step{
		{Name: fmt.Sprintf("%s, with %s injected %s after it began", p.Operation, p.Fault, p.Moment), Do: func(ctx context.Context, r *framework.Run) error {
			r.Event("note", "campaign", p.String())
			done := runAlongside(func() error { return op.do(ctx, r, p) })
			r.Hold(ctx, p.Moment)
			var errs []error
			if err := f.inject(ctx, r); err != nil {
				errs = append(errs, fmt.Errorf("fault %s: %w", p.Fault, err))
			}
			if err := <-done; err != nil {
				errs = append(errs, fmt.Errorf("operation %s: %w", p.Operation, err))
			}
			return errors.Join(errs...)
		}},
		waitSettled(op.replicas),
	}
	return sc
}

// scaleThrough scales the cluster from 3 to 5 members and back to 3.
func scaleThrough(ctx context.Context, r *framework.Run) error {
	if err := r.Scale(ctx, 5); err != nil {
		return err
	}
	return r.Scale(ctx, 3)
}

// runAlongside runs do in a goroutine while the caller injects a fault; the channel it returns
// yields do's error, or a panic in it as an error, once.
func runAlongside(do func() error) <-chan error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- fmt.Errorf("panic: %v", v)
			}
		}()
		done <- do()
	}()
	return done
}

// campaignRollAnnotation is the pod template annotation whose change rolls every member.
const campaignRollAnnotation = "campaign.quorate.dev/roll"

// campaignRoll changes the member pods' template (an annotation), which replaces every member
// one at a time, and waits until every member's pod carries it and the cluster settled.
func campaignRoll(ctx context.Context, r *framework.Run, p CampaignPlan) error {
	return rollMembers(ctx, r, p.Name())
}

// rollMembers sets the pod template annotation campaignRollAnnotation to value and waits until
// every member's pod carries it and the cluster settled at the replicas it has.
func rollMembers(ctx context.Context, r *framework.Run, value string) error {
	r.Phase("rolling every member (pod template annotation " + campaignRollAnnotation + ")")
	if err := r.Update(ctx, "podTemplate.annotations["+campaignRollAnnotation+"] = "+value, func(ec *v1alpha1.EtcdCluster) {
		if ec.Spec.PodTemplate == nil {
			ec.Spec.PodTemplate = &v1alpha1.PodTemplate{}
		}
		if ec.Spec.PodTemplate.Annotations == nil {
			ec.Spec.PodTemplate.Annotations = map[string]string{}
		}
		ec.Spec.PodTemplate.Annotations[campaignRollAnnotation] = value
	}); err != nil {
		return err
	}
	err := r.WaitFor(ctx, "every member's pod rolled", 15*time.Minute, func() error {
		var pods corev1.PodList
		if err := r.Suite.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels(names.MemberSelector(r.Cluster))); err != nil {
			return err
		}
		var old []string
		for _, pod := range pods.Items {
			if pod.Annotations[campaignRollAnnotation] != value {
				old = append(old, pod.Name)
			}
		}
		if len(old) > 0 {
			return fmt.Errorf("not rolled yet: %s", strings.Join(old, ", "))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return waitSettledAsSpec(ctx, r)
}

// waitSettledAsSpec waits until the cluster settled at the replicas its spec asks for.
func waitSettledAsSpec(ctx context.Context, r *framework.Run) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	return r.WaitSettled(ctx, ec.Spec.Replicas, 5*time.Minute)
}

// campaignUpgrade changes the etcd version and waits until every member runs it and the
// cluster settled. Unlike the etcd-upgrade scenario it does not ask that each pod was
// replaced once, announced: the fault may have replaced one besides.
func campaignUpgrade(ctx context.Context, r *framework.Run, to string) error {
	r.Phase("upgrading etcd to " + to)
	// A cluster on etcd built with its failpoints (a failpoint fault) goes to the same build of
	// the new version.
	from, image := r.Suite.Opts.FailpointUpgradeFromImage, r.Suite.Opts.FailpointImage
	if err := r.Update(ctx, "version = "+to, func(ec *v1alpha1.EtcdCluster) {
		ec.Spec.Version = to
		if from != "" && ec.Spec.Image == from {
			ec.Spec.Image = image
		}
	}); err != nil {
		return err
	}
	if err := r.WaitEtcdVersion(ctx, to, 15*time.Minute); err != nil {
		return err
	}
	return waitSettledAsSpec(ctx, r)
}

// campaignBackup backs the cluster up to the suite's S3 store; the backup must complete.
func campaignBackup(ctx context.Context, r *framework.Run, p CampaignPlan) (*v1alpha1.EtcdBackup, error) {
	if err := r.UseS3(ctx); err != nil {
		return nil, err
	}
	r.Phase("backing up")
	return completedBackup(ctx, r, fmt.Sprintf("campaign-%d", p.Index), framework.Storage("backups"))
}

// campaignPowerOffLeader powers the leader's node off for the fault window and on again, and
// waits until the node is Ready.
func campaignPowerOffLeader(ctx context.Context, r *framework.Run) error {
	// Not LeaderNode, which asks that no two members share a node: a scale or a storage move
	// has more members than the pool has nodes for a while.
	leader, err := r.Leader(ctx)
	if err != nil {
		return err
	}
	nodes, err := r.MemberNodes(ctx)
	if err != nil {
		return err
	}
	node := nodes[leader]
	if node == "" {
		return fmt.Errorf("the leader %s's pod has no node", leader)
	}
	what := fmt.Sprintf(powerOutage.doing+", for %s", node, leader, faultWindow)
	r.Phase(what)
	end := r.Fault(powerOutage.fault, what)
	defer end()
	bringBack, err := powerOutage.takeAway(ctx, r, node)
	if err != nil {
		return err
	}
	r.Hold(ctx, faultWindow)
	r.Phase(fmt.Sprintf(powerOutage.undoing, node))
	if err := bringBack(ctx); err != nil {
		return err
	}
	return r.WaitNodeReady(ctx, node, corev1.ConditionTrue, 3*time.Minute)
}
