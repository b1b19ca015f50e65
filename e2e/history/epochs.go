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

// DeclaredLost reports whether write o may have been lost by a recovery: it was called
// before a recovery whose revision it was acknowledged above.
func (h *History) DeclaredLost(o Op) bool {
	for _, e := range h.Recoveries() {
		if o.Call < e.Time && o.Revision > e.Revision {
			return true
		}
	}
	return false
}

// Explained reports whether the read-back history of key, which stops at a compaction
// (Final.Compacted) and starts with a write at revision first, is explained by a declared
// restore: a restored cluster is compacted just below the revision it was restored to, so
// the key's value there (first at or below that revision) is the oldest it can read. The
// restore that explains it is returned.
func (h *History) Explained(key string, first int64) (Event, bool) {
	if h.Final == nil || !h.Final.Compacted[key] {
		return Event{}, false
	}
	for _, e := range h.Recoveries() {
		if e.Restore() && first <= e.Revision {
			return e, true
		}
	}
	return Event{}, false
}

// Unexplained are the keys whose read-back history stops at a compaction no declared restore
// explains (their history cannot be judged).
func (h *History) Unexplained() []string {
	var keys []string
	if h.Final == nil {
		return nil
	}
	for key := range h.Final.Compacted {
		ws := h.Final.Applied[key]
		if len(ws) == 0 {
			keys = append(keys, key)
			continue
		}
		if _, ok := h.Explained(key, ws[0].ModRevision); !ok {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return keys
}

// Epochs splits the operations at each recovery into histories that are each judged on
// their own: the cluster before the recovery, and the cluster restarted from the recovery's
// revision after it.
//
//   - An operation answered before the recovery's Time belongs to the epoch before.
//   - One called at or after Time belongs to the epoch after.
//   - One called before Time and answered after it may have been answered by either cluster:
//     a read goes to the epoch after only (whatever it saw must fit the restarted cluster); a
//     write is of unknown outcome in the epoch before, and carried into the epoch after.
//
// The epoch after starts with the writes of the epoch before that it may hold: one
// acknowledged at or below the recovery's revision as it was, any other (acknowledged above
// it, or of unknown outcome) as of unknown outcome: such a write may or may not have reached
// the restarted cluster, which is no violation of linearizability either way (the lost-writes
// checker counts what was lost). Failed writes and the reads of the epoch before are left
// out. Without a recovery the history is its only epoch. Samples and everything else stay on
// every epoch.
func Epochs(h *History) []*History {
	epochs := []*History{h}
	for _, e := range h.Recoveries() {
		last := epochs[len(epochs)-1]
		before, after := *last, *last
		before.Ops, after.Ops = nil, nil
		for _, o := range last.Ops {
			switch {
			case o.Call >= e.Time:
				after.Ops = append(after.Ops, o)
				continue
			case o.Return >= e.Time && o.Status == OK && !changes(o):
				after.Ops = append(after.Ops, o)
				continue
			case o.Return >= e.Time && changes(o) && o.Status != Fail:
				before.Ops = append(before.Ops, unknown(o))
			default:
				before.Ops = append(before.Ops, o)
			}
			if carried, ok := carry(o, e); ok {
				after.Ops = append(after.Ops, carried)
			}
		}
		slices.SortStableFunc(after.Ops, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
		epochs = append(epochs[:len(epochs)-1], &before, &after)
	}
	return epochs
}

// carry is what write o of the epoch before recovery e is in the epoch after it (ok false:
// nothing).
func carry(o Op, e Event) (Op, bool) {
	switch {
	case !o.IsWrite() || o.Status == Fail:
		return o, false
	case o.Status == OK && !o.Acknowledged():
		// A compare-and-set that did not take effect changed nothing.
		return o, false
	case o.Acknowledged() && o.Revision != 0 && o.Revision <= e.Revision:
		return o, true
	}
	return unknown(o), true
}

// changes reports whether o may have changed the keyspace: a write, but not a
// compare-and-set that answered it did not swap (that one is a read).
func changes(o Op) bool {
	return o.IsWrite() && (o.Type != CAS || o.Status != OK || o.Succeeded)
}

// unknown is write o with its outcome unknown: it may have taken effect, or not.
func unknown(o Op) Op {
	o.Status, o.Revision, o.Succeeded = Unknown, 0, false
	return o
}
