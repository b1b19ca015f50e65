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
//
// Recoveries on the timeline (history.Recoveries) limit what is judged. A forced recovery
// writes the revisions after its own again under the same cluster ID, and a watcher resuming
// past them misses the new ones: the watch is judged up to its revision. After a lost
// cluster's restore, the events received before it above its revision are declared lost and
// left out; everything received after it is judged against the restored cluster, below
// which (compacted) a key's events are not compared.
func Check(h *history.History) history.Verdict {
	v := history.Verdict{Checker: Name, Status: history.VerdictInconclusive}
	if h.Final == nil || h.Final.Error != "" || !h.Final.Complete {
		v.Code, v.Reason = CodeFinalUnread, "inconclusive: the cluster's applied history could not be read"
		return v
	}
	if keys := h.Unexplained(); len(keys) > 0 {
		v.Code, v.Reason = CodeFinalUnread, fmt.Sprintf("inconclusive: the history of %d keys (%s) stops at a compaction that no declared restore explains", len(keys), keys[0])
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
	j := newJudge(h)
	ids := make([]int, 0, len(watchers))
	for id := range watchers {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	delivered := 0
	for _, id := range ids {
		delivered += j.watcher(id)
	}
	for _, code := range []history.Code{CodeOutOfOrder, CodeDuplicate, CodeMissedEvent, CodePhantomEvent} {
		if len(j.problems[code]) == 0 {
			continue
		}
		if v.Code == "" || v.Status != history.VerdictFail {
			v.Status, v.Code = history.VerdictFail, code
		}
		for _, d := range j.problems[code] {
			if len(v.Details) < maxDetails {
				v.Details = append(v.Details, d)
			}
		}
	}
	if v.Status == history.VerdictFail {
		p := j.problems
		v.Reason = fmt.Sprintf("%d events out of order, %d duplicated, %d missed, %d never applied",
			len(p[CodeOutOfOrder]), len(p[CodeDuplicate]), len(p[CodeMissedEvent]), len(p[CodePhantomEvent]))
		return v
	}
	v.Status, v.Code = history.VerdictPass, CodeInOrder
	v.Reason = fmt.Sprintf("%d watchers received %d events in revision order, none missed or duplicated, up to the last acknowledged write (revision %d)", len(ids), delivered, j.lastAcked)
	return v
}

// judge holds what every watcher is judged against.
type judge struct {
	h       *history.History
	applied map[at]change
	// unread: below this revision a key's history was compacted by a declared restore.
	unread map[string]int64
	// forced is the lowest forced recovery's revision (0: none): nothing after is judged.
	forced    int64
	lastAcked int64
	problems  map[history.Code][]string
}

func newJudge(h *history.History) *judge {
	j := &judge{h: h, applied: map[at]change{}, unread: map[string]int64{}, problems: map[history.Code][]string{}}
	for key, ws := range h.Final.Applied {
		if !strings.HasPrefix(key, h.WatchPrefix) {
			continue
		}
		for _, w := range ws {
			j.applied[at{w.ModRevision, key}] = change{key, w.Value, w.Delete}
		}
		if _, ok := h.Explained(key, firstRevision(ws)); ok {
			j.unread[key] = ws[0].ModRevision
		}
	}
	for _, e := range h.Recoveries() {
		if !e.Restore() && (j.forced == 0 || e.Revision < j.forced) {
			j.forced = e.Revision
		}
	}
	for _, o := range h.Ops {
		if o.Acknowledged() && strings.HasPrefix(o.Key, h.WatchPrefix) && o.Revision > j.lastAcked && !h.DeclaredLost(o) {
			j.lastAcked = o.Revision
		}
	}
	if j.forced != 0 {
		j.lastAcked = min(j.lastAcked, j.forced)
	}
	return j
}

func firstRevision(ws []history.AppliedWrite) int64 {
	if len(ws) == 0 {
		return 0
	}
	return ws[0].ModRevision
}

// judged reports whether event e is judged: not after a forced recovery's revision, and not
// one of the events a restore declared lost (received before it, above its revision).
func (j *judge) judged(e history.WatchEvent) bool {
	if j.forced != 0 && e.Revision > j.forced {
		return false
	}
	for _, r := range j.h.Recoveries() {
		if r.Restore() && e.Time < r.Time && e.Revision > r.Revision {
			return false
		}
	}
	return true
}

// watcher judges one watcher and returns how many events it received.
func (j *judge) watcher(id int) int {
	h, applied, unread, lastAcked := j.h, j.applied, j.unread, j.lastAcked
	add := func(code history.Code, format string, args ...any) {
		j.problems[code] = append(j.problems[code], fmt.Sprintf("watcher %d: ", id)+fmt.Sprintf(format, args...))
	}
	var marks []history.WatchMark
	for _, m := range h.WatchMarks {
		if m.Watcher == id {
			marks = append(marks, m)
		}
	}
	var events []history.WatchEvent
	for _, e := range h.WatchEvents {
		if e.Watcher == id && j.judged(e) {
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
