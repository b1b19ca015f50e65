package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
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
	// operation runs while the failpoint is armed; replicas the cluster ends with.
	operation string
	do        func(ctx context.Context, r *framework.Run) error
	spec      func(*v1alpha1.EtcdClusterSpec)
	needs     []framework.Prerequisite
}

const (
	targetLeader   = "leader"
	targetFollower = "follower"
	targetEvery    = "every member"
)

// failpointTimeout bounds the wait for an armed failpoint to fire: a snapshot comes after
// etcd's 10000 entries (a minute of the workload), a periodic compaction after a minute.
const failpointTimeout = 4 * time.Minute

func failpointCases(opts *framework.Options) []failpointCase {
	scale := func(ctx context.Context, r *framework.Run) error {
		if err := r.Scale(ctx, 5); err != nil {
			return err
		}
		return r.Scale(ctx, 3)
	}
	roll := func(ctx context.Context, r *framework.Run) error {
		return campaignRoll(ctx, r, CampaignPlan{Seed: 1, Index: int(time.Now().Unix() % 1000)})
	}
	cases := []failpointCase{
		{name: "leader-panics-before-save", failpoint: "raftBeforeSave", action: "panic", target: targetLeader, operation: "scale", do: scale},
		{name: "follower-panics-after-save", failpoint: "raftAfterSave", action: "panic", target: targetFollower, operation: "scale", do: scale},
		{name: "follower-panics-before-commit", failpoint: "beforeCommit", action: "panic", target: targetFollower, operation: "roll", do: roll},
		{name: "leader-panics-after-commit", failpoint: "afterCommit", action: "panic", target: targetLeader, operation: "roll", do: roll},
		{name: "follower-panics-saving-snapshot", failpoint: "raftBeforeSaveSnap", action: "panic", target: targetFollower, operation: "scale", do: scale},
		{name: "defrag-panics-before-rename", failpoint: "defragBeforeRename", action: "panic", target: targetEvery, operation: "defrag", do: defragNow},
		{name: "leader-slow-wal-sync", failpoint: "walBeforeSync", action: "sleep(300)", target: targetLeader, hold: 20 * time.Second, operation: "scale", do: scale},
		{name: "leader-slow-to-send", failpoint: "raftBeforeLeaderSend", action: "sleep(200)", target: targetLeader, hold: 20 * time.Second, operation: "roll", do: roll},
	}
	if from, to, ok := strings.Cut(opts.StorageClasses, ","); ok {
		cases = append(cases, failpointCase{name: "leader-panics-compacting", failpoint: "compactBeforeCommitScheduledCompact", action: "panic", target: targetLeader,
			operation: "storage-move", do: func(ctx context.Context, r *framework.Run) error { return r.MigrateStorage(ctx, to, 3) },
			// A periodic compaction every minute (the default keeps an hour).
			spec: func(s *v1alpha1.EtcdClusterSpec) {
				s.Storage.StorageClassName = &from
				s.Etcd.AutoCompactionMode, s.Etcd.AutoCompactionRetention = "periodic", "1m"
			},
			needs: []framework.Prerequisite{framework.StorageClasses(from, to)}})
	}
	return cases
}

// FailpointScenarios are the failpoint scenarios (suite=failpoints).
func FailpointScenarios(opts *framework.Options) []framework.Scenario {
	var out []framework.Scenario
	for _, c := range failpointCases(opts) {
		out = append(out, failpointScenario(opts, c))
	}
	return out
}

func failpointScenario(opts *framework.Options, c failpointCase) framework.Scenario {
	image := opts.FailpointImage
	return framework.Scenario{Name: "failpoint-" + c.name, Replicas: 3, Class: framework.Fault,
		Labels: map[string]string{label.Suite: label.SuiteFailpoints, label.Failpoint: c.failpoint, label.Operation: c.operation},
		Needs:  append([]framework.Prerequisite{framework.FailpointImage}, c.needs...),
		Spec: func(s *v1alpha1.EtcdClusterSpec) {
			s.Image = image
			if c.spec != nil {
				c.spec(s)
			}
		},
		Steps: []framework.Step{
			{Name: fmt.Sprintf("%s while %s on the %s's etcd", c.operation, c.failpoint+"="+c.action, c.target), Do: func(ctx context.Context, r *framework.Run) error {
				return runWithFailpoint(ctx, r, c)
			}},
			waitSettled(3),
		}}
}

// runWithFailpoint starts the operation, arms the failpoint on the target's etcd, and waits
// for both: the failpoint must fire (a panic restarts the container; a sleep's count rises,
// and it is held, then turned off), and the operation must end.
func runWithFailpoint(ctx context.Context, r *framework.Run, c failpointCase) error {
	targets, err := failpointTargets(ctx, r, c.target)
	if err != nil {
		return err
	}
	before, err := r.MemberPods(ctx)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.do(ctx, r) }()
	var errs []error
	for _, m := range targets {
		if err := r.ArmFailpoint(ctx, m, c.failpoint, c.action); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, waitFired(ctx, r, c, targets, before))
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
		return []string{l}, err
	case targetFollower:
		f, err := r.Follower(ctx)
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

// waitFired waits until the failpoint fired on every target: for a panic, the target's
// container restarted in the same pod; for anything else, its count rose, after which it is
// held for c.hold and turned off.
func waitFired(ctx context.Context, r *framework.Run, c failpointCase, targets []string, before map[string]framework.MemberPod) error {
	if c.action == "panic" {
		err := r.WaitFor(ctx, fmt.Sprintf("%s=panic to fire on %s (its container restarting)", c.failpoint, strings.Join(targets, ", ")), failpointTimeout, func() error {
			now, err := r.MemberPods(ctx)
			if err != nil {
				return err
			}
			var waiting []string
			for _, m := range targets {
				b, a := before[m], now[m]
				switch {
				case a.UID != b.UID:
					return fmt.Errorf("%s's pod was replaced before %s fired: the scenario shows nothing", m, c.failpoint)
				case a.Restarts <= b.Restarts:
					waiting = append(waiting, m)
				}
			}
			if len(waiting) > 0 {
				return fmt.Errorf("not fired yet on %s", strings.Join(waiting, ", "))
			}
			return nil
		})
		if err == nil {
			r.T.Logf("%s=panic fired on %s: each container restarted", c.failpoint, strings.Join(targets, ", "))
		}
		return err
	}
	err := r.WaitFor(ctx, fmt.Sprintf("%s=%s to fire on %s", c.failpoint, c.action, strings.Join(targets, ", ")), failpointTimeout, func() error {
		for _, m := range targets {
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
	r.Hold(ctx, c.hold)
	var errs []error
	for _, m := range targets {
		n, err := r.FailpointCount(ctx, m, c.failpoint)
		if err == nil {
			r.T.Logf("%s=%s fired %d times on %s in %s", c.failpoint, c.action, n, m, c.hold)
		}
		errs = append(errs, r.DisarmFailpoint(ctx, m, c.failpoint))
	}
	return errors.Join(errs...)
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
