package planner

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

const cid = 0xc1

func name(i int) string { return fmt.Sprintf("c-%d", i) }

// healthy returns a started, healthy voter with its pod and volume.
func healthy(i int) Member {
	return Member{Name: name(i), Index: i, InEtcd: true, ID: uint64(100 + i), Started: true,
		Reachable: true, ClusterID: cid, HasLeader: true,
		HasPod: true, PodCurrent: true, HasPVC: true, PVCHasData: true}
}

func running(n int, mods ...func(*State)) State {
	s := State{Cluster: "c", Replicas: n, ClusterID: cid, EtcdReachable: true, LeaderID: 100}
	for i := 0; i < n; i++ {
		s.Members = append(s.Members, healthy(i))
	}
	for _, f := range mods {
		f(&s)
	}
	return s
}

// settle asks rolling updates to wait 10s after pods become ready; every pod has been ready long.
func settle(s *State) {
	s.RollSettle = 10 * time.Second
	for i := range s.Members {
		s.Members[i].ReadyFor = time.Hour
	}
}

func replicas(n int) func(*State) { return func(s *State) { s.Replicas = n } }
func member(i int, f func(*Member)) func(*State) {
	return func(s *State) {
		for j := range s.Members {
			if s.Members[j].Index == i {
				f(&s.Members[j])
				return
			}
		}
		m := Member{Name: name(i), Index: i}
		f(&m)
		s.Members = append(s.Members, m)
	}
}

func TestPlan(t *testing.T) {
	paused := func(s *State) { s.Paused = true }
	for _, tc := range []struct {
		name  string
		state State
		// want is compared whole, apart from Message, which must contain msg.
		want Action
		msg  string
	}{
		{name: "paused makes no change", state: running(3, replicas(5), paused),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonPaused}, msg: "spec.paused"},
		{name: "fresh cluster bootstraps every member at once", state: State{Cluster: "c", Replicas: 3},
			want: Action{Kind: Bootstrap, Members: []string{"c-0", "c-1", "c-2"}, Reason: v1alpha1.ReasonBootstrapping}},
		{name: "bootstrap keeps the size it started with", state: State{Cluster: "c", Replicas: 5, BootstrapSize: 3,
			Members: []Member{{Name: "c-0", HasPVC: true, HasPod: true}}},
			want: Action{Kind: Bootstrap, Members: []string{"c-0", "c-1", "c-2"}, Reason: v1alpha1.ReasonBootstrapping}},
		{name: "bootstrap objects exist: wait for a leader", state: State{Cluster: "c", Replicas: 1,
			Members: []Member{{Name: "c-0", HasPVC: true, HasPod: true}}},
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonBootstrapping}, msg: "elect a leader"},
		{name: "a volume with data forbids a second bootstrap", state: State{Cluster: "c", Replicas: 3,
			Members: []Member{{Name: "c-1", Index: 1, HasPVC: true, PVCHasData: true}}},
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonBootstrapping}, msg: "instead of bootstrapping"},
		{name: "foreign cluster ID halts", state: running(3, member(1, func(m *Member) { m.ClusterID = 0xbad })),
			want: Action{Kind: Halt, Member: "c-1", Reason: v1alpha1.ReasonClusterIDMismatch}, msg: "reports cluster ID bad"},
		{name: "launcher-reported cluster ID mismatch halts", state: running(3, member(2, func(m *Member) { m.ForeignData = true })),
			want: Action{Kind: Halt, Member: "c-2", Reason: v1alpha1.ReasonClusterIDMismatch}, msg: "another etcd cluster"},
		{name: "unknown member halts", state: running(3, func(s *State) { s.UnknownMembers = []string{"intruder"} }),
			want: Action{Kind: Halt, Reason: v1alpha1.ReasonUnknownMember}, msg: "intruder"},
		{name: "unreachable etcd: restart members from their volumes", state: running(3, func(s *State) { s.EtcdReachable = false },
			member(0, func(m *Member) { m.HasPod = false })),
			want: Action{Kind: CreatePod, Member: "c-0", RequireData: true, Reason: v1alpha1.ReasonEtcdUnreachable}},
		{name: "unreachable etcd with every pod present waits", state: running(3, func(s *State) { s.EtcdReachable = false }),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonEtcdUnreachable}},
		{name: "scale up adds a learner", state: running(3, replicas(5)),
			want: Action{Kind: AddLearner, Reason: v1alpha1.ReasonScaling}, msg: "from 3 to 5"},
		{name: "a new learner gets a fresh volume", state: running(3, replicas(4),
			member(3, func(m *Member) { m.InEtcd, m.ID, m.Learner = true, 200, true })),
			want: Action{Kind: CreatePVC, Member: "c-3", Reason: v1alpha1.ReasonMembersCreating}},
		{name: "a new learner's pod does not require data", state: running(3, replicas(4),
			member(3, func(m *Member) { m.InEtcd, m.ID, m.Learner, m.HasPVC = true, 200, true, true })),
			want: Action{Kind: CreatePod, Member: "c-3", Reason: v1alpha1.ReasonMembersCreating}},
		{name: "a started learner that answers is promoted", state: running(4, member(3, func(m *Member) { m.Learner = true })),
			want: Action{Kind: Promote, Member: "c-3", ID: 103, Reason: v1alpha1.ReasonScaling}},
		{name: "a learner that does not answer blocks changes", state: running(4, replicas(5), member(3, func(m *Member) { m.Learner, m.Reachable = true, false })),
			want: Action{Kind: Wait, Member: "c-3", Reason: v1alpha1.ReasonMemberUnhealthy}, msg: "does not answer"},
		{name: "scale down removes the highest follower", state: running(5, replicas(3)),
			want: Action{Kind: Remove, Member: "c-4", ID: 104, Reason: v1alpha1.ReasonScaling}, msg: "from 5 to 3"},
		{name: "scale down moves leadership off the member first", state: running(5, replicas(3), func(s *State) { s.LeaderID = 104 }),
			want: Action{Kind: MoveLeader, Member: "c-4", ID: 104, Target: 100, TargetName: "c-0", Reason: v1alpha1.ReasonScaling}},
		{name: "the pod of a removed member is deleted", state: running(3, member(3, func(m *Member) { m.HasPod, m.HasPVC = true, true })),
			want: Action{Kind: DeletePod, Member: "c-3", Reason: v1alpha1.ReasonGarbage}},
		{name: "then its volume", state: running(3, member(3, func(m *Member) { m.HasPVC = true })),
			want: Action{Kind: DeletePVC, Member: "c-3", Reason: v1alpha1.ReasonGarbage}},
		{name: "a volume being deleted is left alone", state: running(3, member(3, func(m *Member) { m.HasPVC, m.PVCTerminating = true, true })),
			want: Action{Kind: None, Reason: v1alpha1.ReasonSettled}},
		{name: "a member whose PVC is gone is removed", state: running(3, member(1, func(m *Member) { m.HasPVC, m.HasPod, m.Reachable = false, false, false })),
			want: Action{Kind: Remove, Member: "c-1", ID: 101, Reason: v1alpha1.ReasonMemberDataLost}, msg: "PersistentVolumeClaim is gone"},
		{name: "a member whose PVC is being deleted is removed", state: running(3, member(2, func(m *Member) { m.PVCTerminating = true })),
			want: Action{Kind: Remove, Member: "c-2", ID: 102, Reason: v1alpha1.ReasonMemberDataLost}},
		{name: "a leader whose PVC is being deleted hands leadership over first", state: running(3, member(0, func(m *Member) { m.PVCTerminating = true })),
			want: Action{Kind: MoveLeader, Member: "c-0", ID: 100, Target: 101, TargetName: "c-1", Reason: v1alpha1.ReasonMemberDataLost}},
		{name: "a member whose data directory vanished is removed", state: running(3, member(2, func(m *Member) { m.DataDirLost, m.Reachable = true, false })),
			want: Action{Kind: Remove, Member: "c-2", ID: 102, Reason: v1alpha1.ReasonMemberDataLost}, msg: "data directory is gone"},
		{name: "no replacement that would lose quorum", state: running(3,
			member(1, func(m *Member) { m.HasPVC, m.Reachable = false, false }),
			member(2, func(m *Member) { m.Reachable = false })),
			want: Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonQuorumAtRisk}, msg: "only 1 other voters are healthy"},
		{name: "a missing pod of a started member requires its data", state: running(3, member(1, func(m *Member) { m.HasPod, m.Reachable = false, false })),
			want: Action{Kind: CreatePod, Member: "c-1", RequireData: true, Reason: v1alpha1.ReasonMembersCreating}},
		{name: "a terminating pod is waited for", state: running(3, member(1, func(m *Member) { m.PodTerminating = true })),
			want: Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonTerminating}},
		{name: "an unhealthy member blocks scaling", state: running(3, replicas(5), member(2, func(m *Member) { m.HasLeader = false })),
			want: Action{Kind: Wait, Member: "c-2", Reason: v1alpha1.ReasonMemberUnhealthy}, msg: "has no leader"},
		{name: "an alarm blocks scaling", state: running(3, replicas(5), member(0, func(m *Member) { m.Alarms = true })),
			want: Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonMemberUnhealthy}, msg: "reports an alarm"},
		{name: "rollout replaces the highest outdated follower first", state: running(3,
			member(0, func(m *Member) { m.PodCurrent = false }), member(1, func(m *Member) { m.PodCurrent = false })),
			want: Action{Kind: DeletePod, Member: "c-1", Reason: v1alpha1.ReasonRollingUpdate}},
		{name: "rollout moves leadership before replacing the leader", state: running(3, member(0, func(m *Member) { m.PodCurrent = false })),
			want: Action{Kind: MoveLeader, Member: "c-0", ID: 100, Target: 101, TargetName: "c-1", Reason: v1alpha1.ReasonRollingUpdate}},
		{name: "rollout waits until every pod has been ready long enough", state: running(3, settle,
			member(0, func(m *Member) { m.PodCurrent = false }), member(2, func(m *Member) { m.ReadyFor = 3 * time.Second })),
			want: Action{Kind: Wait, Member: "c-2", Reason: v1alpha1.ReasonRollingUpdate}, msg: "ready for 10s"},
		{name: "rollout goes on once every pod has been ready long enough", state: running(3, settle,
			member(0, func(m *Member) { m.PodCurrent = false }), member(2, func(m *Member) { m.ReadyFor = 10 * time.Second })),
			want: Action{Kind: MoveLeader, Member: "c-0", ID: 100, Target: 101, TargetName: "c-1", Reason: v1alpha1.ReasonRollingUpdate}},
		{name: "a settled cluster with a freshly ready pod does nothing", state: running(3, settle, member(2, func(m *Member) { m.ReadyFor = time.Second })),
			want: Action{Kind: None, Reason: v1alpha1.ReasonSettled}},
		{name: "a single member is replaced in place", state: running(1, member(0, func(m *Member) { m.PodCurrent = false })),
			want: Action{Kind: DeletePod, Member: "c-0", Reason: v1alpha1.ReasonRollingUpdate}},
		{name: "steady state does nothing", state: running(3),
			want: Action{Kind: None, Reason: v1alpha1.ReasonSettled}, msg: "3 healthy voting members"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Plan(tc.state, name)
			if a.Message == "" || !strings.Contains(a.Message, tc.msg) {
				t.Errorf("message %q does not contain %q", a.Message, tc.msg)
			}
			got := a
			got.Message = ""
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Plan =\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

func TestFreeName(t *testing.T) {
	s := running(3, member(4, func(m *Member) { m.HasPVC = true }))
	s.Members = slices.DeleteFunc(s.Members, func(m Member) bool { return m.Index == 1 })
	if got := s.FreeName(name); got != "c-1" {
		t.Errorf("FreeName = %s, want c-1", got)
	}
}

// sim is a minimal model of a cluster that executes the planner's actions, to check the
// sequence of steps the planner produces for whole scaling journeys.
type sim struct {
	s       State
	nextID  uint64
	changes []string
}

func (x *sim) apply(t *testing.T, a Action) {
	t.Helper()
	s := &x.s
	idx := func(n string) int {
		for i, m := range s.Members {
			if m.Name == n {
				return i
			}
		}
		t.Fatalf("no member %s", n)
		return -1
	}
	switch a.Kind {
	case AddLearner:
		n := s.FreeName(name)
		var i int
		if _, err := fmt.Sscanf(n, "c-%d", &i); err != nil {
			t.Fatalf("FreeName gave %q: %v", n, err)
		}
		x.nextID++
		s.Members = append(s.Members, Member{Name: n, Index: i, InEtcd: true, ID: x.nextID, Learner: true})
		x.changes = append(x.changes, "add "+n)
	case CreatePVC:
		s.Members[idx(a.Member)].HasPVC = true
	case CreatePod:
		m := &s.Members[idx(a.Member)]
		m.HasPod, m.PodCurrent, m.Started, m.Reachable, m.ClusterID, m.HasLeader, m.PVCHasData = true, true, true, true, cid, true, true
	case Promote:
		s.Members[idx(a.Member)].Learner = false
		x.changes = append(x.changes, "promote "+a.Member)
	case Remove:
		m := &s.Members[idx(a.Member)]
		m.InEtcd, m.Started, m.Reachable = false, false, false
		x.changes = append(x.changes, "remove "+a.Member)
	case MoveLeader:
		s.LeaderID = a.Target
		x.changes = append(x.changes, "move-leader "+a.TargetName)
	case DeletePod:
		s.Members[idx(a.Member)].HasPod = false
	case DeletePVC:
		s.Members[idx(a.Member)].HasPVC = false
	default:
		t.Fatalf("unexpected action %v", a)
	}
	// A name with no etcd member, Pod or PVC is no longer observed at all.
	s.Members = slices.DeleteFunc(s.Members, func(m Member) bool { return !m.InEtcd && !m.HasPod && !m.HasPVC })
}

// check asserts the invariants every intermediate state must keep.
func (x *sim) check(t *testing.T) {
	t.Helper()
	learners, voters := 0, 0
	for _, m := range x.s.Members {
		if m.InEtcd && m.Learner {
			learners++
		}
		if m.InEtcd && !m.Learner {
			voters++
		}
	}
	if learners > 1 {
		t.Fatalf("%d learners at once", learners)
	}
	if voters == 0 {
		t.Fatal("no voter left")
	}
}

func (x *sim) run(t *testing.T, replicas int) {
	t.Helper()
	x.s.Replicas = replicas
	for steps := 0; ; steps++ {
		if steps > 100 {
			t.Fatal("planner does not converge")
		}
		a := Plan(x.s, name)
		if a.Kind == None {
			return
		}
		x.apply(t, a)
		x.check(t)
	}
}

func TestScalingJourneys(t *testing.T) {
	x := &sim{s: running(1), nextID: 200}
	x.s.LeaderID = 100

	x.run(t, 3)
	x.run(t, 5)
	want := []string{"add c-1", "promote c-1", "add c-2", "promote c-2", "add c-3", "promote c-3", "add c-4", "promote c-4"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("1->3->5 changes = %v\nwant %v", x.changes, want)
	}

	// Make the highest member the leader so scale-down must move leadership first.
	x.s.LeaderID = x.s.Members[4].ID
	x.changes = nil
	x.run(t, 1)
	want = []string{"move-leader c-0", "remove c-4", "remove c-3", "remove c-2", "remove c-1"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("5->1 changes = %v\nwant %v (four removals, leader moved first)", x.changes, want)
	}
	if len(x.s.Members) != 1 {
		t.Fatalf("leftover objects after scale down: %+v", x.s.Members)
	}
}

func TestReplacementJourney(t *testing.T) {
	x := &sim{s: running(3), nextID: 200}
	// c-1 loses its volume: its pod is gone with it.
	m := &x.s.Members[1]
	m.HasPVC, m.HasPod, m.Reachable, m.PVCHasData = false, false, false, false
	x.run(t, 3)
	want := []string{"remove c-1", "add c-1", "promote c-1"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("replacement changes = %v, want %v", x.changes, want)
	}
	for _, m := range x.s.Members {
		if m.Name == "c-1" && m.ID <= 200 {
			t.Fatalf("replacement reused member ID %d", m.ID)
		}
	}
}
