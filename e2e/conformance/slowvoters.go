package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/names"
)

// slowVoterSleep is how long each of the two stalled voters' etcd sleeps before it saves each
// batch of raft entries (raftBeforeSave): it sends its messages (acknowledgements, read
// requests) only after, so a linearizable read through it takes at least that long, past the
// operator's 2 s probe, and a commit that needs its acknowledgement waits as long, past the
// workload's 2 s request timeout. Its connections stay up and it answers for its status at
// once: etcd's --strict-reconfig-check counts it as active, and the pass's observation as
// healthy.
const slowVoterSleep = "sleep(3000)"

// SlowVotersScaleDown (failpoint-slow-voters-scale-down): 5 members scale to 4 while two of
// the four that would stay are stalled (raftBeforeSave=sleep(3000) on each): connected and
// answering for their status, but too slow to acknowledge anything. Removing the fifth would
// leave 4 voters of which only 2 keep up, no quorum for any write; the operator's probe
// before the removal (a linearizable read through each voter that stays) must refuse it:
// Progressing=QuorumAtRisk naming both, and the fifth still a voter 15 s of stall later. Once
// they are released, the removal goes ahead. The mutant remove-without-quorum-probe removes it at once.
func SlowVotersScaleDown(opts *framework.Options) framework.Scenario {
	var victim string
	var stalled []string
	// The partition class: two of five members answer nothing in time, as if cut off, and the
	// workload's requests through them time out.
	return framework.Scenario{Name: "failpoint-slow-voters-scale-down", Replicas: 5, Class: framework.Partition,
		Labels: map[string]string{label.Suite: label.SuiteFailpoints, label.Failpoint: "raftBeforeSave", label.Operation: "scale"},
		Needs:  []framework.Prerequisite{framework.FailpointImage},
		Spec: func(s *v1alpha1.EtcdClusterSpec) {
			s.Image = opts.FailpointImage
			// The suite reaches failpoint control on port 22381, which the cluster's
			// NetworkPolicy does not admit.
			s.NetworkPolicy.Enabled = ptr.To(false)
		},
		Steps: []framework.Step{
			{Name: "choose two followers to stall, leadership away from the member a scale-down removes", Do: func(ctx context.Context, r *framework.Run) error {
				var err error
				victim, stalled, err = slowVoterTargets(ctx, r)
				return err
			}},
			{Name: "scale 5 -> 4 while two of the four that stay are stalled: the removal waits", Do: func(ctx context.Context, r *framework.Run) error {
				return scaleDownPastSlowVoters(ctx, r, victim, stalled)
			}},
			waitSettled(4),
		}}
}

// slowVoterTargets names the member a scale-down of 5 removes (the highest index), moving
// leadership off it first, and two followers among the others.
func slowVoterTargets(ctx context.Context, r *framework.Run) (string, []string, error) {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return "", nil, err
	}
	highest := -1
	for _, m := range ec.Status.Members {
		if i, ok := names.MemberIndex(r.Cluster, m.Name); ok && i > highest {
			highest = i
		}
	}
	if len(ec.Status.Members) != 5 || highest < 0 {
		return "", nil, fmt.Errorf("status.members %v: want the 5 members of a new cluster", ec.Status.Members)
	}
	victim := names.Member(r.Cluster, highest)
	if ec.Status.Leader == victim {
		to := names.Member(r.Cluster, 0)
		if err := moveLeaderTo(ctx, r, fmt.Sprintf("slow-voters-%d", time.Now().Unix()), to); err != nil {
			return "", nil, err
		}
		if ec, err = r.GetCluster(ctx); err != nil {
			return "", nil, err
		}
	}
	var stalled []string
	for _, m := range ec.Status.Members {
		if m.Name != victim && m.Name != ec.Status.Leader && !m.Learner && len(stalled) < 2 {
			stalled = append(stalled, m.Name)
		}
	}
	if len(stalled) != 2 || ec.Status.Leader == "" || ec.Status.Leader == victim {
		return "", nil, fmt.Errorf("leader %q, the scale-down removes %s, followers to stall %v: want a leader that is not removed and two other followers", ec.Status.Leader, victim, stalled)
	}
	r.T.Logf("the scale-down removes %s; %s leads; stalling %s", victim, ec.Status.Leader, strings.Join(stalled, " and "))
	return victim, stalled, nil
}

// scaleDownPastSlowVoters stalls both members, asks for 4 members and waits for the
// operator's refusal; the victim must still be a voter then. The stalls end however the step
// does.
func scaleDownPastSlowVoters(ctx context.Context, r *framework.Run, victim string, stalled []string) error {
	defer func() {
		for _, m := range stalled {
			if err := r.DisarmFailpoint(context.WithoutCancel(ctx), m, "raftBeforeSave"); err != nil {
				r.T.Logf("turning raftBeforeSave off on %s: %v", m, err)
			}
		}
	}()
	for _, m := range stalled {
		if err := r.ArmFailpoint(ctx, m, "raftBeforeSave", slowVoterSleep); err != nil {
			return err
		}
	}
	if err := r.WaitFor(ctx, "raftBeforeSave to fire on "+strings.Join(stalled, " and "), time.Minute, func() error {
		for _, m := range stalled {
			if n, err := r.FailpointCount(ctx, m, "raftBeforeSave"); err != nil || n == 0 {
				return fmt.Errorf("not fired yet on %s (%v)", m, err)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := r.SetReplicas(ctx, 4); err != nil {
		return err
	}
	var refusal string
	err := r.WaitFor(ctx, "Progressing=QuorumAtRisk: the removal of "+victim+" waits", 3*time.Minute, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		if !isVoter(ec, victim) {
			return fmt.Errorf("%w: %s was removed while %s were stalled: 4 voters of which 2 keep up have no quorum", framework.ErrStop, victim, strings.Join(stalled, " and "))
		}
		p := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionProgressing)
		if p == nil || p.Reason != v1alpha1.ReasonQuorumAtRisk {
			return fmt.Errorf("condition Progressing is %v", p)
		}
		refusal = p.Message
		return nil
	})
	if err != nil {
		return err
	}
	var unnamed []string
	for _, m := range stalled {
		if !strings.Contains(refusal, " "+m+" (") {
			unnamed = append(unnamed, m)
		}
	}
	if !strings.HasPrefix(refusal, "not removing member "+victim+" yet: ") || len(unnamed) > 0 {
		return errors.New("Progressing=QuorumAtRisk does not say that the removal of " + victim + " waits for " + strings.Join(unnamed, " and ") + ": " + refusal)
	}
	r.T.Logf("the removal waits: %s", refusal)
	return holdStall(ctx, r, victim, stalled)
}

// holdStall: a probe that refused once must go on refusing. The stall is kept for
// slowVoterHold more, through the operator's next probes (after 2, 4 and 8 s); the victim must
// stay a voter, the operator keep seeing a quorum, and Progressing still say QuorumAtRisk at
// the end.
func holdStall(ctx context.Context, r *framework.Run, victim string, stalled []string) error {
	held := time.Now()
	err := r.WaitFor(ctx, fmt.Sprintf("%s to stay a voter for %s of stall after the refusal", victim, slowVoterHold), slowVoterHold+time.Minute, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		if !isVoter(ec, victim) {
			return fmt.Errorf("%w: %s was removed %s after the operator refused to, while %s were still stalled", framework.ErrStop, victim, time.Since(held).Round(time.Second), strings.Join(stalled, " and "))
		}
		// Without a member list the status keeps the members it had: a removal that lost
		// quorum would leave the victim listed. The operator, listing through the leader,
		// keeps seeing the cluster while the removal waits.
		if d := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionDegraded); d != nil && d.Reason == v1alpha1.ReasonEtcdUnreachable {
			return fmt.Errorf("%w: the operator sees no quorum %s after it refused the removal of %s: %s", framework.ErrStop, time.Since(held).Round(time.Second), victim, d.Message)
		}
		if time.Since(held) < slowVoterHold {
			return fmt.Errorf("%s held of %s", time.Since(held).Round(time.Second), slowVoterHold)
		}
		// And it still refuses, at the end of the hold.
		if p := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionProgressing); p == nil || p.Reason != v1alpha1.ReasonQuorumAtRisk {
			return fmt.Errorf("condition Progressing is %v after %s of stall", p, slowVoterHold)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.T.Logf("%s was still a voter after %s more of stall", victim, slowVoterHold)
	return nil
}

// isVoter: the cluster's status lists member name as a voter.
func isVoter(ec *v1alpha1.EtcdCluster, name string) bool {
	return slices.ContainsFunc(ec.Status.Members, func(m v1alpha1.MemberStatus) bool { return m.Name == name && !m.Learner })
}

// slowVoterHold is how long the stall is kept once the operator refused the removal.
const slowVoterHold = 15 * time.Second
