package planner

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

const extLeader = 11

func external(n int) []External {
	var ext []External
	for i := 0; i < n; i++ {
		ext = append(ext, External{Name: fmt.Sprintf("vm-%d", i), ID: uint64(extLeader + i), Endpoint: true, Reachable: true,
			ClusterID: cid, HasLeader: true, Version: "3.6.14"})
	}
	return ext
}

func toJoin(ext []External, mods ...func(*Join)) State {
	s := State{Cluster: "c", Replicas: 3, Version: "3.6.16", EtcdReachable: true, LeaderID: extLeader, Deadlines: DefaultDeadlines,
		Join: &Join{ListedClusterID: cid, External: ext}}
	for _, f := range mods {
		f(s.Join)
	}
	return s
}

func TestJoinStartRefusals(t *testing.T) {
	ext := func(f func(*External)) func(*Join) { return func(j *Join) { f(&j.External[1]) } }
	for _, tc := range []struct {
		name  string
		state State
		want  string
	}{
		{"unreachable", toJoin(nil, func(j *Join) { j.Unreachable = "10.0.0.5:2379: connection refused" }),
			"the external cluster is not joined: its member list could not be read through spec.bootstrap.join.endpoints (10.0.0.5:2379: connection refused); nothing was changed, and the join starts once this is fixed"},
		{"a member without an endpoint", toJoin(external(3), ext(func(e *External) { e.Endpoint, e.Reachable = false, false })),
			"the external cluster is not joined: member vm-1 (c) has no endpoint in spec.bootstrap.join.endpoints that answers as it; list the client URL of every member; nothing was changed, and the join starts once this is fixed"},
		{"a member down", toJoin(external(3), ext(func(e *External) { e.Reachable, e.Problem = false, "10.0.0.6:2379: i/o timeout" })),
			"the external cluster is not joined: member vm-1 (c) does not answer: 10.0.0.6:2379: i/o timeout; nothing was changed, and the join starts once this is fixed"},
		{"a member without a leader", toJoin(external(3), ext(func(e *External) { e.HasLeader = false })),
			"the external cluster is not joined: member vm-1 (c) has no leader; nothing was changed, and the join starts once this is fixed"},
		{"a learner", toJoin(external(3), ext(func(e *External) { e.Learner = true })),
			"the external cluster is not joined: member vm-1 (c) is a learner; promote or remove it first; nothing was changed, and the join starts once this is fixed"},
		{"another minor release", toJoin(external(3), ext(func(e *External) { e.Version = "3.5.21" })),
			"the external cluster is not joined: member vm-1 (c) runs etcd 3.5.21 and spec.version is 3.6.16: the new members must run the external cluster's minor release; set spec.version to a 3.5 release, and upgrade once the move is done; nothing was changed, and the join starts once this is fixed"},
		{"an alarm", toJoin(external(3), func(j *Join) { j.Alarms = []string{"NOSPACE"} }),
			"the external cluster is not joined: it has the alarms NOSPACE raised; clear them (etcdctl alarm disarm) after fixing their cause; nothing was changed, and the join starts once this is fixed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := Action{Kind: Halt, Reason: v1alpha1.ReasonJoinRefused, Attention: true, Message: tc.want}
			if got := Plan(tc.state, name); !reflect.DeepEqual(got, want) {
				t.Errorf("Plan =\n%#v\nwant\n%#v", got, want)
			}
		})
	}
	got := Plan(toJoin(external(3)), name)
	want := Action{Kind: StartJoin, Reason: v1alpha1.ReasonJoining,
		Message: "joining etcd cluster c1 of 3 members: its cluster ID and members are recorded, then members are added one at a time"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("healthy external cluster: Plan = %#v, want %#v", got, want)
	}
}

// TestJoinJourney moves a 3-member external cluster in: the operator's members join one at a
// time as learners, the operator stops for the go-ahead, then removes the external members,
// followers first, the leader last once leadership moved to one of its own.
func TestJoinJourney(t *testing.T) {
	x := &sim{s: toJoin(external(3)), nextID: 200}
	until := func(kind Kind, reason string) {
		t.Helper()
		for i := 0; ; i++ {
			if i > 50 {
				t.Fatalf("no %s %s after 50 steps; changes %v", kind, reason, x.changes)
			}
			if a := x.joinStep(t); a.Kind == kind && a.Reason == reason {
				return
			}
		}
	}
	until(Wait, v1alpha1.ReasonWaitingForGoAhead)
	want := []string{"start-join", "add c-0", "promote c-0", "add c-1", "promote c-1", "add c-2", "promote c-2"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("changes before the go-ahead = %v, want %v", x.changes, want)
	}
	if a := x.joinStep(t); a.Kind != Wait || a.Reason != v1alpha1.ReasonWaitingForGoAhead {
		t.Fatalf("without the go-ahead the operator must keep waiting, planned %v", a)
	}
	x.s.Join.RemoveExternal = true
	until(None, v1alpha1.ReasonSettled)
	want = append(want, "remove vm-1", "remove vm-2", "move-leader c-0", "remove vm-0")
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("changes = %v, want %v", x.changes, want)
	}
}

// joinStep plans one step of a join and plays it: the external members are in State.Join,
// the operator's in State.Members. No step may leave two learners, or remove an external
// member before the operator's members all vote.
func (x *sim) joinStep(t *testing.T) Action {
	t.Helper()
	a := Plan(x.s, name)
	switch a.Kind {
	case StartJoin:
		x.s.ClusterID, x.s.Join.Started = cid, true
		x.changes = append(x.changes, "start-join")
	case Remove:
		if i := slices.IndexFunc(x.s.Join.External, func(e External) bool { return e.ID == a.ID }); i >= 0 {
			if len(x.s.voters()) < x.s.Replicas {
				t.Fatalf("external member %s removed with %d of %d members voting", a.Member, len(x.s.voters()), x.s.Replicas)
			}
			x.s.Join.External = slices.Delete(x.s.Join.External, i, i+1)
			x.changes = append(x.changes, "remove "+a.Member)
			break
		}
		x.apply(t, a)
	case None, Wait:
	default:
		x.apply(t, a)
	}
	learners := 0
	for _, m := range x.s.Members {
		if m.InEtcd && m.Learner {
			learners++
		}
	}
	if learners > 1 {
		t.Fatalf("%d learners at once", learners)
	}
	return a
}

// An unhealthy external member stops membership changes: it votes.
func TestJoinWaitsForExternalHealth(t *testing.T) {
	s := toJoin(external(3), func(j *Join) {
		j.Started = true
		j.External[2].Reachable, j.External[2].Problem = false, "10.0.0.7:2379: connection refused"
	})
	s.ClusterID = cid
	want := Action{Kind: Wait, Member: "vm-2", Reason: v1alpha1.ReasonExternalMemberUnhealthy, Attention: true,
		Message: "external member vm-2 (d) does not answer (10.0.0.7:2379: connection refused); membership changes wait until it is healthy; if it is gone for good, remove it with etcdctl member remove"}
	if got := Plan(s, name); !reflect.DeepEqual(got, want) {
		t.Errorf("Plan =\n%#v\nwant\n%#v", got, want)
	}
}

// With removeExternalMembers set from the start, the external members go only once the
// operator's members all vote, in the same order, without a stop.
func TestJoinJourneyWithoutAStop(t *testing.T) {
	x := &sim{s: toJoin(external(3), func(j *Join) { j.RemoveExternal = true }), nextID: 200}
	for i := 0; ; i++ {
		if i > 50 {
			t.Fatalf("no settled state after 50 steps; changes %v", x.changes)
		}
		a := x.joinStep(t)
		if a.Kind == None {
			break
		}
		if a.Reason == v1alpha1.ReasonWaitingForGoAhead {
			t.Fatalf("stopped for a go-ahead that was given: %v", a)
		}
	}
	want := []string{"start-join", "add c-0", "promote c-0", "add c-1", "promote c-1", "add c-2", "promote c-2",
		"remove vm-1", "remove vm-2", "move-leader c-0", "remove vm-0"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("changes = %v, want %v", x.changes, want)
	}
}

// A joining member whose launcher could not reach the external peers does not start: the
// join stops with PeersUnreachable and the launcher's words, adds nobody else and removes
// nobody, and goes on once the member starts.
func TestJoinWaitsForPeersToBeReachable(t *testing.T) {
	x := &sim{s: toJoin(external(3), func(j *Join) { j.RemoveExternal = true }), nextID: 200}
	for len(x.changes) < 2 {
		x.joinStep(t)
	}
	if want := []string{"start-join", "add c-0"}; !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("changes = %v, want %v", x.changes, want)
	}
	refusal := "this member cannot reach the etcd peer listener of https://10.87.0.1:22380 (remote error: tls: bad certificate) for 1m0s; etcd is not started"
	for i := 0; i < 10; i++ {
		if i == 2 {
			// The pod exists now: its launcher refused.
			m := &x.s.Members[0]
			m.Started, m.Reachable, m.HasLeader, m.PeersUnreachable = false, false, false, refusal
		}
		x.joinStep(t)
	}
	want := Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonPeersUnreachable, Attention: true,
		Message: "member c-0 cannot join: " + refusal + "; membership changes wait, and the member starts by itself once its peers answer"}
	if got := Plan(x.s, name); !reflect.DeepEqual(got, want) {
		t.Fatalf("Plan =\n%#v\nwant\n%#v", got, want)
	}
	if want := []string{"start-join", "add c-0"}; !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("changes while c-0 cannot reach its peers = %v, want %v", x.changes, want)
	}
	m := &x.s.Members[0]
	m.Started, m.Reachable, m.HasLeader, m.ClusterID = true, true, true, cid
	for i := 0; i < 50 && Plan(x.s, name).Kind != None; i++ {
		x.joinStep(t)
	}
	if got := x.changes[len(x.changes)-1]; got != "remove vm-0" {
		t.Errorf("the join did not finish once c-0 started: changes %v", x.changes)
	}
}

// An external member must report a working connection to every member of the operator's whose
// etcd runs: for a moment after it starts the join waits quietly, then it stops with
// PeersUnreachable, healthy or not (a learner the leader cannot reach does not confirm reads);
// a member whose metrics were not read is not judged.
func TestJoinWaitsForExternalMembersToConnect(t *testing.T) {
	state := func(runningFor time.Duration, healthy bool, connected map[uint64]bool) State {
		s := toJoin(external(3), func(j *Join) {
			j.Started = true
			for i := range j.External {
				j.External[i].Connected = map[uint64]bool{201: true}
			}
			j.External[1].Connected = connected
		})
		s.ClusterID = cid
		s.Members = []Member{{Name: "c-0", InEtcd: true, ID: 201, Learner: true, Started: true, Reachable: healthy, ClusterID: cid, HasLeader: healthy,
			HasPod: true, PodCurrent: true, HasPVC: true, PVCHasData: true, RunningFor: runningFor, Version: "3.6.16"}}
		return s
	}
	notConnected := Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonPeersUnreachable, Attention: true,
		Message: "external member vm-1 (c) has no working connection to member c-0 (etcd_network_active_peers on vm-1); the external members must reach the peer URL of c-0 from where they run; membership changes wait, and go on once they connect"}
	for _, tc := range []struct {
		name string
		s    State
		want Action
	}{
		{"just started", state(3*time.Second, true, map[uint64]bool{201: false}),
			Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonJoining, Retry: time.Second, Message: "waiting for external member vm-1 (c) to connect to member c-0"}},
		{"not connected", state(ConnectGrace+time.Second, true, map[uint64]bool{}), notConnected},
		{"not connected and not answering", state(ConnectGrace+time.Second, false, map[uint64]bool{201: false}), notConnected},
		{"just started and not answering", state(3*time.Second, false, map[uint64]bool{201: false}),
			Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonMemberUnhealthy, Message: "member c-0 does not answer; membership changes wait until every member is healthy"}},
		{"connected", state(ConnectGrace+time.Second, true, map[uint64]bool{201: true}),
			Action{Kind: Promote, Member: "c-0", ID: 201, Reason: v1alpha1.ReasonScaling, Message: "promoting learner c-0 to voter"}},
		{"metrics not read", state(ConnectGrace+time.Second, true, nil),
			Action{Kind: Promote, Member: "c-0", ID: 201, Reason: v1alpha1.ReasonScaling, Message: "promoting learner c-0 to voter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Plan(tc.s, name); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Plan =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}
