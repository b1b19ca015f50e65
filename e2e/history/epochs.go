package history

import (
	"cmp"
	"slices"
	"sort"
)

// Recoveries are the history's recovery events (EventRecovery: a forced recovery, or a
// restore of a lost cluster to a point), oldest first. Each declares that from its Time on
// the cluster is the one restarted from its Revision: acknowledged writes after that
// revision may be lost.
func (h *History) Recoveries() []Event {
	var rs []Event
	for _, e := range h.Events {
		if e.Kind == EventRecovery {
			rs = append(rs, e)
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Time < rs[j].Time })
	return rs
}

// Epochs splits the operations at each recovery into histories that are each judged on
// their own: the cluster before the recovery, and the cluster restarted from the recovery's
// revision after it. An epoch holds the operations called before the next recovery. The
// epoch after a recovery starts with the writes of the epoch before that it may hold:
//   - a write acknowledged at or below the recovery's revision, as it was;
//   - a write of unknown outcome, as unknown;
//   - a write acknowledged above that revision, answered after the recovery started (the
//     restarted cluster may have applied it), as unknown;
//
// and leaves out the reads before it and the writes acknowledged above the revision that
// were answered before the recovery: those the recovery declared lost. Without a recovery
// the history is its only epoch. The poller's samples go to the epoch they were taken in;
// everything else stays on every epoch.
func Epochs(h *History) []*History {
	epochs := []*History{h}
	for _, e := range h.Recoveries() {
		last := epochs[len(epochs)-1]
		before, after := *last, *last
		before.Ops, after.Ops = nil, nil
		before.Samples, after.Samples = nil, nil
		for _, s := range last.Samples {
			if s.Time < e.Time {
				before.Samples = append(before.Samples, s)
			} else {
				after.Samples = append(after.Samples, s)
			}
		}
		for _, o := range last.Ops {
			if o.Call >= e.Time {
				after.Ops = append(after.Ops, o)
				continue
			}
			before.Ops = append(before.Ops, o)
			if carried, ok := carry(o, e); ok {
				after.Ops = append(after.Ops, carried)
			}
		}
		slices.SortStableFunc(after.Ops, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
		epochs = append(epochs[:len(epochs)-1], &before, &after)
	}
	return epochs
}

// carry is what op o of the epoch before recovery e is in the epoch after it (ok false:
// nothing).
func carry(o Op, e Event) (Op, bool) {
	switch {
	case !o.IsWrite() || o.Status == Fail:
		return o, false
	case o.Status == Unknown:
		return o, true
	case o.Acknowledged() && o.Revision != 0 && o.Revision <= e.Revision:
		return o, true
	case o.Status == OK && !o.Acknowledged():
		// A compare-and-set that did not take effect changed nothing.
		return o, false
	case o.Return >= e.Time:
		o.Status, o.Revision = Unknown, 0
		return o, true
	}
	return o, false
}
