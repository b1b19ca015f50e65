package linearizability

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/quorate-dev/quorate/e2e/history"
)

// ordered reports whether every operation of a key can be placed by its revision: each ended
// (no write of unknown outcome is left in) and etcd reported the revision it ran at.
func ordered(ops []porcupine.Operation) bool {
	for _, p := range ops {
		if o := p.Input.(input).Op; o.Status != history.OK || o.Revision == 0 {
			return false
		}
	}
	return true
}

// inRevisionOrder checks one key's operations, each acknowledged with a revision, without a
// search. etcd's revisions leave one order to check: the writes by revision, each read after
// the newest write at or below the revision it reports (and before the next), reads of one
// state by call time. The order is linearizable if every operation sees the state the
// writes before it leave, and no operation comes before one that had returned before it was
// called. It returns what breaks that, or "" (start is the history's start, for the times).
func inRevisionOrder(ops []porcupine.Operation, start int64) string {
	var writes, reads []history.Op
	for _, p := range ops {
		if o := p.Input.(input).Op; o.Acknowledged() {
			writes = append(writes, o)
		} else {
			reads = append(reads, o)
		}
	}
	slices.SortStableFunc(writes, func(a, b history.Op) int { return cmp.Compare(a.Revision, b.Revision) })
	after := func(i int) state { // the state after writes[:i+1]
		if i < 0 {
			return state{}
		}
		return state{Found: true, Value: writes[i].Value, Rev: writes[i].Revision}
	}
	for i, w := range writes {
		if i > 0 && w.Revision == writes[i-1].Revision {
			return fmt.Sprintf("%s and %s were both acknowledged at revision %d", describe(writes[i-1]), describe(w), w.Revision)
		}
		if s := after(i - 1); w.Type == history.CAS && !s.matches(w) {
			return fmt.Sprintf("%s swapped, but the write before it was %s", describe(w), describeState(s))
		}
	}
	// floor is the index of the newest write at or below a read's revision (-1: none).
	floor := func(o history.Op) int {
		return sort.Search(len(writes), func(i int) bool { return writes[i].Revision > o.Revision }) - 1
	}
	slices.SortStableFunc(reads, func(a, b history.Op) int { return cmp.Or(cmp.Compare(floor(a), floor(b)), cmp.Compare(a.Call, b.Call)) })
	for _, r := range reads {
		s := after(floor(r))
		if !(input{Op: r, Floor: s.Rev}).reads(s) || (r.Type == history.CAS && s.matches(r)) {
			return fmt.Sprintf("%s, but the newest write at or below revision %d was %s", describe(r), r.Revision, describeState(s))
		}
	}
	// The whole order: reads before the first write, the first write, the reads after it...
	order := make([]history.Op, 0, len(ops))
	ri := 0
	for wi := -1; wi < len(writes); wi++ {
		if wi >= 0 {
			order = append(order, writes[wi])
		}
		for ; ri < len(reads) && floor(reads[ri]) == wi; ri++ {
			order = append(order, reads[ri])
		}
	}
	// Real time, from the end: first is the operation that returned first among those after i.
	at := func(t int64) time.Duration { return time.Duration(t - start).Round(time.Millisecond) }
	first := -1
	for i := len(order) - 1; i >= 0; i-- {
		if first >= 0 && order[first].Return < order[i].Call {
			return fmt.Sprintf("%s, called at +%s, comes before %s by their revisions, though that one had returned at +%s",
				describe(order[i]), at(order[i].Call), describe(order[first]), at(order[first].Return))
		}
		if first < 0 || order[i].Return < order[first].Return {
			first = i
		}
	}
	return ""
}

func describeState(s state) string {
	if !s.Found {
		return "<absent> (no write yet)"
	}
	return fmt.Sprintf("%s at revision %d", s.Value, s.Rev)
}
