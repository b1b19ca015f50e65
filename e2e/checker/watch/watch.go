// Package watch checks the guarantees etcd's watch gives, from what the workload's watchers
// received: for each watcher, events arrive in revision order with no duplicates; from the
// revision it started at to the last acknowledged write, every write the cluster applied to the
// watched keys is delivered, including across the watcher's restarts (each resumes from the
// revision after the last event it received); a revision lost to compaction is excused only
// where etcd said so; and no event is delivered that the cluster did not apply.
package watch

import (
	"fmt"
	"sort"
	"strings"

	"github.com/quorate-dev/quorate/e2e/history"
)

// Codes of the watch verdict; a failure carries the code of the first kind of problem.
// Name is the checker's name in verdicts and reports.
const Name history.CheckerName = "watch"

const (
	CodeInOrder      history.Code = "in-order"
	CodeOutOfOrder   history.Code = "out-of-order"
	CodeDuplicate    history.Code = "duplicate"
	CodeMissedEvent  history.Code = "missed-event"
	CodePhantomEvent history.Code = "phantom-event"
	// CodeFinalUnread: the applied history could not be read (inconclusive).
	CodeFinalUnread history.Code = "final-unread"
	// CodeNoWatch: the run recorded no watcher (inconclusive).
	CodeNoWatch history.Code = "no-watch"
)

const maxDetails = 20

type change struct {
	key, value string
	delete     bool
}

type at struct {
	rev int64
	key string
}

// Check judges the watchers of h.
func Check(h *history.History) history.Verdict {
	v := history.Verdict{Checker: Name, Status: history.VerdictInconclusive}
	if h.Final == nil || h.Final.Error != "" || !h.Final.Complete {
		v.Code, v.Reason = CodeFinalUnread, "inconclusive: the cluster's applied history could not be read"
		return v
	}
	watchers := map[int]bool{}
	for _, m := range h.WatchMarks {
		watchers[m.Watcher] = true
	}
	if len(watchers) == 0 {
		v.Code, v.Reason = CodeNoWatch, "inconclusive: no watcher ran"
		return v
	}
	applied := map[at]change{}
	for key, ws := range h.Final.Applied {
		if !strings.HasPrefix(key, h.WatchPrefix) {
			continue
		}
		for _, w := range ws {
			applied[at{w.ModRevision, key}] = change{key, w.Value, w.Delete}
		}
	}
	// A forced recovery declared what after its revision may be lost: watchers may have seen
	// writes that are gone, and revisions after it were written again. The watch is judged up
	// to that revision.
	var declared int64
	for _, e := range h.Events {
		if e.Kind == history.EventRecovery && (declared == 0 || e.Revision < declared) {
			declared = e.Revision
		}
	}
	var lastAcked int64
	for _, o := range h.Ops {
		if o.Acknowledged() && strings.HasPrefix(o.Key, h.WatchPrefix) && o.Revision > lastAcked {
			lastAcked = o.Revision
		}
	}
	ids := make([]int, 0, len(watchers))
	for id := range watchers {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	problems := map[history.Code][]string{}
	delivered := 0
	if declared != 0 {
		lastAcked = min(lastAcked, declared)
	}
	// Below a declared recovery's compaction the read-back history of a key starts with its
	// value there: events before it cannot be compared with what the cluster applied.
	unread := map[string]int64{}
	if h.Final.Compacted && declared != 0 {
		for key, ws := range h.Final.Applied {
			if len(ws) > 0 && ws[0].ModRevision <= declared {
				unread[key] = ws[0].ModRevision
			}
		}
	}
	for _, id := range ids {
		n := checkWatcher(h, id, applied, unread, lastAcked, declared, problems)
		delivered += n
	}
	for _, code := range []history.Code{CodeOutOfOrder, CodeDuplicate, CodeMissedEvent, CodePhantomEvent} {
		if len(problems[code]) == 0 {
			continue
		}
		if v.Code == "" || v.Status != history.VerdictFail {
			v.Status, v.Code = history.VerdictFail, code
		}
		for _, d := range problems[code] {
			if len(v.Details) < maxDetails {
				v.Details = append(v.Details, d)
			}
		}
	}
	if v.Status == history.VerdictFail {
		v.Reason = fmt.Sprintf("%d events out of order, %d duplicated, %d missed, %d never applied",
			len(problems[CodeOutOfOrder]), len(problems[CodeDuplicate]), len(problems[CodeMissedEvent]), len(problems[CodePhantomEvent]))
		return v
	}
	v.Status, v.Code = history.VerdictPass, CodeInOrder
	v.Reason = fmt.Sprintf("%d watchers received %d events in revision order, none missed or duplicated, up to the last acknowledged write (revision %d)", len(ids), delivered, lastAcked)
	return v
}

// checkWatcher judges one watcher and returns how many events it received.
func checkWatcher(h *history.History, id int, applied map[at]change, unread map[string]int64, lastAcked, declared int64, problems map[history.Code][]string) int {
	add := func(code history.Code, format string, args ...any) {
		problems[code] = append(problems[code], fmt.Sprintf("watcher %d: ", id)+fmt.Sprintf(format, args...))
	}
	var marks []history.WatchMark
	for _, m := range h.WatchMarks {
		if m.Watcher == id {
			marks = append(marks, m)
		}
	}
	var events []history.WatchEvent
	for _, e := range h.WatchEvents {
		if e.Watcher == id && (declared == 0 || e.Revision <= declared) {
			events = append(events, e)
		}
	}
	// Revisions etcd said were compacted before the watcher could see them: from the start
	// the watcher asked for up to the compaction revision.
	type span struct{ from, to int64 }
	var excused []span
	var first int64 = -1
	var start int64
	for _, m := range marks {
		switch m.Kind {
		case history.WatchStart:
			start = m.Revision
			if first < 0 {
				first = m.Revision
			}
		case history.WatchCompacted:
			excused = append(excused, span{start, m.Revision})
		}
	}
	if first < 0 {
		return len(events)
	}
	received := map[at]bool{}
	var last at
	for _, e := range events {
		k := at{e.Revision, e.Key}
		switch {
		case received[k]:
			add(CodeDuplicate, "revision %d of %s delivered twice", e.Revision, e.Key)
			continue
		case e.Revision < last.rev || (e.Revision == last.rev && e.Key <= last.key):
			add(CodeOutOfOrder, "revision %d of %s delivered after revision %d of %s", e.Revision, e.Key, last.rev, last.key)
		}
		received[k] = true
		last = k
		if e.Revision < unread[e.Key] {
			continue
		}
		c, ok := applied[k]
		if !ok || c.value != e.Value || c.delete != e.Delete {
			add(CodePhantomEvent, "revision %d of %s (%q) is not a write the cluster applied", e.Revision, e.Key, e.Value)
		}
	}
	end := max(last.rev, lastAcked)
	keys := make([]at, 0, len(applied))
	for k := range applied {
		if k.rev >= first && k.rev <= end && !received[k] {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].rev < keys[j].rev })
	for _, k := range keys {
		excusedBy := false
		for _, s := range excused {
			excusedBy = excusedBy || (k.rev >= s.from && k.rev < s.to)
		}
		if !excusedBy {
			add(CodeMissedEvent, "revision %d of %s was never delivered (watching from revision %d, last event at %d)", k.rev, k.key, first, last.rev)
		}
	}
	return len(events)
}
