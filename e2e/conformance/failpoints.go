package conformance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/resources"
)

// The failpoint scenarios run etcd built with its gofail failpoints (--failpoint-etcd-image,
// make e2e-failpoints) and make etcd itself panic or stall at a point of its own code (before
// raft entries are saved, before a backend commit, while it saves a snapshot, defragments or
// compacts) while the operator scales, rolls, defragments or moves storage. Every checker must
// pass: a failure is the operator's, or an etcd bug to report with its history.

// failpointCase is one failpoint scenario.
type failpointCase struct {
	name string
	// failpoint is etcd's name for it, action gofail's (panic, sleep(300)).
	failpoint, action string
	// target is whose etcd is armed: leader, follower or every member.
	target string
	// hold: how long a sleep stays armed once it fired (a panic fires once: the process dies
	// and starts again without it).
	hold time.Duration
	// operation runs while the failpoint is armed: the cluster starts with replicas members
	// (5 for a roll, which stops one at a time, so that the failpoint's crash leaves a quorum)
	// and ends with end.
	operation     string
	replicas, end int32
	do            func(ctx context.Context, r *framework.Run) error
	// armWhen waits, once the operation has begun, for the moment to arm the failpoint (nil:
	// at once) and says which member the target is then (nil: the leader or any follower).
	armWhen func(ctx context.Context, r *framework.Run) error
	// armFirst arms it before the operation begins (a defragmentation reaches every member).
	armFirst bool
	pick     func(ctx context.Context, r *framework.Run) (string, error)
	spec     func(*v1alpha1.EtcdClusterSpec)
	needs    []framework.Prerequisite
}

const (
	targetLeader   = "leader"
	targetFollower = "follower"
	targetEvery    = "every member"
)

// failpointTimeout bounds the wait for an armed failpoint to fire: etcd saves a snapshot to
// disk every 10000 entries (a minute or two of the workload), a periodic compaction comes
// every minute.
const failpointTimeout = 4 * time.Minute

func failpointCases(opts *framework.Options) []failpointCase {
	scale := scaleThrough
	grow := func(ctx context.Context, r *framework.Run) error { return r.Scale(ctx, 5) }
	token := fmt.Sprintf("failpoint-%d", time.Now().Unix())
	roll := func(ctx context.Context, r *framework.Run) error { return rollMembers(ctx, r, token) }
	// During a scale: once a fourth member is in the cluster (a learner, or just promoted).
	joined := func(ctx context.Context, r *framework.Run) error {
		return r.WaitFor(ctx, "a fourth member", 5*time.Minute, func() error {
			ec, err := r.GetCluster(ctx)
			if err != nil {
				return err
			}
			if len(ec.Status.Members) < 4 {
				return fmt.Errorf("%d members", len(ec.Status.Members))
			}
			return nil
		})
	}
	// During a roll: once a member's pod was replaced; the target follower is one whose pod
	// was (the roll does not replace it again, so the failpoint is not lost with its pod).
	rolled := func(ctx context.Context, r *framework.Run) error {
		return r.WaitFor(ctx, "a member's pod rolled", 5*time.Minute, func() error {
			if m, err := rolledFollower(ctx, r, token); err != nil || m == "" {
				return fmt.Errorf("none yet (%v)", err)
			}
			return nil
		})
	}
	pickRolled := func(ctx context.Context, r *framework.Run) (string, error) { return rolledFollower(ctx, r, token) }
	return append([]failpointCase{
		{name: "leader-panics-before-save", failpoint: "raftBeforeSave", action: "panic", target: targetLeader, operation: "scale", do: scale, armWhen: joined},
		{name: "follower-panics-after-save", failpoint: "raftAfterSave", action: "panic", target: targetFollower, operation: "scale", do: scale, armWhen: joined},
		{name: "follower-panics-before-commit", failpoint: "beforeCommit", action: "panic", target: targetFollower, operation: "roll", replicas: 5, do: roll, armWhen: rolled, pick: pickRolled},
		{name: "leader-panics-after-commit", failpoint: "afterCommit", action: "panic", target: targetLeader, operation: "roll", replicas: 5, do: roll, armWhen: rolled},
		// Every 10000 entries etcd saves a snapshot to disk (a minute or two of the workload).
		{name: "follower-panics-saving-snapshot", failpoint: "raftBeforeWALSaveSnaphot", action: "panic", target: targetFollower, operation: "scale", do: scale},
		{name: "defrag-panics-before-rename", failpoint: "defragBeforeRename", action: "panic", target: targetEvery, operation: "defrag", do: defragNow, armFirst: true},
		{name: "leader-slow-wal-sync", failpoint: "walBeforeSync", action: "sleep(300)", target: targetLeader, hold: 20 * time.Second, operation: "scale", do: scale, armWhen: joined},
		{name: "leader-slow-to-send", failpoint: "raftBeforeLeaderSend", action: "sleep(200)", target: targetLeader, hold: 20 * time.Second, operation: "roll", replicas: 5, do: roll, armWhen: rolled},
		// A periodic compaction every minute (the default keeps an hour), on one of the first
		// three members while the cluster grows to five (which keeps them).
		{name: "follower-panics-compacting", failpoint: "compactBeforeCommitScheduledCompact", action: "panic", target: targetFollower,
			operation: "scale", end: 5, do: grow,
			spec: func(s *v1alpha1.EtcdClusterSpec) {
				s.Etcd.AutoCompactionMode, s.Etcd.AutoCompactionRetention = "periodic", "1m"
			}},
	}, upgradeFailpointCases(opts)...)
}

// upgradeFailpointCases panic etcd inside an upgrade from --etcd-upgrade-from to
// --etcd-version, both built with failpoints (--failpoint-upgrade-from-image,
// --failpoint-etcd-image), once the first member runs the new version: the cluster is mixed,
// and the operator goes on replacing one member at a time. Five members, so that the
// panicking member and the one being replaced leave a quorum.
func upgradeFailpointCases(opts *framework.Options) []failpointCase {
	from, to := opts.UpgradeFrom, opts.EtcdVersion
	fromImage, toImage := opts.FailpointUpgradeFromImage, opts.FailpointImage
	start := func(s *v1alpha1.EtcdClusterSpec) { s.Version, s.Image = from, fromImage }
	do := func(ctx context.Context, r *framework.Run) error {
		began := time.Now()
		if err := r.Update(ctx, fmt.Sprintf("spec.version = %s, spec.image = %s", to, toImage), func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Version, ec.Spec.Image = to, toImage
		}); err != nil {
			return err
		}
		return r.Converge(ctx, "every member at etcd "+to, began, 5, to, 15*time.Minute)
	}
	upgraded := func(ctx context.Context, r *framework.Run) error {
		return r.WaitFor(ctx, "a follower upgraded to etcd "+to, 10*time.Minute, func() error {
			if m, err := upgradedFollower(ctx, r, toImage); err != nil || m == "" {
				return fmt.Errorf("none yet (%v)", err)
			}
			return nil
		})
	}
	pickUpgraded := func(ctx context.Context, r *framework.Run) (string, error) { return upgradedFollower(ctx, r, toImage) }
	needs := []framework.Prerequisite{framework.FailpointUpgradeImages}
	return []failpointCase{
		{name: "upgraded-follower-panics-before-commit", failpoint: "beforeCommit", action: "panic", target: targetFollower, operation: "upgrade",
			replicas: 5, do: do, armWhen: upgraded, pick: pickUpgraded, spec: start, needs: needs},
		{name: "leader-panics-before-save-in-upgrade", failpoint: "raftBeforeSave", action: "panic", target: targetLeader, operation: "upgrade",
			replicas: 5, do: do, armWhen: upgraded, spec: start, needs: needs},
	}
}

// upgradedFollower is a ready follower whose etcd container runs image, or "".
func upgradedFollower(ctx context.Context, r *framework.Run, image string) (string, error) {
	return readyFollower(ctx, r, func(p *corev1.Pod) bool {
		return slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == resources.EtcdContainer && c.Image == image })
	})
}

// rolledFollower is a follower whose pod carries the roll's annotation value, or "".
func rolledFollower(ctx context.Context, r *framework.Run, value string) (string, error) {
	return readyFollower(ctx, r, func(p *corev1.Pod) bool { return p.Annotations[campaignRollAnnotation] == value })
}

// readyFollower is a ready follower whose pod (not being deleted) is one match accepts, or "".
func readyFollower(ctx context.Context, r *framework.Run, match func(*corev1.Pod) bool) (string, error) {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return "", err
	}
	var pods corev1.PodList
	if err := r.Suite.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels(names.MemberSelector(r.Cluster))); err != nil {
		return "", err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if match(p) && p.DeletionTimestamp.IsZero() && p.Name != ec.Status.Leader && framework.PodReady(p) {
			return p.Name, nil
		}
	}
	return "", nil
}

// FailpointScenarios are the failpoint scenarios (suite=failpoints).
func FailpointScenarios(opts *framework.Options) []framework.Scenario {
	var out []framework.Scenario
	for _, c := range failpointCases(opts) {
		out = append(out, failpointScenario(opts, c))
	}
	return append(out, SlowVotersScaleDown(opts))
}

func failpointScenario(opts *framework.Options, c failpointCase) framework.Scenario {
	image := opts.FailpointImage
	c.replicas, c.end = cmp.Or(c.replicas, 3), cmp.Or(c.end, c.replicas, 3)
	return framework.Scenario{Name: "failpoint-" + c.name, Replicas: c.replicas, Class: framework.Fault,
		Labels: map[string]string{label.Suite: label.SuiteFailpoints, label.Failpoint: c.failpoint, label.Operation: c.operation},
		Needs:  append([]framework.Prerequisite{framework.FailpointImage}, c.needs...),
		Spec: func(s *v1alpha1.EtcdClusterSpec) {
			runFailpointBuild(s, image)
			if c.spec != nil {
				c.spec(s)
			}
		},
		Steps: []framework.Step{
			{Name: fmt.Sprintf("%s while %s on the %s's etcd", c.operation, c.failpoint+"="+c.action, c.target), Do: func(ctx context.Context, r *framework.Run) error {
				return runWithFailpoint(ctx, r, c)
			}},
			waitSettled(c.end),
		}}
}

// runFailpointBuild makes the cluster run image, an etcd built with its failpoints, and lets
// the suite reach their control: on port 22381, which the cluster's NetworkPolicy does not
// admit.
func runFailpointBuild(s *v1alpha1.EtcdClusterSpec, image string) {
	s.Image = image
	s.NetworkPolicy.Enabled = ptr.To(false)
}

// errReplacedBeforeFired: the armed member's pod was replaced before its failpoint fired, so
// the failpoint went with its process.
var errReplacedBeforeFired = errors.New("pod replaced before the failpoint fired")

// armed is a failpoint armed on its targets: their pods as they were, and when.
type armed struct {
	targets []string
	before  map[string]framework.MemberPod
	at      time.Time
}

// armFailpoint arms c's failpoint on its targets (c.pick's member, or failpointTargets'), and
// returns them with their pods as they were when armed.
func armFailpoint(ctx context.Context, r *framework.Run, c failpointCase) (armed, error) {
	var targets []string
	var err error
	if c.pick != nil {
		var m string
		if m, err = c.pick(ctx, r); err == nil && m == "" {
			err = errors.New("no member to arm")
		}
		targets = []string{m}
	} else {
		targets, err = failpointTargets(ctx, r, c.target)
	}
	if err != nil {
		return armed{}, err
	}
	a := armed{targets: targets, at: time.Now()}
	if a.before, err = r.PodsOf(ctx, targets); err != nil {
		return armed{}, err
	}
	for _, m := range targets {
		if err := r.ArmFailpoint(ctx, m, c.failpoint, c.action); err != nil {
			return armed{}, err
		}
	}
	return a, nil
}

// runWithFailpoint arms the failpoint on the target's etcd when the case says (before the
// operation, or once it has begun and reached armWhen's moment), and waits for both: the
// failpoint must fire (a panic restarts the container; a sleep's count rises, and it is held,
// then turned off), and the operation must end.
func runWithFailpoint(ctx context.Context, r *framework.Run, c failpointCase) error {
	var a armed
	arm := func() (err error) {
		a, err = armFailpoint(ctx, r, c)
		return err
	}
	if c.armFirst {
		if err := arm(); err != nil {
			return err
		}
	}
	done := runAlongside(func() error { return c.do(ctx, r) })
	var errs []error
	err := error(nil)
	if !c.armFirst {
		if c.armWhen != nil {
			err = c.armWhen(ctx, r)
		}
		if err == nil {
			err = arm()
		}
	}
	if err == nil {
		err = waitFired(ctx, r, c, a)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("failpoint %s: %w", c.failpoint, err))
	}
	if err := <-done; err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", c.operation, err))
	}
	return errors.Join(errs...)
}

// failpointTargets names the members to arm.
func failpointTargets(ctx context.Context, r *framework.Run, target string) ([]string, error) {
	switch target {
	case targetLeader:
		l, err := r.Leader(ctx)
		if err != nil {
			return nil, err
		}
		// Not a leader whose pod is going (a roll stops the leader last, once it moved
		// leadership away): its failpoint would go with it.
		if ok, err := servingPod(ctx, r, l); err != nil || !ok {
			return nil, fmt.Errorf("the leader %s's pod is not ready, or is being deleted (%v)", l, err)
		}
		return []string{l}, nil
	case targetFollower:
		f, err := readyFollower(ctx, r, func(*corev1.Pod) bool { return true })
		if err == nil && f == "" {
			err = errors.New("no ready follower")
		}
		return []string{f}, err
	}
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return nil, err
	}
	var all []string
	for _, m := range ec.Status.Members {
		all = append(all, m.Name)
	}
	return all, nil
}

// waitFired waits until the failpoint fired on every target: for a panic, the target's etcd
// died (panicked); for anything else, its count rose, after which it is held for c.hold and
// turned off. A target whose pod was replaced before it fired stops the wait with
// errReplacedBeforeFired.
func waitFired(ctx context.Context, r *framework.Run, c failpointCase, a armed) error {
	if c.action == "panic" {
		err := r.WaitFor(ctx, fmt.Sprintf("%s=panic to fire on %s (its etcd dying)", c.failpoint, strings.Join(a.targets, ", ")), failpointTimeout, func() error {
			var waiting []string
			for _, m := range a.targets {
				died, err := panicked(ctx, r, c, m, a)
				if err != nil {
					return err
				}
				if !died {
					waiting = append(waiting, m)
				}
			}
			if len(waiting) > 0 {
				return fmt.Errorf("not fired yet on %s", strings.Join(waiting, ", "))
			}
			return nil
		})
		if err == nil {
			r.T.Logf("%s=panic fired on %s: each one's etcd died", c.failpoint, strings.Join(a.targets, ", "))
		}
		return err
	}
	// However the wait ends, the sleep is turned off again, unless the member's pod was
	// replaced meanwhile (the failpoint went with its process).
	defer disarm(context.WithoutCancel(ctx), r, c, a)
	err := r.WaitFor(ctx, fmt.Sprintf("%s=%s to fire on %s", c.failpoint, c.action, strings.Join(a.targets, ", ")), failpointTimeout, func() error {
		if err := samePods(ctx, r, c, a); err != nil {
			return err
		}
		for _, m := range a.targets {
			n, err := r.FailpointCount(ctx, m, c.failpoint)
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("not fired yet on %s", m)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	end := r.Fault(c.failpoint+"="+c.action, fmt.Sprintf("%s=%s on %s, held for %s", c.failpoint, c.action, strings.Join(a.targets, ", "), c.hold))
	r.Hold(ctx, c.hold)
	end()
	for _, m := range a.targets {
		if n, err := r.FailpointCount(ctx, m, c.failpoint); err == nil {
			r.T.Logf("%s=%s fired %d times on %s in %s", c.failpoint, c.action, n, m, c.hold)
		}
	}
	return nil
}

// samePods: every target still runs in the pod it was armed in (else ErrStop and
// errReplacedBeforeFired).
func samePods(ctx context.Context, r *framework.Run, c failpointCase, a armed) error {
	for _, m := range a.targets {
		p := &corev1.Pod{}
		err := r.Suite.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: m}, p)
		if apierrors.IsNotFound(err) || (err == nil && p.UID != a.before[m].UID) {
			return fmt.Errorf("%w: %w: %s's pod, armed with %s", framework.ErrStop, errReplacedBeforeFired, m, c.failpoint)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// disarm turns the failpoint off on each target still in the pod it was armed in, trying for
// 30 s (the pod proxy fails while the API server or the pod is busy); the failpoint of a
// replaced pod went with its process.
func disarm(ctx context.Context, r *framework.Run, c failpointCase, a armed) {
	for _, m := range a.targets {
		err := r.WaitFor(ctx, fmt.Sprintf("%s turned off on %s", c.failpoint, m), 30*time.Second, func() error {
			now, err := r.PodsOf(ctx, []string{m})
			if apierrors.IsNotFound(err) || (err == nil && now[m].UID != a.before[m].UID) {
				return nil
			}
			if err != nil {
				return err
			}
			return r.DisarmFailpoint(ctx, m, c.failpoint)
		})
		if err != nil {
			r.T.Logf("%s stays on in %s's etcd until its pod is replaced: %v", c.failpoint, m, err)
		}
	}
}

// panicked: member's etcd died since a was armed. In the pod it was armed in, its container
// restarted or is (or last was) terminated after a.at. A pod replaced since counts when the
// operator replaced it because it was down (its repair Event, "replacing the pod of M, which
// ...", after a.at): an outdated pod that dies in a roll or an upgrade is replaced at once,
// before it restarts. Otherwise, ErrStop and errReplacedBeforeFired.
func panicked(ctx context.Context, r *framework.Run, c failpointCase, m string, a armed) (bool, error) {
	p := &corev1.Pod{}
	err := r.Suite.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: m}, p)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	if err == nil && p.UID == a.before[m].UID {
		var restarts int32
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
			if cs.Name != resources.EtcdContainer {
				continue
			}
			for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if t != nil && t.FinishedAt.After(a.at) {
					return true, nil
				}
			}
		}
		return restarts > a.before[m].Restarts, nil
	}
	var events corev1.EventList
	if err := r.Suite.Client.List(ctx, &events, client.InNamespace(r.Namespace)); err != nil {
		return false, err
	}
	for _, e := range events.Items {
		last := e.LastTimestamp.Time
		if e.EventTime.After(last) {
			last = e.EventTime.Time
		}
		// Event times have a second's resolution.
		if strings.HasPrefix(e.Message, "replacing the pod of "+m+", which ") && !last.Before(a.at.Truncate(time.Second)) {
			r.T.Logf("%s's pod was replaced after its etcd died: %s", m, e.Message)
			return true, nil
		}
	}
	return false, fmt.Errorf("%w: %w: %s's pod, armed with %s", framework.ErrStop, errReplacedBeforeFired, m, c.failpoint)
}

// servingPod: member's pod is ready and not being deleted.
func servingPod(ctx context.Context, r *framework.Run, member string) (bool, error) {
	p := &corev1.Pod{}
	if err := r.Suite.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: member}, p); err != nil {
		return false, err
	}
	return p.DeletionTimestamp.IsZero() && framework.PodReady(p), nil
}

// defragNow asks for a defragmentation round of every member now and waits until it
// completed and the cluster settled.
func defragNow(ctx context.Context, r *framework.Run) error {
	token := fmt.Sprintf("failpoint-%d", time.Now().Unix())
	r.Phase("defragmenting every member (spec.maintenance.defragNow)")
	if err := r.Update(ctx, "spec.maintenance.defragNow = "+token, func(ec *v1alpha1.EtcdCluster) { ec.Spec.Maintenance.DefragNow = token }); err != nil {
		return err
	}
	err := r.WaitFor(ctx, "the defragmentation round "+token+" to complete", 10*time.Minute, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		var d *v1alpha1.DefragRoundStatus
		if ec.Status.Maintenance != nil {
			d = ec.Status.Maintenance.Defrag
		}
		if d == nil || d.Token != token || d.CompletionTime == nil {
			return fmt.Errorf("status.maintenance.defrag: %+v", d)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return r.WaitSettled(ctx, 3, 5*time.Minute)
}
