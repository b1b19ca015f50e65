package lostwrites

import (
	"strings"
	"testing"

	"github.com/quorate-dev/quorate/e2e/history"
)

func hist(ops []history.Op, applied []history.AppliedWrite, final map[string]string) *history.History {
	f := &history.Final{Applied: map[string][]history.AppliedWrite{}, Values: final, Complete: true}
	for _, w := range applied {
		f.Applied[w.Key] = append(f.Applied[w.Key], w)
	}
	return &history.History{Ops: ops, Final: f}
}

func put(v string, st history.Status, rev int64) history.Op {
	return history.Op{Type: history.Put, Key: "k", Value: v, Status: st, Revision: rev}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       *history.History
		pass    bool
		because string
	}{
		{"superseded writes are not lost", hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.OK, 3)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}, {Key: "k", Value: "b", ModRevision: 3}},
			map[string]string{"k": "b"}), true, ""},
		{"unknown writes may be missing", hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.Unknown, 0)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}},
			map[string]string{"k": "a"}), true, ""},
		{"an acknowledged write is missing", hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.OK, 3)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}},
			map[string]string{"k": "a"}), false, "1 of 2 acknowledged writes lost"},
		{"a write nobody issued", hist(
			[]history.Op{put("a", history.OK, 2)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}, {Key: "k", Value: "ghost", ModRevision: 3}},
			map[string]string{"k": "ghost"}), false, "1 phantom writes"},
		{"a failed write was applied", hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.Fail, 0)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}, {Key: "k", Value: "b", ModRevision: 3}},
			map[string]string{"k": "b"}), false, "1 failed writes applied"},
		{"final read disagrees", hist(
			[]history.Op{put("a", history.OK, 2)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}},
			map[string]string{"k": "zzz"}), false, "1 keys whose final read disagrees"},
		{"acknowledged at another revision", hist(
			[]history.Op{put("a", history.OK, 9)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}},
			map[string]string{"k": "a"}), false, "1 at the wrong revision"},
		{"no final state", &history.History{Ops: []history.Op{put("a", history.OK, 2)}}, false, "inconclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(tc.h)
			if v.Pass != tc.pass || !strings.Contains(v.Reason, tc.because) {
				t.Fatalf("verdict %v %v, want pass=%v because %q", v, v.Details, tc.pass, tc.because)
			}
		})
	}
}
