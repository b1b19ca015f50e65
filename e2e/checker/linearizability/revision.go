package linearizability

import (
	"cmp"
	"fmt"
	"slices"
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
	var writes []history.Op
	var reads []input // each with its Floor, from Operations
	for _, p := range ops {
		if in := p.Input.(input); in.Acknowledged() {
			writes = append(writes, in.Op)
		} else {
			reads = append(reads, in)
		}
	}
	slices.SortStableFunc(writes, func(a, b history.Op) int { return cmp.Compare(a.Revision, b.Revision) })
	for i, w := range writes {
		if i > 0 && w.Revision == writes[i-1].Revision {
			return fmt.Sprintf("%s and %s were both acknowledged at revision %d", describe(writes[i-1]), describe(w), w.Revision)
		}
		if s := after(writes, i-1); w.Type == history.CAS && !s.matches(w) {
			return fmt.Sprintf("%s swapped, but the write before it was %s", describe(w), describeState(s))
		}
	}
	// The whole order: reads before the first write, the first write, the reads after it...
	// Reads of one state (one Floor) by call time.
	slices.SortStableFunc(reads, func(a, b input) int { return cmp.Or(cmp.Compare(a.Floor, b.Floor), cmp.Compare(a.Call, b.Call)) })
	order := make([]history.Op, 0, len(ops))
	ri := 0
	for wi := -1; wi < len(writes); wi++ {
		if wi >= 0 {
			order = append(order, writes[wi])
		}
		s := after(writes, wi)
		for ; ri < len(reads) && reads[ri].Floor == s.Rev; ri++ {
			r := reads[ri]
			if !r.reads(s) || (r.Type == history.CAS && s.matches(r.Op)) {
				return fmt.Sprintf("%s, but the newest write at or below revision %d was %s", describe(r.Op), r.Revision, describeState(s))
			}
			order = append(order, r.Op)
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

// after is the state writes[:i+1] leave (writes in revision order).
func after(writes []history.Op, i int) state {
	if i < 0 {
		return state{}
	}
	return state{Found: true, Value: writes[i].Value, Rev: writes[i].Revision}
}

func describeState(s state) string {
	if !s.Found {
		return "<absent> (no write yet)"
	}
	return fmt.Sprintf("%s at revision %d", s.Value, s.Rev)
}
