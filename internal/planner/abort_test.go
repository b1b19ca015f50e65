package planner

import (
	"reflect"
	"slices"
	"testing"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/quorum"
)

// midJoin is a join between the promotions and the go-ahead: the operator's 3 voters c-0..c-2
// beside the external vm-0..vm-2, vm-0 leading.
func midJoin(mods ...func(*State)) State {
	s := toJoin(external(3), func(j *Join) { j.Started = true })
	s.ClusterID = cid
	for i := 0; i < 3; i++ {
		s.Members = append(s.Members, healthy(i))
	}
	for _, f := range mods {
		f(&s)
	}
	return s
}

func withLearner(s *State) {
	m := healthy(3)
	m.Learner = true
	s.Members = append(s.Members, m)
}

const abortForce = "to delete the EtcdCluster anyway, remove its members from the external cluster yourself (etcdctl member remove, one at a time), then the finalizer etcd.quorate.dev/join (kubectl patch etcdcluster <name> --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'); removing the finalizer first deletes pods that still vote, and the external cluster loses its quorum unless its healthy members alone are a majority of all the voters"

func TestPlanAbort(t *testing.T) {
	blocked := "the EtcdCluster is being deleted before its join completed, and its members stay in the external cluster until they are removed one at a time: "
	for _, tc := range []struct {
		name  string
		state State
		want  Action
	}{
		{"a voter of the operator's leads: leadership moves out first", midJoin(func(s *State) { s.LeaderID = 101 }),
			Action{Kind: MoveLeader, Member: "c-1", ID: 101, Target: extLeader, TargetName: "vm-0", Reason: v1alpha1.ReasonJoinAborting,
				Message: "aborting the join: moving leadership from c-1 to external member vm-0 (b) before removing the operator's voters"}},
		{"a learner goes before any voter, whoever leads", midJoin(withLearner, func(s *State) { s.LeaderID = 101 }),
			Action{Kind: Remove, Member: "c-3", ID: 103, Reason: v1alpha1.ReasonJoinAborting,
				Message: "aborting the join: removing learner c-3 from the external cluster (4 of the operator's members are in it)"}},
		{"an external leader: the highest voter of the operator's goes", midJoin(),
			Action{Kind: Remove, Member: "c-2", ID: 102, Reason: v1alpha1.ReasonJoinAborting,
				Message: "aborting the join: removing member c-2 from the external cluster (3 of the operator's members are in it)"}},
		{"an unhealthy voter of the operator's goes before a healthy one", midJoin(func(s *State) { s.Members[0].Reachable = false }),
			Action{Kind: Remove, Member: "c-0", ID: 100, Reason: v1alpha1.ReasonJoinAborting,
				Message: "aborting the join: removing member c-0 from the external cluster (3 of the operator's members are in it)"}},
		{"the last one", midJoin(func(s *State) { s.Members = s.Members[:1] }),
			Action{Kind: Remove, Member: "c-0", ID: 100, Reason: v1alpha1.ReasonJoinAborting,
				Message: "aborting the join: removing member c-0 from the external cluster (the last of the operator's members in it)"}},
		{"an unhealthy external member blocks voters", midJoin(func(s *State) {
			s.Join.External[2].Reachable, s.Join.External[2].Problem = false, "10.0.0.7:2379: i/o timeout"
		}),
			Action{Kind: Wait, Reason: v1alpha1.ReasonJoinAbortBlocked, Attention: true,
				Message: blocked + "external member vm-2 (d) does not answer (10.0.0.7:2379: i/o timeout), and removing a voter of the operator's could leave the external cluster without a quorum; the abort goes on once it is healthy, or once it is removed with etcdctl member remove; " + abortForce}},
		{"but not learners", midJoin(withLearner, func(s *State) { s.Join.External[2].Reachable = false }),
			Action{Kind: Remove, Member: "c-3", ID: 103, Reason: v1alpha1.ReasonJoinAborting,
				Message: "aborting the join: removing learner c-3 from the external cluster (4 of the operator's members are in it)"}},
		{"an unreadable member list blocks everything", midJoin(func(s *State) {
			s.EtcdReachable, s.Join.Unreachable, s.Join.External = false, "10.0.0.5:2379: connection refused", nil
		}),
			Action{Kind: Wait, Reason: v1alpha1.ReasonJoinAbortBlocked, Attention: true,
				Message: blocked + "the member list cannot be read (10.0.0.5:2379: connection refused), so nothing is removed; the abort goes on once the external cluster answers; " + abortForce}},
		{"paused", midJoin(func(s *State) { s.Paused = true }),
			Action{Kind: Wait, Reason: v1alpha1.ReasonPaused, Message: "spec.paused is true: the abort of the join waits, and the EtcdCluster stays; set it to false to go on"}},
		{"no leader", midJoin(func(s *State) { s.LeaderID = 0 }),
			Action{Kind: Wait, Reason: v1alpha1.ReasonJoinAborting, Message: "aborting the join: waiting for a leader before removing a voter of the operator's"}},
		{"none of the operator's members left", midJoin(func(s *State) {
			for i := range s.Members {
				s.Members[i].InEtcd = false
			}
		}),
			Action{Kind: Finish, Reason: v1alpha1.ReasonJoinAborting,
				Message: "the join was aborted: none of the operator's members is left in the external cluster, whose 3 members remain; the EtcdCluster, its pods and volumes go"}},
		{"no external voter left: the cluster is the operator's", midJoin(func(s *State) { s.Join.External = nil }),
			Action{Kind: Finish, Reason: v1alpha1.ReasonJoinAborting,
				Message: "no external voter is left in the cluster: it is the operator's alone, and is deleted with the EtcdCluster as any other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PlanAbort(tc.state); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PlanAbort =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}

// TestAbortJourney aborts a join with a learner of the operator's and one of its voters
// leading: one change per step, the learner first, leadership out before any voter goes, and
// after every step a quorum of the voters is healthy and the leader is a voter.
func TestAbortJourney(t *testing.T) {
	x := &sim{s: midJoin(withLearner, func(s *State) { s.LeaderID = 100 })}
	for i := 0; ; i++ {
		if i > 20 {
			t.Fatalf("not finished after 20 steps; changes %v", x.changes)
		}
		a := PlanAbort(x.s)
		if a.Kind == Finish {
			break
		}
		if a.Kind != Remove && a.Kind != MoveLeader {
			t.Fatalf("step %d: %v", i, a)
		}
		before := len(x.changes)
		x.apply(t, a)
		if len(x.changes) != before+1 {
			t.Fatalf("step %d made %d changes", i, len(x.changes)-before)
		}
		voters, healthy, leaderVotes := 0, 0, false
		for _, m := range x.s.voters() {
			voters++
			if m.Healthy(cid) {
				healthy++
			}
			leaderVotes = leaderVotes || m.ID == x.s.LeaderID
		}
		for _, e := range x.s.Join.External {
			voters++
			healthy++
			leaderVotes = leaderVotes || e.ID == x.s.LeaderID
		}
		if healthy < quorum.Of(voters) || !leaderVotes {
			t.Fatalf("after %v: %d of %d voters healthy, leader %d a voter: %v", x.changes, healthy, voters, x.s.LeaderID, leaderVotes)
		}
	}
	want := []string{"remove c-3", "move-leader vm-0", "remove c-2", "remove c-1", "remove c-0"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Errorf("changes = %v, want %v", x.changes, want)
	}
	if slices.ContainsFunc(x.s.Members, func(m Member) bool { return m.InEtcd }) {
		t.Errorf("members of the operator's left in etcd: %+v", x.s.Members)
	}
}
