package splitbrain

import (
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/history"
)

const ms = int64(time.Millisecond)

// poll returns samples of three members every 250ms for n rounds; f may alter each sample.
func poll(n int, f func(round int, s *history.Sample)) []history.Sample {
	var out []history.Sample
	for r := 0; r < n; r++ {
		for i, ep := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"} {
			s := history.Sample{Time: int64(r) * 250 * ms, Endpoint: ep, MemberID: uint64(i + 1), ClusterID: 0xc1,
				Leader: 1, RaftTerm: 2, Members: []uint64{1, 2, 3}}
			if f != nil {
				f(r, &s)
			}
			out = append(out, s)
		}
	}
	return out
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []history.Sample
		want    history.Expectation
		because string
	}{
		{"healthy cluster", poll(40, nil), history.Expectation{Status: history.VerdictPass}, "one cluster ID"},
		{"leader change to a new term", poll(40, func(r int, s *history.Sample) {
			if r > 20 {
				s.Leader, s.RaftTerm = 2, 3
			}
		}), history.Expectation{Status: history.VerdictPass}, "across 2 terms"},
		{"two cluster IDs", poll(40, func(r int, s *history.Sample) {
			if s.Endpoint == "10.0.0.3" && r > 10 {
				s.ClusterID = 0xbad
			}
		}), history.ExpectFail(CodeClusterIDs), "different cluster IDs: bad"},
		{"two leaders in one term", poll(40, func(r int, s *history.Sample) {
			if s.Endpoint == "10.0.0.3" && r == 15 {
				s.Leader = 3
			}
		}), history.ExpectFail(CodeTwoLeaders), "two leaders in term 2"},
		{"a new leader reported with the previous term until its first entry applies", poll(40, func(r int, s *history.Sample) {
			if r >= 20 {
				s.Leader, s.RaftTerm = 2, 3
				if r < 22 {
					s.RaftTerm = 2 // etcd's status: new leader, term of the last applied entry
				}
			}
		}), history.Expectation{Status: history.VerdictPass}, ""},
		{"a member rejoining after a partition reports the new leader with its old term", poll(60, func(r int, s *history.Sample) {
			switch {
			case r >= 20 && r < 30 && s.Endpoint == "10.0.0.1":
				s.Leader = 0 // cut off: no leader, still at term 2
			case r >= 20 && r < 30:
				s.Leader, s.RaftTerm = 2, 4
			case r >= 30 && r < 34 && s.Endpoint == "10.0.0.1":
				s.Leader = 2 // back: knows leader 2, has not applied a term-4 entry yet
				if r == 32 {
					s.Leader = 0
				}
			case r >= 30:
				s.Leader, s.RaftTerm = 2, 4
			}
		}), history.Expectation{Status: history.VerdictPass}, ""},
		{"an old leader rejoining names the leader of a term it never applied", poll(60, func(r int, s *history.Sample) {
			switch {
			case r >= 20 && s.Endpoint == "10.0.0.1" && r < 30:
				s.Leader = 0 // the old leader, cut off, stays at term 2
			case r >= 20 && r < 30:
				s.Leader, s.RaftTerm = 2, 3
			case r == 30 && s.Endpoint == "10.0.0.1":
				s.Leader = 2 // back: names leader 2, still at its term 2
			case r > 30:
				s.Leader, s.RaftTerm = 3, 4 // then member 3 wins term 4
			}
		}), history.Expectation{Status: history.VerdictPass}, ""},
		{"two leaders that stay in one term", poll(40, func(r int, s *history.Sample) {
			if r >= 20 {
				s.RaftTerm = 3
				if s.Endpoint != "10.0.0.1" {
					s.Leader = 2
				}
			}
		}), history.ExpectFail(CodeTwoLeaders), "two leaders in term 3"},
		{"a removed member's stale view is tolerated", poll(80, func(r int, s *history.Sample) {
			if r > 10 && s.Endpoint != "10.0.0.3" {
				s.Members = []uint64{1, 2}
			}
		}), history.Expectation{Status: history.VerdictPass}, ""},
		{"short disagreement during a membership change", poll(80, func(r int, s *history.Sample) {
			if r > 10 && (s.Endpoint == "10.0.0.1" || r > 14) {
				s.Members = []uint64{1, 2, 3, 4}
			}
		}), history.Expectation{Status: history.VerdictPass}, ""},
		{"long disagreement", poll(80, func(r int, s *history.Sample) {
			if r > 10 && s.Endpoint != "10.0.0.2" {
				s.Members = []uint64{1, 2, 3, 4}
			}
		}), history.ExpectFail(CodeMembershipDisagreement), "disagreed about membership"},
		{"a member cut off from the leader keeps its old view until it rejoins", poll(80, func(r int, s *history.Sample) {
			s.Members = []uint64{1, 2, 3, 4} // member 4 is not polled
			switch {
			case r > 10 && s.Endpoint == "10.0.0.1" && r <= 60:
				s.Leader = 0 // partitioned, so it cannot learn that member 4 was removed
			case r > 10:
				s.Leader, s.RaftTerm, s.Members = 2, 3, []uint64{1, 2, 3}
			}
		}), history.Expectation{Status: history.VerdictPass}, ""},
		{"a member that follows a leader keeps an old view for long", poll(80, func(r int, s *history.Sample) {
			s.Members = []uint64{1, 2, 3, 4}
			if r > 10 && s.Endpoint != "10.0.0.1" {
				s.Members = []uint64{1, 2, 3}
			}
		}), history.ExpectFail(CodeMembershipDisagreement), "disagreed about membership"},
		{"no member answered", poll(4, func(r int, s *history.Sample) { s.Error, s.ClusterID = "refused", 0 }), history.Expectation{Status: history.VerdictInconclusive, Code: CodeNoSamples}, "inconclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(&history.History{Samples: tc.samples}, Bounds{MembershipDisagreement: 5 * time.Second, Staleness: time.Second})
			if v.Status != tc.want.Status || (tc.want.Code != "" && v.Code != tc.want.Code) || !strings.Contains(v.Reason, tc.because) {
				t.Fatalf("verdict %v, want %v because %q", v, tc.want, tc.because)
			}
		})
	}
}

// A cluster restored at 5 s has another cluster ID and starts again at term 2 with another
// leader: a split brain judged as one cluster, none epoch by epoch. The old cluster answering
// after the restore still is one.
func TestCheckAcrossARestore(t *testing.T) {
	restored := func(r int, s *history.Sample) {
		if r >= 20 {
			s.ClusterID, s.Leader, s.MemberID = 0xc2, 5, s.MemberID+4
		}
	}
	restore := []history.Event{{Time: 20 * 250 * ms, Kind: history.EventRecovery, Name: history.RecoveryRestored, Revision: 7}}
	forced := []history.Event{{Time: 20 * 250 * ms, Kind: history.EventRecovery, Name: history.RecoveryForced, Revision: 7}}
	for _, tc := range []struct {
		name    string
		samples []history.Sample
		events  []history.Event
		want    history.Expectation
	}{
		{"not declared", poll(40, restored), nil, history.ExpectFail(CodeClusterIDs)},
		{"declared", poll(40, restored), restore, history.Expectation{Status: history.VerdictPass, Code: CodeOneLeaderPerTerm}},
		{"the old cluster answers after the restore", poll(40, func(r int, s *history.Sample) {
			if s.Endpoint != "10.0.0.3" || r < 30 {
				restored(r, s)
			}
		}), restore, history.ExpectFail(CodeClusterIDs)},
		// A forced recovery keeps the cluster ID: two leaders in term 2, one before and one
		// after it, are still two leaders in one term.
		{"a forced recovery with a second leader in the same term", poll(40, func(r int, s *history.Sample) {
			if r >= 20 {
				s.Leader = 2
			}
		}), forced, history.ExpectFail(CodeTwoLeaders)},
		{"a new cluster ID after a forced recovery", poll(40, restored), forced, history.ExpectFail(CodeClusterIDs)},
		{"the old cluster answers after the restore, part of its poll failing", poll(40, func(r int, s *history.Sample) {
			restored(r, s)
			if s.Endpoint == "10.0.0.3" && r >= 20 && r < 30 {
				s.ClusterID, s.MemberID, s.Leader, s.Error = 0xc1, 3, 3, "member list: timed out"
			}
		}), restore, history.ExpectFail(CodeClusterIDs)},
		{"a restore declared before the old cluster's last answer", poll(40, restored),
			[]history.Event{{Time: 10 * 250 * ms, Kind: history.EventRecovery, Name: history.RecoveryRestored, Revision: 7}}, history.ExpectFail(CodeClusterIDs)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(&history.History{Samples: tc.samples, Events: tc.events}, Bounds{MembershipDisagreement: 5 * time.Second, Staleness: time.Second})
			if !tc.want.Met(v) {
				t.Fatalf("verdict %v, want %v", v, tc.want)
			}
		})
	}
}
