package lostwrites

import (
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

func withRecovery(h *history.History, rev int64) *history.History {
	h.Events = append(h.Events, history.Event{Time: 1000, Kind: history.EventRecovery, Name: history.RecoveryForced, Revision: rev})
	return h
}

func compacted(h *history.History) *history.History {
	h.Final.Compacted = map[string]bool{"k": true}
	return h
}

// withRestore declares a lost cluster restored from rev at time 100.
func withRestore(h *history.History, rev int64) *history.History {
	h.Events = append(h.Events, history.Event{Time: 100, Kind: history.EventRecovery, Name: history.RecoveryRestored, Revision: rev})
	return h
}

func at(o history.Op, call int64) history.Op {
	o.Call = call
	return o
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    *history.History
		want history.Expectation
	}{
		{"superseded writes are not lost", hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.OK, 3)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}, {Key: "k", Value: "b", ModRevision: 3}},
			map[string]string{"k": "b"}), history.Expectation{Status: history.VerdictPass}},
		{"unknown writes may be missing", hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.Unknown, 0)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}},
			map[string]string{"k": "a"}), history.Expectation{Status: history.VerdictPass}},
		{"an acknowledged write is missing", hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.OK, 3)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}},
			map[string]string{"k": "a"}), history.ExpectFail(CodeLostWrite)},
		{"a write nobody issued", hist(
			[]history.Op{put("a", history.OK, 2)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}, {Key: "k", Value: "ghost", ModRevision: 3}},
			map[string]string{"k": "ghost"}), history.ExpectFail(CodePhantomWrite)},
		{"a failed write was applied", hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.Fail, 0)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}, {Key: "k", Value: "b", ModRevision: 3}},
			map[string]string{"k": "b"}), history.ExpectFail(CodeFailedWriteApplied)},
		{"final read disagrees", hist(
			[]history.Op{put("a", history.OK, 2)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}},
			map[string]string{"k": "zzz"}), history.ExpectFail(CodeFinalMismatch)},
		{"acknowledged at another revision", hist(
			[]history.Op{put("a", history.OK, 9)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}},
			map[string]string{"k": "a"}), history.ExpectFail(CodeWrongRevision)},
		{"writes after a forced recovery's revision are a declared loss", withRecovery(hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.OK, 5)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}},
			map[string]string{"k": "a"}), 4), history.Expectation{Status: history.VerdictPass, Code: CodeDeclaredLoss}},
		{"a write before it is still lost", withRecovery(hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.OK, 5)},
			[]history.AppliedWrite{{Key: "k", Value: "b", ModRevision: 5}},
			map[string]string{"k": "b"}), 4), history.ExpectFail(CodeLostWrite)},
		// A cluster restored from revision 4 and compacted there: k's history starts with its
		// value at 4, b (revision 3); a (revision 2) was overwritten before it.
		{"overwritten below a declared restore's compaction", withRestore(compacted(hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.OK, 3), at(put("c", history.OK, 6), 200)},
			[]history.AppliedWrite{{Key: "k", Value: "b", ModRevision: 3}, {Key: "k", Value: "c", ModRevision: 6}},
			map[string]string{"k": "c"})), 4), history.Expectation{Status: history.VerdictPass, Code: CodeAllKept}},
		{"compacted history without a declared restore", compacted(hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.OK, 3)},
			[]history.AppliedWrite{{Key: "k", Value: "b", ModRevision: 3}},
			map[string]string{"k": "b"})), history.Expectation{Status: history.VerdictInconclusive, Code: CodeFinalUnread}},
		{"compacted history with a forced recovery only", withRecovery(compacted(hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.OK, 3)},
			[]history.AppliedWrite{{Key: "k", Value: "b", ModRevision: 3}},
			map[string]string{"k": "b"})), 4), history.Expectation{Status: history.VerdictInconclusive, Code: CodeFinalUnread}},
		{"a write between the key's value at the compaction and the restore's revision", withRestore(compacted(hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.OK, 3)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}},
			map[string]string{"k": "a"})), 4), history.ExpectFail(CodeLostWrite)},
		{"history compacted above the restore's revision", withRestore(compacted(hist(
			[]history.Op{put("a", history.OK, 2), put("b", history.OK, 6)},
			[]history.AppliedWrite{{Key: "k", Value: "b", ModRevision: 6}},
			map[string]string{"k": "b"})), 4), history.Expectation{Status: history.VerdictInconclusive, Code: CodeFinalUnread}},
		{"a write the restored cluster acknowledged, then lost", withRestore(hist(
			[]history.Op{put("a", history.OK, 2), at(put("c", history.OK, 6), 200)},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}},
			map[string]string{"k": "a"}), 4), history.ExpectFail(CodeLostWrite)},
		{"a compare-and-set that did not swap, applied", hist(
			[]history.Op{put("a", history.OK, 2), {Type: history.CAS, Key: "k", Expect: "z", Value: "b", Status: history.OK, Revision: 2}},
			[]history.AppliedWrite{{Key: "k", Value: "a", ModRevision: 2}, {Key: "k", Value: "b", ModRevision: 3}},
			map[string]string{"k": "b"}), history.ExpectFail(CodeFailedWriteApplied)},
		{"no final state", &history.History{Ops: []history.Op{put("a", history.OK, 2)}}, history.Expectation{Status: history.VerdictInconclusive, Code: CodeFinalUnread}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(tc.h)
			if v.Status != tc.want.Status || (tc.want.Code != "" && v.Code != tc.want.Code) {
				t.Fatalf("verdict %v %v, want %v", v, v.Details, tc.want)
			}
		})
	}
}
