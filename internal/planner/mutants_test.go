//go:build mutants

package planner

import (
	"reflect"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/mutant"
)

// Each planner mutant changes the plan (the rule list, before republish) of a state where the bug would show: the test plans the
// state without the mutant and with it, and compares both whole Actions. A mutant that changed
// nothing here would be dead code.
func TestPlannerMutantsAreLive(t *testing.T) {
	outdated := func(m *Member) { m.PodCurrent = false }
	unreachableMember := func(m *Member) { m.Reachable, m.HasLeader = false, false }
	learner := func(m *Member) { *m = healthy(m.Index); m.Learner = true; m.PVCHasData = false }
	for _, tc := range []struct {
		mutant       string
		state        State
		want, mutate Action
	}{{
		mutant: "replace-remove-first",
		state:  running(3, member(1, func(m *Member) { m.PVCTerminating = true })),
		want: Action{Kind: AddLearner, Reason: v1alpha1.ReasonReplacingMember, Attention: true,
			Message: "adding a member to replace c-1, whose volume is being deleted; it keeps serving until its replacement votes"},
		mutate: Action{Kind: Remove, Member: "c-1", ID: 101, Reason: v1alpha1.ReasonReplacingMember,
			Message: "removing c-1, whose volume is being deleted, now that its replacement votes"},
	}, {
		mutant: "skip-leader-move", // the leader's pod is the one left to roll
		state:  running(3, member(0, outdated, drained)),
		want: Action{Kind: MoveLeader, Member: "c-0", ID: 100, Target: 101, TargetName: "c-1", Reason: v1alpha1.ReasonRollingUpdate,
			Message: "moving leadership from c-0 to c-1 before replacing its pod"},
		mutate: Action{Kind: DeletePod, Member: "c-0", Reason: v1alpha1.ReasonRollingUpdate, Message: "replacing the pod of c-0 to apply the new spec"},
	}, {
		mutant: "skip-leader-move", // the leader is the voter a scale-down removes
		state:  running(3, replicas(2), func(s *State) { s.LeaderID = 102 }),
		want: Action{Kind: MoveLeader, Member: "c-2", ID: 102, Target: 100, TargetName: "c-0", Reason: v1alpha1.ReasonScaling,
			Message: "moving leadership from c-2 to c-0 before removing it"},
		mutate: Action{Kind: Remove, Member: "c-2", ID: 102, Reason: v1alpha1.ReasonScaling,
			Message: "scaling down from 3 to 2 voting members: removing c-2"},
	}, {
		mutant: "add-two-learners",
		state:  running(3, replicas(5), member(3, learner)),
		want:   Action{Kind: Promote, Member: "c-3", ID: 103, Reason: v1alpha1.ReasonScaling, Message: "promoting learner c-3 to voter"},
		mutate: Action{Kind: AddLearner, Reason: v1alpha1.ReasonScaling, Message: "adding a second learner"},
	}, {
		mutant: "promote-before-caught-up",
		state: running(3, replicas(4), member(3, learner, func(m *Member) {
			m.Started, m.Reachable, m.HasLeader, m.ReadyFor = false, false, false, 0
		})),
		want: Action{Kind: Wait, Member: "c-3", Reason: v1alpha1.ReasonMemberUnhealthy,
			Message: "member c-3 has not started yet; membership changes wait until every member is healthy"},
		mutate: Action{Kind: Promote, Member: "c-3", ID: 103, Reason: v1alpha1.ReasonScaling, Message: "promoting learner c-3 to voter"},
	}, {
		mutant: "skip-cluster-id-check",
		state:  running(3, member(2, func(m *Member) { m.ClusterID = 0xbad })),
		want: Action{Kind: Halt, Member: "c-2", Reason: v1alpha1.ReasonClusterIDMismatch, Attention: true,
			Message: "member c-2 reports cluster ID bad but this cluster is c1: membership changes are stopped; find out where the member's data came from, then delete its Pod and PVC so it is replaced"},
		mutate: Action{Kind: Wait, Member: "c-2", Reason: v1alpha1.ReasonMemberUnhealthy,
			Message: "member c-2 does not answer; membership changes wait until every member is healthy"},
	}, {
		mutant: "delete-voter-pvc",
		state:  running(3, member(1, func(m *Member) { m.HasPod, m.ReadyFor = false, 0 })),
		want:   Action{Kind: CreatePod, Member: "c-1", RequireData: true, Reason: v1alpha1.ReasonMembersCreating, Message: "creating the pod of member c-1"},
		mutate: Action{Kind: DeletePVC, Member: "c-1", Reason: v1alpha1.ReasonGarbage, Message: "deleting the volume of c-1, which has no pod"},
	}, {
		mutant: "roll-two-at-once", // c-2 was replaced with the new spec and has not come back
		state: running(3, member(0, outdated), member(1, outdated, drained), member(2, func(m *Member) {
			m.Reachable, m.HasLeader, m.ReadyFor, m.PodAge = false, false, 0, time.Second
		})),
		want: Action{Kind: Wait, Member: "c-2", Reason: v1alpha1.ReasonMemberUnhealthy,
			Message: "member c-2 does not answer; membership changes wait until every member is healthy"},
		mutate: Action{Kind: DeletePod, Member: "c-1", Reason: v1alpha1.ReasonRollingUpdate, Message: "replacing the pod of c-1 to apply the new spec"},
	}, {
		mutant: "force-without-fence", // c-0 and c-2 run where the operator cannot reach them
		state: running(3, member(0, unreachableMember), member(2, unreachableMember), func(s *State) {
			s.EtcdReachable, s.LeaderID = false, 0
			s.Recovery = Recovery{Requested: "incident-1", Token: "incident-1", Phase: v1alpha1.RecoveryRestarting, Member: "c-1"}
		}),
		want: Action{Kind: Fence, Member: "c-0", Token: "incident-1", Reason: v1alpha1.ReasonRecovery,
			Message: "fencing c-0 before c-1 is forced to lead alone: its volume is marked so that it never runs again"},
		mutate: Action{Kind: MarkRecovered, Member: "c-1", Token: "incident-1", Reason: v1alpha1.ReasonRecovery,
			Message: "recording the recovery \"incident-1\" on the volume of c-1 before it is forced"},
	}} {
		t.Run(tc.mutant, func(t *testing.T) {
			if got := plan(tc.state, name); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("without the mutant:\n got %#v\nwant %#v", got, tc.want)
			}
			defer mutant.Set(tc.mutant)()
			if got := plan(tc.state, name); !reflect.DeepEqual(got, tc.mutate) {
				t.Fatalf("with %s:\n got %#v\nwant %#v", tc.mutant, got, tc.mutate)
			}
		})
	}
}
