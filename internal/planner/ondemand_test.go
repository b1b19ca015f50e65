package planner

import (
	"reflect"
	"testing"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

func defragNowReq(token string, done ...string) func(*State) {
	return func(s *State) { s.DefragNow = &DefragRequest{Token: token, Done: done} }
}

func moveLeaderReq(token, to string) func(*State) {
	return func(s *State) { s.MoveLeaderNow = &LeaderRequest{Token: token, To: to} }
}

func learner(m *Member) { m.Learner = true }

// spec.maintenance.defragNow: every healthy voter once, whatever its free pages, followers
// first, the leader last after leadership moved away; the members done are not done again.
func TestDefragNow(t *testing.T) {
	settled := Action{Kind: None, Reason: v1alpha1.ReasonSettled, Message: "3 healthy voting members"}
	for _, tc := range []struct {
		name  string
		state State
		want  Action
	}{
		{"the first follower first, though it has no free pages", running(3, defragNowReq("d1")),
			Action{Kind: Defragment, Member: "c-1", Token: "d1", Reason: v1alpha1.ReasonDefragmenting,
				Message: `defragmenting c-1 (0 of 3 members done), as spec.maintenance.defragNow "d1" asks`}},
		{"then the next follower", running(3, defragNowReq("d1", "c-1")),
			Action{Kind: Defragment, Member: "c-2", Token: "d1", Reason: v1alpha1.ReasonDefragmenting,
				Message: `defragmenting c-2 (1 of 3 members done), as spec.maintenance.defragNow "d1" asks`}},
		{"the leader last: leadership moves to a healthy voter first", running(3, defragNowReq("d1", "c-1", "c-2")),
			Action{Kind: MoveLeader, Member: "c-0", ID: 100, Target: 101, TargetName: "c-1", Reason: v1alpha1.ReasonDefragmenting,
				Message: "moving leadership from c-0 to c-1 before defragmenting it (spec.maintenance.defragNow)"}},
		{"the old leader, now a follower", running(3, defragNowReq("d1", "c-1", "c-2"), func(s *State) { s.LeaderID = 101 }),
			Action{Kind: Defragment, Member: "c-0", Token: "d1", Reason: v1alpha1.ReasonDefragmenting,
				Message: `defragmenting c-0 (2 of 3 members done), as spec.maintenance.defragNow "d1" asks`}},
		{"every member done: the plan settles, and the round completes", running(3, defragNowReq("d1", "c-1", "c-2", "c-0"), func(s *State) { s.LeaderID = 101 }),
			settled},
		{"a member done is not done again though its free pages grew", running(3, defragNowReq("d1", "c-1", "c-2", "c-0"),
			member(1, func(m *Member) { m.DBSize, m.DBSizeInUse = 100<<20, 1<<20 })),
			settled},
		{"a one-member cluster's leader is defragmented where it leads", running(1, defragNowReq("d1")),
			Action{Kind: Defragment, Member: "c-0", Token: "d1", Reason: v1alpha1.ReasonDefragmenting,
				Message: `defragmenting c-0 (0 of 1 members done), as spec.maintenance.defragNow "d1" asks`}},
		{"it waits while a member is unhealthy", running(3, defragNowReq("d1"), member(1, func(m *Member) { m.Reachable = false })),
			Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonMemberUnhealthy,
				Message: `member c-1 does not answer; membership changes wait until every member is healthy; the defragmentation asked for (spec.maintenance.defragNow "d1") waits for a settled cluster`}},
		{"it waits while paused, and says so", running(3, defragNowReq("d1"), func(s *State) { s.Paused = true }),
			Action{Kind: Wait, Reason: v1alpha1.ReasonPaused,
				Message: `spec.paused is true: the operator makes no changes; set it to false to resume; the defragmentation asked for (spec.maintenance.defragNow "d1") waits for a settled cluster: resume it (spec.paused false) first`}},
		{"a hibernated cluster defragments nobody, and says why", running(3, defragNowReq("d1"), hibernating, allStopped),
			Action{Kind: Wait, Reason: v1alpha1.ReasonHibernated,
				Message: `hibernated: every member pod is stopped; the volumes, Secrets, Services and membership are kept, and other spec changes wait; set spec.hibernate to false to wake the cluster; the defragmentation asked for (spec.maintenance.defragNow "d1") waits for a settled cluster: wake it (spec.hibernate false) first`}},
		{"a scale-up goes first", running(3, replicas(5), defragNowReq("d1")),
			Action{Kind: AddLearner, Reason: v1alpha1.ReasonScaling, Message: "scaling up from 3 to 5 voting members"}},
		{"it goes before a scheduled round", running(3, defragNowReq("d1"), func(s *State) { s.Defrag = Defrag{Due: true, MinFree: 1} },
			member(2, func(m *Member) { m.DBSize = 100 << 20 })),
			Action{Kind: Defragment, Member: "c-1", Token: "d1", Reason: v1alpha1.ReasonDefragmenting,
				Message: `defragmenting c-1 (0 of 3 members done), as spec.maintenance.defragNow "d1" asks`}},
	} {
		if got := Plan(tc.state, name); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func TestDefragRoundComplete(t *testing.T) {
	s := running(3, defragNowReq("d1", "c-0", "c-1", "c-2"))
	if a := Plan(s, name); !DefragRoundComplete(s, a) {
		t.Errorf("every member done, plan %+v: the round should complete", a)
	}
	s = running(3, defragNowReq("d1", "c-1"))
	if a := Plan(s, name); DefragRoundComplete(s, a) {
		t.Errorf("c-0 and c-2 left, plan %+v: the round should not complete", a)
	}
	s = running(3, defragNowReq("d1"), hibernating, allStopped)
	if a := Plan(s, name); DefragRoundComplete(s, a) {
		t.Errorf("hibernated, plan %+v: a round must not complete with nobody defragmented", a)
	}
	s = running(3)
	if a := Plan(s, name); DefragRoundComplete(s, a) {
		t.Errorf("no request, plan %+v: nothing to complete", a)
	}
}

// spec.maintenance.moveLeader: to a named healthy voter, or any other healthy voter; refused
// (and recorded) when it cannot be met; answered at once when the member leads already.
func TestMoveLeaderNow(t *testing.T) {
	refused := func(to, msg string) Action {
		return Action{Kind: AnswerMoveLeader, Phase: v1alpha1.LeaderMoveRefused, Member: "c-0", TargetName: to, Token: "m1",
			Reason: v1alpha1.ReasonLeaderMoveRefused, Message: msg}
	}
	for _, tc := range []struct {
		name  string
		state State
		want  Action
	}{
		{"to the member named", running(3, moveLeaderReq("m1", "c-2")),
			Action{Kind: MoveLeader, Member: "c-0", ID: 100, Target: 102, TargetName: "c-2", Token: "m1", Reason: v1alpha1.ReasonMovingLeader,
				Message: `moving leadership from c-0 to c-2 as spec.maintenance.moveLeader "m1" asks`}},
		{"without a member named, to the first other healthy voter", running(3, moveLeaderReq("m1", ""), func(s *State) { s.LeaderID = 101 }),
			Action{Kind: MoveLeader, Member: "c-1", ID: 101, Target: 100, TargetName: "c-0", Token: "m1", Reason: v1alpha1.ReasonMovingLeader,
				Message: `moving leadership from c-1 to c-0 as spec.maintenance.moveLeader "m1" asks`}},
		{"the member named leads already", running(3, moveLeaderReq("m1", "c-0")),
			Action{Kind: AnswerMoveLeader, Phase: v1alpha1.LeaderMoveAlreadyLeader, Member: "c-0", TargetName: "c-0", Token: "m1", Reason: v1alpha1.ReasonMovingLeader,
				Message: `c-0 is the leader already: nothing to move (spec.maintenance.moveLeader "m1")`}},
		{"an unknown member is refused", running(3, moveLeaderReq("m1", "c-7")),
			refused("c-7", `spec.maintenance.moveLeader "m1" is refused: c-7 is no member of this cluster; name a healthy voter in moveLeader.to (healthy voters: c-0, c-1, c-2); set a new token to ask again`)},
		{"a one-member cluster is refused", running(1, moveLeaderReq("m1", "")),
			refused("", `spec.maintenance.moveLeader "m1" is refused: no healthy voting member other than the leader c-0 can take over (healthy voters: c-0); scale the cluster up first; set a new token to ask again`)},
		{"it waits while a learner catches up (the learner is promoted first)", running(3, replicas(4), moveLeaderReq("m1", "c-3"), member(3, func(m *Member) { *m = healthy(3); m.Learner = true })),
			Action{Kind: Promote, Member: "c-3", ID: 103, Reason: v1alpha1.ReasonScaling, Message: "promoting learner c-3 to voter"}},
		{"it waits while a member is fenced, and says so", running(3, moveLeaderReq("m1", "c-2"), fenceRequest("c-2"), member(2, userFenced)),
			Action{Kind: Wait, Reason: v1alpha1.ReasonWaitingForUnfence,
				Message: `c-2 is fenced at the user's request: membership changes, rolling updates, repairs and recoveries wait; remove it from the annotation etcd.quorate.dev/fence-members to unfence; the leadership transfer asked for (spec.maintenance.moveLeader "m1") waits for a settled cluster`}},
		{"both asked for: the transfer first", running(3, moveLeaderReq("m1", "c-1"), defragNowReq("d1")),
			Action{Kind: MoveLeader, Member: "c-0", ID: 100, Target: 101, TargetName: "c-1", Token: "m1", Reason: v1alpha1.ReasonMovingLeader,
				Message: `moving leadership from c-0 to c-1 as spec.maintenance.moveLeader "m1" asks`}},
	} {
		if got := Plan(tc.state, name); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// The refusals a settled cluster cannot reach through Plan (the gates wait for learners,
// unhealthy and fenced members first) are still refusals of the rule itself.
func TestMoveLeaderNowRefusesNonVoters(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Member)
		want string
	}{
		{"learner", learner, `spec.maintenance.moveLeader "m1" is refused: c-2 is not a voting member (a learner, or not in etcd's member list yet); name a healthy voter (healthy voters: c-0, c-1), or wait until it votes; set a new token to ask again`},
		{"fenced", userFenced, `spec.maintenance.moveLeader "m1" is refused: c-2 is fenced at the user's request: its etcd is stopped; unfence it first; set a new token to ask again`},
		{"unhealthy", func(m *Member) { m.Reachable = false }, `spec.maintenance.moveLeader "m1" is refused: c-2 is not healthy; name a healthy voter (healthy voters: c-0, c-1); set a new token to ask again`},
	} {
		s := running(3, moveLeaderReq("m1", "c-2"), member(2, tc.mod))
		got, ok := moveLeaderNow(s)
		want := Action{Kind: AnswerMoveLeader, Phase: v1alpha1.LeaderMoveRefused, Member: "c-0", TargetName: "c-2", Token: "m1",
			Reason: v1alpha1.ReasonLeaderMoveRefused, Message: tc.want}
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v, %t\nwant %+v", tc.name, got, ok, want)
		}
	}
}
