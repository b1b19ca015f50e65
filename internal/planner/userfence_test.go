package planner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// fenceRequest asks to fence the members; every pod runs a launcher that fences.
func fenceRequest(names ...string) func(*State) {
	return func(s *State) {
		s.FenceRequested = names
		for i := range s.Members {
			s.Members[i].LauncherFences = s.Members[i].HasPod
		}
	}
}

// oldLauncher is a member whose pod predates fencing.
func oldLauncher(m *Member) { m.LauncherFences = false }

// userFenced is a member whose pod carries the stop annotation: its etcd no longer answers.
func userFenced(m *Member) {
	m.UserFenced = true
	m.Reachable, m.HasLeader, m.ReadyFor = false, false, 0
}

// down is a member that stopped answering.
func down(m *Member) { m.Reachable, m.HasLeader, m.ReadyFor = false, false, 0 }

func TestPlanUserFence(t *testing.T) {
	for _, tc := range []struct {
		name    string
		state   State
		want    Action
		refusal string
	}{
		{
			name:  "a follower of three is fenced",
			state: running(3, fenceRequest("c-2")),
			want: Action{Kind: FenceMember, Member: "c-2", Reason: v1alpha1.ReasonFencing,
				Message: "fencing c-2 at the user's request (etcd.quorate.dev/fence-members): its etcd stops, its pod stays"},
		},
		{
			name:  "the leader may be fenced: its launcher hands leadership over first",
			state: running(3, fenceRequest("c-0")),
			want: Action{Kind: FenceMember, Member: "c-0", Reason: v1alpha1.ReasonFencing,
				Message: "fencing c-0 at the user's request (etcd.quorate.dev/fence-members): its etcd stops, its pod stays"},
		},
		{
			name:  "refused when another of three is down already",
			state: running(3, fenceRequest("c-2"), member(1, down)),
			want: Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonMemberUnhealthy,
				Message: "member c-1 does not answer; membership changes wait until every member is healthy"},
			refusal: "fencing c-2 is refused: it would leave 1 healthy, unfenced voter(s) of 3 (c-0), fewer than a quorum of 2; unhealthy or stopping: c-1; bring the unhealthy members back, or unfence others first",
		},
		{
			name:  "refused while another of three is stopping (its pod terminating, still answering)",
			state: running(3, fenceRequest("c-2"), member(1, func(m *Member) { m.PodTerminating = true })),
			want: Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonTerminating,
				Message: "waiting for the old pod of c-1 to terminate"},
			refusal: "fencing c-2 is refused: it would leave 1 healthy, unfenced voter(s) of 3 (c-0), fewer than a quorum of 2; unhealthy or stopping: c-1; bring the unhealthy members back, or unfence others first",
		},
		{
			name:  "a second fence of three is refused, the first holds the other steps",
			state: running(3, fenceRequest("c-1", "c-2"), member(1, userFenced)),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonWaitingForUnfence,
				Message: "c-1 is fenced at the user's request: membership changes, rolling updates, repairs and recoveries wait; remove it from the annotation etcd.quorate.dev/fence-members to unfence"},
			refusal: "fencing c-2 is refused: it would leave 1 healthy, unfenced voter(s) of 3 (c-0), fewer than a quorum of 2; fenced already: c-1; bring the unhealthy members back, or unfence others first",
		},
		{
			name:  "two of five may be fenced",
			state: running(5, fenceRequest("c-1", "c-2"), member(1, userFenced)),
			want: Action{Kind: FenceMember, Member: "c-2", Reason: v1alpha1.ReasonFencing,
				Message: "fencing c-2 at the user's request (etcd.quorate.dev/fence-members): its etcd stops, its pod stays"},
		},
		{
			name:    "refused for a pod whose launcher predates fencing",
			state:   running(3, fenceRequest("c-2"), member(2, oldLauncher)),
			want:    Action{Kind: None, Reason: v1alpha1.ReasonSettled, Message: "3 healthy voting members"},
			refusal: "fencing c-2 is refused: its pod was created by an operator release whose launcher cannot stop etcd for a fence; it gets one at its next roll, or delete the pod (it is recreated at once)",
		},
		{
			name:  "a name removed from the annotation is unfenced",
			state: running(3, member(2, userFenced)),
			want: Action{Kind: UnfenceMember, Member: "c-2", Reason: v1alpha1.ReasonUnfencing,
				Message: "unfencing c-2: it is no longer named in etcd.quorate.dev/fence-members; its etcd starts again"},
		},
		{
			name:  "unfencing needs no quorum check",
			state: running(3, member(1, down), member(2, userFenced)),
			want: Action{Kind: UnfenceMember, Member: "c-2", Reason: v1alpha1.ReasonUnfencing,
				Message: "unfencing c-2: it is no longer named in etcd.quorate.dev/fence-members; its etcd starts again"},
		},
		{
			name:    "an unknown name is refused, the cluster carries on",
			state:   running(3, fenceRequest("c-7")),
			want:    Action{Kind: None, Reason: v1alpha1.ReasonSettled, Message: "3 healthy voting members"},
			refusal: "c-7: no member of this cluster (its members: c-0, c-1, c-2); remove it from the annotation etcd.quorate.dev/fence-members",
		},
		{
			name:  "a fenced member is not replaced, and a scale-up waits",
			state: running(3, replicas(5), fenceRequest("c-2"), member(2, userFenced)),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonWaitingForUnfence,
				Message: "c-2 is fenced at the user's request: membership changes, rolling updates, repairs and recoveries wait; remove it from the annotation etcd.quorate.dev/fence-members to unfence"},
		},
		{
			name: "a fenced member whose pod was deleted gets it back fenced",
			state: running(3, fenceRequest("c-2"), member(2, func(m *Member) {
				userFenced(m)
				m.HasPod, m.PodCurrent, m.UserFenced = false, false, false
			})),
			want: Action{Kind: CreatePod, Member: "c-2", RequireData: true, UserFenced: true, Reason: v1alpha1.ReasonMembersCreating,
				Message: "creating the pod of member c-2, fenced (etcd.quorate.dev/fence-members names it)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, Plan(tc.state, name)); d != "" {
				t.Errorf("Plan (-want +got):\n%s", d)
			}
			if got := FenceRefusal(tc.state); got != tc.refusal {
				t.Errorf("FenceRefusal = %q\nwant %q", got, tc.refusal)
			}
		})
	}
}

func TestParseFenceMembers(t *testing.T) {
	if d := cmp.Diff([]string{"c-1", "c-2"}, ParseFenceMembers(" c-1,,c-2 , c-1")); d != "" {
		t.Error(d)
	}
	if got := ParseFenceMembers(""); got != nil {
		t.Errorf("ParseFenceMembers(\"\") = %q, want none", got)
	}
}
