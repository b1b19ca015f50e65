package watch

import (
	"testing"

	"github.com/quorate-dev/quorate/e2e/history"
)

const prefix = "/w/k"

// base: writes a..e to k1 at revisions 2..6, acknowledged, applied, and read back.
func base() *history.History {
	h := &history.History{WatchPrefix: prefix, Final: &history.Final{Applied: map[string][]history.AppliedWrite{}, Complete: true}}
	for i, v := range []string{"a", "b", "c", "d", "e"} {
		rev := int64(i + 2)
		h.Ops = append(h.Ops, history.Op{Type: history.Put, Key: prefix + "1", Value: v, Status: history.OK, Revision: rev})
		h.Final.Applied[prefix+"1"] = append(h.Final.Applied[prefix+"1"], history.AppliedWrite{Key: prefix + "1", Value: v, ModRevision: rev})
	}
	return h
}

func start(rev int64) history.WatchMark {
	return history.WatchMark{Watcher: 0, Kind: history.WatchStart, Revision: rev}
}

func ev(rev int64, value string) history.WatchEvent {
	return history.WatchEvent{Watcher: 0, Revision: rev, Key: prefix + "1", Value: value}
}

// restored declares a lost cluster restored from rev at time 100 (after every event of all()).
func restored(rev int64) history.Event {
	return history.Event{Time: 100, Kind: history.EventRecovery, Name: history.RecoveryRestored, Revision: rev}
}

func all() []history.WatchEvent {
	return []history.WatchEvent{ev(2, "a"), ev(3, "b"), ev(4, "c"), ev(5, "d"), ev(6, "e")}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		marks  []history.WatchMark
		events []history.WatchEvent
		change func(*history.History)
		want   history.Expectation
	}{
		{"every event, in order", []history.WatchMark{start(2)}, all(), nil, history.Expectation{Status: history.VerdictPass, Code: CodeInOrder}},
		{"a watcher started later sees from there on", []history.WatchMark{start(4)}, all()[2:], nil, history.Expectation{Status: history.VerdictPass, Code: CodeInOrder}},
		{"resumed after a broken watch from the next revision", []history.WatchMark{start(2), {Kind: history.WatchBroken, Error: "no leader"}, start(4)},
			all(), nil, history.Expectation{Status: history.VerdictPass, Code: CodeInOrder}},
		{"out of order", []history.WatchMark{start(2)},
			[]history.WatchEvent{ev(2, "a"), ev(4, "c"), ev(3, "b"), ev(5, "d"), ev(6, "e")}, nil, history.ExpectFail(CodeOutOfOrder)},
		{"delivered twice after a resume from too early", []history.WatchMark{start(2), {Kind: history.WatchBroken}, start(3)},
			[]history.WatchEvent{ev(2, "a"), ev(3, "b"), ev(3, "b"), ev(4, "c"), ev(5, "d"), ev(6, "e")}, nil, history.ExpectFail(CodeDuplicate)},
		{"a gap", []history.WatchMark{start(2)},
			[]history.WatchEvent{ev(2, "a"), ev(3, "b"), ev(5, "d"), ev(6, "e")}, nil, history.ExpectFail(CodeMissedEvent)},
		{"a resume that skipped what was missed", []history.WatchMark{start(2), {Kind: history.WatchBroken}, start(5)},
			[]history.WatchEvent{ev(2, "a"), ev(3, "b"), ev(5, "d"), ev(6, "e")}, nil, history.ExpectFail(CodeMissedEvent)},
		{"a compacted revision reported as compacted", []history.WatchMark{start(2), {Kind: history.WatchCompacted, Revision: 4}, start(4)},
			[]history.WatchEvent{ev(4, "c"), ev(5, "d"), ev(6, "e")}, nil, history.Expectation{Status: history.VerdictPass, Code: CodeInOrder}},
		{"a compaction not reported is a gap", []history.WatchMark{start(2)},
			[]history.WatchEvent{ev(4, "c"), ev(5, "d"), ev(6, "e")}, nil, history.ExpectFail(CodeMissedEvent)},
		{"the last acknowledged write never delivered", []history.WatchMark{start(2)}, all()[:4], nil, history.ExpectFail(CodeMissedEvent)},
		{"an event the cluster never applied", []history.WatchMark{start(2)},
			append(all(), history.WatchEvent{Revision: 7, Key: prefix + "1", Value: "ghost"}), nil, history.ExpectFail(CodePhantomEvent)},
		{"a value other than the one applied", []history.WatchMark{start(2)},
			[]history.WatchEvent{ev(2, "a"), ev(3, "x"), ev(4, "c"), ev(5, "d"), ev(6, "e")}, nil, history.ExpectFail(CodePhantomEvent)},
		{"keys outside the watched range do not count", []history.WatchMark{start(2)}, all(), func(h *history.History) {
			h.Final.Applied["/w/filler"] = []history.AppliedWrite{{Key: "/w/filler", Value: "big", ModRevision: 7}}
		}, history.Expectation{Status: history.VerdictPass, Code: CodeInOrder}},
		{"after a declared recovery, later revisions are not judged", []history.WatchMark{start(2)},
			append(all()[:3], history.WatchEvent{Revision: 5, Key: prefix + "1", Value: "lost"}), func(h *history.History) {
				h.Events = []history.Event{{Kind: history.EventRecovery, Revision: 4}}
			}, history.Expectation{Status: history.VerdictPass, Code: CodeInOrder}},
		// Restored from revision 5 and compacted there: k1's read-back history starts at d (5);
		// e (6), received before the restore, was declared lost.
		{"below a declared restore's compaction, events are not compared", []history.WatchMark{start(2)}, all(), func(h *history.History) {
			h.Events = []history.Event{restored(5)}
			h.Final.Compacted, h.Final.Applied[prefix+"1"] = map[string]bool{prefix + "1": true}, h.Final.Applied[prefix+"1"][3:4]
		}, history.Expectation{Status: history.VerdictPass, Code: CodeInOrder}},
		{"a compacted history without a declared restore", []history.WatchMark{start(2)}, all(), func(h *history.History) {
			h.Final.Compacted, h.Final.Applied[prefix+"1"] = map[string]bool{prefix + "1": true}, h.Final.Applied[prefix+"1"][3:]
		}, history.Expectation{Status: history.VerdictInconclusive, Code: CodeFinalUnread}},
		{"at or above the compaction, a wrong value still counts", []history.WatchMark{start(2)},
			[]history.WatchEvent{ev(2, "a"), ev(3, "b"), ev(4, "c"), ev(5, "x"), ev(6, "e")}, func(h *history.History) {
				h.Events = []history.Event{restored(6)}
				h.Final.Compacted, h.Final.Applied[prefix+"1"] = map[string]bool{prefix + "1": true}, h.Final.Applied[prefix+"1"][3:]
			}, history.ExpectFail(CodePhantomEvent)},
		{"after a restore, what the restored cluster delivers is judged", []history.WatchMark{start(2)},
			append(all(), history.WatchEvent{Time: 150, Revision: 7, Key: prefix + "1", Value: "ghost"}), func(h *history.History) {
				h.Events = []history.Event{restored(6)}
			}, history.ExpectFail(CodePhantomEvent)},
		{"no final state", []history.WatchMark{start(2)}, all(), func(h *history.History) { h.Final = nil },
			history.Expectation{Status: history.VerdictInconclusive, Code: CodeFinalUnread}},
		{"no watcher", nil, nil, nil, history.Expectation{Status: history.VerdictInconclusive, Code: CodeNoWatch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := base()
			h.WatchMarks, h.WatchEvents = tc.marks, tc.events
			if tc.change != nil {
				tc.change(h)
			}
			v := Check(h)
			if v.Status != tc.want.Status || v.Code != tc.want.Code && tc.want.Code != "" {
				t.Fatalf("verdict %v %v, want %v", v, v.Details, tc.want)
			}
		})
	}
}
