package planner

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const cid = 0xc1

func name(i int) string { return fmt.Sprintf("c-%d", i) }

// healthy returns a started, healthy voter with its pod and volume.
func healthy(i int) Member {
	return Member{Name: name(i), Index: i, InEtcd: true, ID: uint64(100 + i), Started: true,
		Reachable: true, ClusterID: cid, HasLeader: true,
		HasPod: true, PodCurrent: true, HasPVC: true, PVCHasData: true}
}

func with(m Member, f func(*Member)) Member { f(&m); return m }

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
	for _, tc := range []struct {
		name   string
		state  State
		kind   Kind
		member string
		check  func(t *testing.T, a Action)
	}{
		{name: "paused makes no change", state: running(3, replicas(5), func(s *State) { s.Paused = true }), kind: Wait,
			check: func(t *testing.T, a Action) { wantReason(t, a, ReasonPaused) }},
		{name: "fresh cluster bootstraps every member at once", state: State{Cluster: "c", Replicas: 3}, kind: Bootstrap,
			check: func(t *testing.T, a Action) {
				if !reflect.DeepEqual(a.Members, []string{"c-0", "c-1", "c-2"}) {
					t.Errorf("bootstrap members = %v", a.Members)
				}
			}},
		{name: "bootstrap keeps the size it started with", state: State{Cluster: "c", Replicas: 5, BootstrapSize: 3,
			Members: []Member{{Name: "c-0", HasPVC: true, HasPod: true}}}, kind: Bootstrap,
			check: func(t *testing.T, a Action) {
				if len(a.Members) != 3 {
					t.Errorf("bootstrap members = %v, want the 3 already started", a.Members)
				}
			}},
		{name: "bootstrap objects exist: wait for a leader", state: State{Cluster: "c", Replicas: 1,
			Members: []Member{{Name: "c-0", HasPVC: true, HasPod: true}}}, kind: Wait,
			check: func(t *testing.T, a Action) { wantReason(t, a, ReasonBootstrapping) }},
		{name: "a volume with data forbids a second bootstrap", state: State{Cluster: "c", Replicas: 3,
			Members: []Member{{Name: "c-1", Index: 1, HasPVC: true, PVCHasData: true}}}, kind: Wait,
			check: func(t *testing.T, a Action) { wantMessage(t, a, "instead of bootstrapping") }},
		{name: "foreign cluster ID halts", state: running(3, member(1, func(m *Member) { m.ClusterID = 0xbad })), kind: Halt, member: "c-1",
			check: func(t *testing.T, a Action) { wantReason(t, a, ReasonClusterIDMismatch) }},
		{name: "launcher-reported cluster ID mismatch halts", state: running(3, member(2, func(m *Member) { m.PodFailure = FailureClusterIDMismatch })), kind: Halt, member: "c-2"},
		{name: "unknown member halts", state: running(3, func(s *State) { s.UnknownMembers = []string{"intruder"} }), kind: Halt,
			check: func(t *testing.T, a Action) { wantReason(t, a, ReasonUnknownMember) }},
		{name: "unreachable etcd: restart members from their volumes", state: running(3, func(s *State) { s.EtcdReachable = false },
			member(0, func(m *Member) { m.HasPod = false })), kind: CreatePod, member: "c-0",
			check: func(t *testing.T, a Action) {
				if !a.RequireData {
					t.Error("a member restarted from its volume must require its data")
				}
			}},
		{name: "unreachable etcd with every pod present waits", state: running(3, func(s *State) { s.EtcdReachable = false }), kind: Wait,
			check: func(t *testing.T, a Action) { wantReason(t, a, ReasonEtcdUnreachable) }},
		{name: "scale up adds a learner", state: running(3, replicas(5)), kind: AddLearner},
		{name: "a new learner gets a fresh volume", state: running(3, replicas(4),
			member(3, func(m *Member) { m.InEtcd, m.ID, m.Learner = true, 200, true })), kind: CreatePVC, member: "c-3"},
		{name: "a new learner's pod does not require data", state: running(3, replicas(4),
			member(3, func(m *Member) { m.InEtcd, m.ID, m.Learner, m.HasPVC = true, 200, true, true })), kind: CreatePod, member: "c-3",
			check: func(t *testing.T, a Action) {
				if a.RequireData {
					t.Error("a member that never ran has no data to require")
				}
			}},
		{name: "a started learner that answers is promoted", state: running(4, member(3, func(m *Member) { m.Learner = true })), kind: Promote, member: "c-3"},
		{name: "a learner that does not answer blocks changes", state: running(4, replicas(5), member(3, func(m *Member) { m.Learner, m.Reachable = true, false })), kind: Wait, member: "c-3",
			check: func(t *testing.T, a Action) { wantReason(t, a, ReasonMemberUnhealthy) }},
		{name: "scale down removes the highest follower", state: running(5, replicas(3)), kind: Remove, member: "c-4"},
		{name: "scale down moves leadership off the member first", state: running(5, replicas(3), func(s *State) { s.LeaderID = 104 }), kind: MoveLeader, member: "c-4",
			check: func(t *testing.T, a Action) {
				if a.TargetName != "c-0" || a.Target != 100 {
					t.Errorf("leadership goes to %s (%x)", a.TargetName, a.Target)
				}
			}},
		{name: "the pod of a removed member is deleted", state: running(3, member(3, func(m *Member) { m.HasPod, m.HasPVC = true, true })), kind: DeletePod, member: "c-3"},
		{name: "then its volume", state: running(3, member(3, func(m *Member) { m.HasPVC = true })), kind: DeletePVC, member: "c-3"},
		{name: "a volume being deleted is left alone", state: running(3, member(3, func(m *Member) { m.HasPVC, m.PVCTerminating = true, true })), kind: None},
		{name: "a member whose PVC is gone is removed", state: running(3, member(1, func(m *Member) { m.HasPVC, m.HasPod, m.Reachable = false, false, false })), kind: Remove, member: "c-1",
			check: func(t *testing.T, a Action) {
				wantReason(t, a, ReasonMemberDataLost)
				wantMessage(t, a, "PersistentVolumeClaim is gone")
			}},
		{name: "a member whose PVC is being deleted is removed", state: running(3, member(2, func(m *Member) { m.PVCTerminating = true })), kind: Remove, member: "c-2"},
		{name: "a leader whose PVC is being deleted hands leadership over first", state: running(3, member(0, func(m *Member) { m.PVCTerminating = true })), kind: MoveLeader, member: "c-0",
			check: func(t *testing.T, a Action) { wantReason(t, a, ReasonMemberDataLost) }},
		{name: "a member whose data directory vanished is removed", state: running(3, member(2, func(m *Member) { m.PodFailure, m.Reachable = FailureDataLost, false })), kind: Remove, member: "c-2"},
		{name: "no replacement that would lose quorum", state: running(3,
			member(1, func(m *Member) { m.HasPVC, m.Reachable = false, false }),
			member(2, func(m *Member) { m.Reachable = false })), kind: Wait, member: "c-1",
			check: func(t *testing.T, a Action) { wantReason(t, a, ReasonQuorumAtRisk) }},
		{name: "a missing pod of a started member requires its data", state: running(3, member(1, func(m *Member) { m.HasPod, m.Reachable = false, false })), kind: CreatePod, member: "c-1",
			check: func(t *testing.T, a Action) {
				if !a.RequireData {
					t.Error("a started member's pod must require its data")
				}
			}},
		{name: "a terminating pod is waited for", state: running(3, member(1, func(m *Member) { m.PodTerminating = true })), kind: Wait, member: "c-1"},
		{name: "an unhealthy member blocks scaling", state: running(3, replicas(5), member(2, func(m *Member) { m.HasLeader = false })), kind: Wait, member: "c-2",
			check: func(t *testing.T, a Action) { wantMessage(t, a, "has no leader") }},
		{name: "an alarm blocks scaling", state: running(3, replicas(5), member(0, func(m *Member) { m.Alarms = true })), kind: Wait, member: "c-0"},
		{name: "rollout replaces the highest outdated follower first", state: running(3,
			member(0, func(m *Member) { m.PodCurrent = false }), member(1, func(m *Member) { m.PodCurrent = false })), kind: DeletePod, member: "c-1"},
		{name: "rollout moves leadership before replacing the leader", state: running(3, member(0, func(m *Member) { m.PodCurrent = false })), kind: MoveLeader, member: "c-0",
			check: func(t *testing.T, a Action) { wantReason(t, a, ReasonRollingUpdate) }},
		{name: "rollout waits until every pod has been ready long enough", state: running(3, settle,
			member(0, func(m *Member) { m.PodCurrent = false }), member(2, func(m *Member) { m.ReadyFor = 3 * time.Second })), kind: Wait, member: "c-2",
			check: func(t *testing.T, a Action) {
				wantReason(t, a, ReasonRollingUpdate)
				wantMessage(t, a, "ready for 10s")
			}},
		{name: "rollout goes on once every pod has been ready long enough", state: running(3, settle,
			member(0, func(m *Member) { m.PodCurrent = false }), member(2, func(m *Member) { m.ReadyFor = 10 * time.Second })), kind: MoveLeader, member: "c-0"},
		{name: "a settled cluster with a freshly ready pod does nothing", state: running(3, settle, member(2, func(m *Member) { m.ReadyFor = time.Second })), kind: None},
		{name: "a single member is replaced in place", state: running(1, member(0, func(m *Member) { m.PodCurrent = false })), kind: DeletePod, member: "c-0"},
		{name: "steady state does nothing", state: running(3), kind: None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Plan(tc.state, name)
			if a.Kind != tc.kind || a.Member != tc.member {
				t.Fatalf("Plan = %v; want %s %s", a, tc.kind, tc.member)
			}
			if a.Message == "" || a.Reason == "" {
				t.Errorf("action %v has no reason or message", a)
			}
			if tc.check != nil {
				tc.check(t, a)
			}
		})
	}
}

func wantReason(t *testing.T, a Action, r string) {
	t.Helper()
	if a.Reason != r {
		t.Errorf("reason = %q, want %q", a.Reason, r)
	}
}

func wantMessage(t *testing.T, a Action, part string) {
	t.Helper()
	if !strings.Contains(a.Message, part) {
		t.Errorf("message %q does not contain %q", a.Message, part)
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
		fmt.Sscanf(n, "c-%d", &i)
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
