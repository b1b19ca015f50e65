package planner

import (
	"reflect"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// hashes is a comparison at revision 900 of members c-0, c-1, ... (IDs 100, 101, ...) with
// the given hashes, compacted at revision 50.
func hashes(hs ...uint32) *Consistency {
	c := &Consistency{Revision: 900, At: time.Unix(1000, 0)}
	for i, h := range hs {
		c.Hashes = append(c.Hashes, MemberHash{Member: name(i), ID: uint64(100 + i), Hash: h, CompactRevision: 50})
	}
	return c
}

func TestJudge(t *testing.T) {
	compacted := hashes(7, 7, 7)
	compacted.Hashes[1].CompactRevision = 60
	for _, tc := range []struct {
		name string
		in   *Consistency
		want Verdict
	}{
		{"all agree", hashes(7, 7, 7), Verdict{Outcome: Consistent, Message: "the 3 voters have the same data at revision 900 (hash 00000007)"}},
		{"one of three differs", hashes(7, 9, 7), Verdict{Outcome: Divergent, Divergent: []MemberHash{{Member: "c-1", ID: 101, Hash: 9, CompactRevision: 50}},
			Message: "the data of c-1 differ from the majority's at revision 900: c-1 has hash 00000009, where c-0 and c-2 have hash 00000007"}},
		{"two of five differ, each its own way", hashes(7, 7, 8, 7, 9), Verdict{Outcome: Divergent,
			Divergent: []MemberHash{{Member: "c-2", ID: 102, Hash: 8, CompactRevision: 50}, {Member: "c-4", ID: 104, Hash: 9, CompactRevision: 50}},
			Message:   "the data of c-2 and c-4 differ from the majority's at revision 900: c-2 has hash 00000008, c-4 has hash 00000009, where c-0 and c-1 and c-3 have hash 00000007"}},
		{"no majority among three", hashes(7, 8, 9), Verdict{Outcome: NoMajority,
			Message: "the voters' data differ and no majority agrees: at revision 900, c-0 has hash 00000007, c-1 has hash 00000008, c-2 has hash 00000009; the operator replaces no member; restore a backup taken before the divergence into a new EtcdCluster"}},
		{"two against two is no majority", hashes(7, 7, 8, 8), Verdict{Outcome: NoMajority,
			Message: "the voters' data differ and no majority agrees: at revision 900, c-0 has hash 00000007, c-1 has hash 00000007, c-2 has hash 00000008, c-3 has hash 00000008; the operator replaces no member; restore a backup taken before the divergence into a new EtcdCluster"}},
		{"different compactions do not compare", compacted, Verdict{Outcome: Inconclusive,
			Message: "at revision 900, the voters were compacted at different revisions (c-0 at 50, c-1 at 60, c-2 at 50): their hashes do not compare"}},
		{"nobody answered", &Consistency{Revision: 900}, Verdict{Outcome: Inconclusive, Message: "no voter answered"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Judge(*tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Judge =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}

func TestPlanConsistency(t *testing.T) {
	checked := func(c *Consistency) func(*State) { return func(s *State) { s.Consistency = c } }
	alarm := func(s *State) {
		s.Alarms, s.CorruptMembers = []string{AlarmCorrupt}, []string{"c-2"}
	}
	afterAlarm := func(c *Consistency) *Consistency { c.AfterAlarm = true; return c }
	leader := func(id uint64) func(*State) { return func(s *State) { s.LeaderID = id } }
	const c2Diverged = "the data of c-2 differ from the majority's at revision 900: c-2 has hash 00000009, where c-0 and c-1 have hash 00000007"
	for _, tc := range []struct {
		name  string
		state State
		want  Action
	}{
		{"agreeing voters: nothing to do", running(3, checked(hashes(7, 7, 7))),
			Action{Kind: None, Reason: v1alpha1.ReasonSettled, Message: "3 healthy voting members"}},
		{"a divergent follower: a member is added to replace it", running(3, checked(hashes(7, 7, 9))),
			Action{Kind: AddLearner, Reason: v1alpha1.ReasonMemberCorrupt, Attention: true,
				Message: "adding a member to replace c-2, because " + c2Diverged + "; it keeps serving until its replacement votes"}},
		{"a divergent leader: leadership moves to the majority before a member catches up from it", running(3, checked(hashes(7, 7, 9)), leader(102)),
			Action{Kind: MoveLeader, Member: "c-2", ID: 102, Target: 100, TargetName: "c-0", Reason: v1alpha1.ReasonMemberCorrupt, Attention: true,
				Message: "moving leadership from c-2 to c-0 before a new member catches up from the leader: its data differ from the majority's"}},
		{"the replacement votes: the divergent member is removed", running(4, replicas(3), checked(hashes(7, 7, 9))),
			Action{Kind: Remove, Member: "c-2", ID: 102, Reason: v1alpha1.ReasonMemberCorrupt,
				Message: "removing c-2, because " + c2Diverged + ", now that its replacement votes"}},
		{"the replacement votes and the divergent member leads: leadership moves first", running(4, replicas(3), checked(hashes(7, 7, 9)), leader(102)),
			Action{Kind: MoveLeader, Member: "c-2", ID: 102, Target: 100, TargetName: "c-0", Reason: v1alpha1.ReasonMemberCorrupt,
				Message: "moving leadership from c-2 to c-0 before removing it"}},
		{"a majority member is unhealthy: nothing is replaced until it is back", running(3, checked(hashes(7, 7, 9)), member(1, func(m *Member) { m.Reachable = false })),
			Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonMemberUnhealthy, Message: "member c-1 does not answer; membership changes wait until every member is healthy"}},
		{"a divergent member that stopped serving (etcd's initial check refuses it) is removed, the others keeping quorum",
			running(3, checked(hashes(7, 7, 9)), member(2, func(m *Member) { m.Reachable, m.HasLeader = false, false })),
			Action{Kind: Remove, Member: "c-2", ID: 102, Reason: v1alpha1.ReasonMemberCorrupt, Attention: true,
				Message: "removing member c-2 because " + c2Diverged + ", and it does not serve; a new member will take its place"}},
		{"a comparison of another member under the same name replaces nobody", running(3, checked(hashes(7, 7, 9)), member(2, func(m *Member) { m.ID = 202 })),
			Action{Kind: None, Reason: v1alpha1.ReasonSettled, Message: "3 healthy voting members"}},
		{"no majority: the operator halts", running(3, checked(hashes(7, 8, 9))),
			Action{Kind: Halt, Reason: v1alpha1.ReasonDataInconsistent, Attention: true,
				Message: "the voters' data differ and no majority agrees: at revision 900, c-0 has hash 00000007, c-1 has hash 00000008, c-2 has hash 00000009; the operator replaces no member; restore a backup taken before the divergence into a new EtcdCluster"}},
		{"CORRUPT with a divergent member: the replacement comes first", running(3, alarm, checked(hashes(7, 7, 9))),
			Action{Kind: AddLearner, Reason: v1alpha1.ReasonMemberCorrupt, Attention: true,
				Message: "adding a member to replace c-2, because " + c2Diverged + "; it keeps serving until its replacement votes"}},
		{"CORRUPT and no comparison since: wait for one", running(3, alarm, checked(hashes(7, 7, 7))),
			Action{Kind: Wait, Reason: v1alpha1.ReasonCorrupt, Attention: true,
				Message: "etcd raised the CORRUPT alarm for c-2: writes are refused until it is disarmed; the operator compares the voters' data (HashKV) to find the member whose data differ, replaces it and then disarms the alarm"}},
		{"CORRUPT and no comparison at all: wait for one", running(3, alarm),
			Action{Kind: Wait, Reason: v1alpha1.ReasonCorrupt, Attention: true,
				Message: "etcd raised the CORRUPT alarm for c-2: writes are refused until it is disarmed; the operator compares the voters' data (HashKV) to find the member whose data differ, replaces it and then disarms the alarm"}},
		{"CORRUPT and every voter agrees since: disarm", running(3, alarm, checked(afterAlarm(hashes(7, 7, 7)))),
			Action{Kind: Disarm, Reason: v1alpha1.ReasonCorrupt, Message: "etcd raised the CORRUPT alarm for c-2, and every voter has the same data now (revision 900): disarming it"}},
		{"CORRUPT and a comparison that misses a voter: wait", running(4, replicas(4), alarm, checked(afterAlarm(hashes(7, 7, 7)))),
			Action{Kind: Wait, Reason: v1alpha1.ReasonCorrupt, Attention: true,
				Message: "etcd raised the CORRUPT alarm for c-2: writes are refused until it is disarmed; the operator compares the voters' data (HashKV) to find the member whose data differ, replaces it and then disarms the alarm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Plan(tc.state, name); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Plan =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}

// TestDivergentMemberReplacedAddFirst follows a divergent leader's replacement through the
// planner: leadership moves to the majority, a member is added and promoted, and only then is
// the divergent member removed; the healthy voters never fall below spec.replicas.
func TestDivergentMemberReplacedAddFirst(t *testing.T) {
	x := &sim{s: running(3), nextID: 200}
	x.s.Consistency, x.s.LeaderID = hashes(7, 9, 7), 101
	for steps := 0; ; steps++ {
		if steps > 30 {
			t.Fatal("planner does not converge")
		}
		a := Plan(x.s, name)
		if a.Kind == None {
			break
		}
		x.apply(t, a)
		x.check(t)
		if v := x.healthyVoters(); v < 3 {
			t.Fatalf("after %s: %d healthy voters, below the 3 replicas", a, v)
		}
	}
	want := []string{"move-leader c-0", "add c-3", "promote c-3", "remove c-1"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("changes = %v, want %v", x.changes, want)
	}
}

// A member whose start etcd's initial corruption check ended (it diverged while down, so no
// comparison of the serving voters names it) is removed to be replaced from the majority, once
// the others keep quorum, when its data differed from a majority of the other voters' and
// nothing says they are the wrong ones. etcd's check fails on one differing peer, which may be
// the bad one: then the member stays.
func TestCorruptAtStartIsReplaced(t *testing.T) {
	corrupt := func(peers ...uint64) func(*State) {
		return func(s *State) {
			s.Members[1].Reachable, s.Members[1].HasLeader = false, false
			s.Members[1].CorruptAtStart, s.Members[1].CorruptPeers = true, peers
		}
	}
	why := "etcd's initial corruption check found its data differ from those of a majority of the other voters, and etcd refuses to start it"
	removed := Action{Kind: Remove, Member: "c-1", ID: 101, Reason: v1alpha1.ReasonMemberCorrupt, Attention: true,
		Message: "removing member c-1 because " + why + "; a new member will take its place"}
	for _, tc := range []struct {
		name   string
		state  State
		remove bool
		want   Action
	}{
		{"differs from both others", running(3, corrupt(100, 102)), true, removed},
		{"3 of 4 others in 5", running(5, corrupt(100, 102, 103)), true, removed},
		{"another voter down", running(3, corrupt(100, 102), func(s *State) { s.Members[2].Reachable = false }), true, Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonQuorumAtRisk, Attention: true,
			Message: "member c-1 must be replaced because " + why + ", but only 1 other voters are healthy: waiting for them before removing it"}},
		// Only one peer differed: that peer may be the bad one.
		{"one of two others", running(3, corrupt(102)), false, Action{}},
		{"2 of 4 others in 5", running(5, corrupt(100, 102)), false, Action{}},
		// Not a majority of all the voters: two against two, or one against one.
		{"2 of 3 others in 4", running(4, corrupt(100, 102)), false, Action{}},
		{"the only other in 2", running(2, corrupt(100)), false, Action{}},
		{"3 of 3 others in 4", running(4, corrupt(100, 102, 103)), true, removed},
		// The others are known to be wrong, or to disagree.
		{"another voter divergent", running(3, corrupt(100, 102), func(s *State) { s.Consistency = hashes(7, 7, 9) }), false, Action{}},
		{"no majority", running(3, corrupt(100, 102), func(s *State) { s.Consistency = hashes(7, 8, 9) }), false, Action{}},
		{"CORRUPT raised for another", running(3, corrupt(100, 102), func(s *State) { s.Alarms, s.CorruptMembers = []string{AlarmCorrupt}, []string{"c-2"} }), false, Action{}},
	} {
		got := Plan(tc.state, name)
		switch {
		case tc.remove && !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		case !tc.remove && got.Kind == Remove && got.Member == "c-1":
			t.Errorf("%s: the member is removed: %+v", tc.name, got)
		}
	}
}
