package planner

import (
	"reflect"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

func hibernating(s *State) { s.Hibernate = true }

// stopped is a member whose pod was stopped for hibernation: its volume keeps its data.
func stopped(m *Member) {
	m.HasPod, m.Reachable, m.HasLeader, m.ReadyFor, m.RunningFor, m.PodAge = false, false, false, 0, 0, 0
}

func terminating(d time.Duration) func(*Member) {
	return func(m *Member) { m.PodTerminating, m.TerminatingFor = true, d }
}

// allStopped: every pod is gone and etcd does not answer.
func allStopped(s *State) {
	s.EtcdReachable, s.LeaderID = false, 0
	for i := range s.Members {
		stopped(&s.Members[i])
	}
}

func TestHibernate(t *testing.T) {
	const hibernated = "hibernated: every member pod is stopped; the volumes, Secrets, Services and membership are kept, and other spec changes wait; set spec.hibernate to false to wake the cluster"
	for _, tc := range []struct {
		name  string
		state State
		want  Action
	}{
		{name: "a follower stops first, and a pending scale-up waits", state: running(3, replicas(5), hibernating),
			want: Action{Kind: DeletePod, Member: "c-1", Reason: v1alpha1.ReasonHibernating,
				Message: "hibernating: stopping the pod of c-1 (3 member pods left, the leader last); its volume keeps its data"}},
		{name: "the leader is skipped wherever it is", state: running(3, hibernating, func(s *State) { s.LeaderID = 101 }),
			want: Action{Kind: DeletePod, Member: "c-0", Reason: v1alpha1.ReasonHibernating,
				Message: "hibernating: stopping the pod of c-0 (3 member pods left, the leader last); its volume keeps its data"}},
		{name: "one pod stops at a time", state: running(3, hibernating, member(1, terminating(5*time.Second))),
			want: Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonHibernating,
				Message: "hibernating: waiting for the pod of c-1 to stop before the next one (3 member pods left)"}},
		{name: "then the next follower", state: running(3, hibernating, member(1, stopped)),
			want: Action{Kind: DeletePod, Member: "c-2", Reason: v1alpha1.ReasonHibernating,
				Message: "hibernating: stopping the pod of c-2 (2 member pods left, the leader last); its volume keeps its data"}},
		{name: "the leader last, though quorum is lost: no repair, no removal", state: running(3, hibernating, member(1, stopped), member(2, stopped),
			func(s *State) { s.Members[0].HasLeader = false }),
			want: Action{Kind: DeletePod, Member: "c-0", Reason: v1alpha1.ReasonHibernating,
				Message: "hibernating: stopping the pod of the leader c-0, the last member pod; its volume keeps its data"}},
		{name: "without a leader known, in order", state: running(3, hibernating, member(1, stopped), func(s *State) { s.EtcdReachable, s.LeaderID = false, 0 }),
			want: Action{Kind: DeletePod, Member: "c-0", Reason: v1alpha1.ReasonHibernating,
				Message: "hibernating: stopping the pod of c-0 (2 member pods left, the leader last); its volume keeps its data"}},
		{name: "a pod stuck terminating is reported, after the others stopped", state: running(3, hibernating, member(1, stopped), member(2, stopped),
			member(0, terminating(10*time.Minute)), func(s *State) { s.EtcdReachable = false }),
			want: Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonHibernating, Attention: true,
				Message: "hibernating: the pod of c-0 has been terminating for 10m0s; its node may not answer: the cluster is hibernated once it is gone (delete it with --force only if its node is down for good)"}},
		{name: "a member whose volume does not record yet that it has run keeps its pod", state: running(3, hibernating, member(1, func(m *Member) { m.PVCHasData = false })),
			want: Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonHibernating,
				Message: "hibernating: waiting for the volume of c-1 to record that the member has run before its pod stops"}},
		{name: "hibernated: no member is restarted from its volume", state: running(3, hibernating, allStopped),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonHibernated, Message: hibernated}},
		{name: "hibernated: a new recovery token waits", state: running(3, hibernating, allStopped, func(s *State) { s.Recovery.Requested = "now" }),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonHibernated, Message: hibernated}},
		{name: "hibernated: a larger volume waits", state: running(3, hibernating, allStopped, member(0, expand)),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonHibernated, Message: hibernated}},
		{name: "paused wins", state: running(3, hibernating, func(s *State) { s.Paused = true }),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonPaused, Message: "spec.paused is true: the operator makes no changes; set it to false to resume"}},
		{name: "a cluster that never formed creates no member", state: State{Cluster: "c", Replicas: 3, Hibernate: true},
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonHibernated,
				Message: "spec.hibernate is true and the cluster has not formed: no member is created until it is set to false"}},
		{name: "bootstrap members already running finish forming the cluster", state: State{Cluster: "c", Replicas: 3, Hibernate: true,
			Members: []Member{{Name: "c-0", HasPVC: true, HasPod: true}, {Name: "c-1", Index: 1, HasPVC: true, HasPod: true}}},
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonHibernating,
				Message: "spec.hibernate is true, and the bootstrap members c-0, c-1 already run: no member is added; they stop once the cluster has formed and its ID is recorded"}},
		{name: "a join that has not completed holds hibernation", state: running(3, hibernating, func(s *State) { s.Join = &Join{} }),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonHibernating, Attention: true,
				Message: "spec.hibernate is not acted on while a join (spec.bootstrap.join) has not completed: the external members vote in the same cluster and would be left without the operator's members; complete the join first, or set spec.hibernate to false"}},
		{name: "a forced recovery under way completes first", state: running(3, hibernating, func(s *State) {
			s.Recovery = Recovery{Requested: "r1", Token: "r1", Phase: v1alpha1.RecoveryRejoining, Member: "c-0"}
		}),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonHibernating,
				Message: `hibernation waits for the forced recovery "r1" (phase Rejoining) to complete; spec.hibernate is acted on then`}},
		{name: "waking restarts members from their volumes, requiring their data", state: running(3, allStopped, func(s *State) { s.Waking = true }),
			want: Action{Kind: CreatePod, Member: "c-0", RequireData: true, Reason: v1alpha1.ReasonWaking,
				Message: "waking from hibernation: restarting member c-0 from its volume"}},
		{name: "waking: the next member", state: running(3, allStopped, member(0, func(m *Member) { m.HasPod = true }), func(s *State) { s.Waking = true }),
			want: Action{Kind: CreatePod, Member: "c-1", RequireData: true, Reason: v1alpha1.ReasonWaking,
				Message: "waking from hibernation: restarting member c-1 from its volume"}},
		{name: "waking: every pod is back, waiting for a leader is no lost quorum", state: running(3, func(s *State) { s.EtcdReachable, s.LeaderID, s.Waking = false, 0, true }),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonWaking,
				Message: "waking from hibernation: the members restarted from their volumes; waiting for them to elect a leader"}},
		{name: "waking: a member that does not start is reported", state: running(3, func(s *State) { s.EtcdReachable, s.LeaderID, s.Waking = false, 0, true },
			member(2, func(m *Member) { m.PodProblem = "its container etcd is in CrashLoopBackOff" })),
			want: Action{Kind: Wait, Member: "c-2", Reason: v1alpha1.ReasonWaking, Attention: true,
				Message: "waking from hibernation: member c-2 does not start: its container etcd is in CrashLoopBackOff"}},
		{name: "waking: a member whose data is gone is still reported as such", state: running(1, allStopped, member(0, func(m *Member) { m.HasPod, m.DataDirLost = true, true }),
			func(s *State) { s.Waking = true }),
			want: Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonMemberDataLost, Attention: true,
				Message: "no member answers with quorum, and member c-0 refused to start: it has run before but its volume lost its data, and it will neither rejoin with an empty log nor start a new cluster; bring the other members back, or recover from the one with the most data (spec.recovery.forceNewCluster); if c-0 held the only copy, restore a backup into a new EtcdCluster"}},
		{name: "woken: a cluster with quorum plans as ever", state: running(3, replicas(5), func(s *State) { s.Waking = true }),
			want: Action{Kind: AddLearner, Reason: v1alpha1.ReasonScaling, Message: "scaling up from 3 to 5 voting members"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Plan(tc.state, name)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Plan:\n got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// After review: a recovery token set while hibernated must not force a new cluster from the
// first member that answers on waking (followers stopped first, so it may lack writes the
// leader acknowledged); a fenced member comes back fenced; and a fenced member does not keep
// the others from being restarted when quorum is lost.
func TestWakeKeepsRecoveryAndFences(t *testing.T) {
	token := func(s *State) { s.Recovery.Requested = "now" }
	waking := func(s *State) { s.Waking = true }
	justStarted := func(m *Member) { m.PodAge, m.Reachable, m.HasLeader = time.Second, false, false }
	for _, tc := range []struct {
		name  string
		state State
		want  Action
	}{
		{"a token while waking: every member is restarted first",
			running(3, allStopped, member(0, func(m *Member) { m.HasPod = true; m.Reachable = true; m.HasLeader = false }), waking, token,
				func(s *State) { s.EtcdReachable = false }),
			Action{Kind: CreatePod, Member: "c-1", RequireData: true, Reason: v1alpha1.ReasonWaking,
				Message: `waking from hibernation: restarting member c-1 from its volume before spec.recovery.forceNewCluster "now" is considered`}},
		{"a token while waking: the restarted members get their start deadline",
			running(3, member(0, func(m *Member) { m.HasLeader = false }), member(1, justStarted), member(2, justStarted), waking, token,
				func(s *State) { s.EtcdReachable = false }),
			Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonWaking,
				Message: `waking from hibernation: spec.recovery.forceNewCluster "now" waits until every member restarted from its volume has had 3m0s to rejoin (c-0 has not answered yet); if quorum comes back, the request is recorded as not needed`}},
		{"unreachable: a member the user fenced comes back fenced",
			running(3, allStopped, member(0, func(m *Member) { m.HasPod = true }), member(1, func(m *Member) { m.HasPod = true }),
				func(s *State) { s.EtcdReachable, s.FenceRequested = false, []string{"c-2"} }),
			Action{Kind: CreatePod, Member: "c-2", RequireData: true, UserFenced: true, Reason: v1alpha1.ReasonEtcdUnreachable,
				Message: "etcd is unreachable; restarting member c-2 from its volume, fenced (etcd.quorate.dev/fence-members names it): unfence it if the others do not make a quorum"}},
		{"unreachable with a member fenced: the others are restarted",
			running(3, member(2, func(m *Member) { m.UserFenced, m.Reachable, m.HasLeader = true, false, false }), member(1, func(m *Member) { m.HasPod, m.Reachable = false, false }),
				func(s *State) { s.EtcdReachable, s.FenceRequested = false, []string{"c-2"} }),
			Action{Kind: CreatePod, Member: "c-1", RequireData: true, Reason: v1alpha1.ReasonEtcdUnreachable,
				Message: "etcd is unreachable; restarting member c-1 from its volume to restore quorum"}},
	} {
		if got := Plan(tc.state, name); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}
