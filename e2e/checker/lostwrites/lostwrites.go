// Package lostwrites checks that no acknowledged write was lost: every write the cluster
// confirmed appears in the key's applied history read back at the end (where later writes may
// supersede it), no write appears that no client issued or that was reported as failed, and the
// final read of each key agrees with its last applied write.
package lostwrites

import (
	"fmt"
	"sort"

	"github.com/quorate-dev/quorate/e2e/history"
)

const maxDetails = 20

// Codes of the lost-writes verdict; a failure carries the code of the first kind of problem.
// Name is the checker's name in verdicts and reports.
const Name history.CheckerName = "lost-writes"

const (
	CodeAllKept history.Code = "all-kept"
	// CodeDeclaredLoss: the only writes missing were acknowledged after the revision of a
	// forced recovery, which the operator declared may be lost.
	CodeDeclaredLoss       history.Code = "declared-loss"
	CodeLostWrite          history.Code = "lost-write"
	CodeWrongRevision      history.Code = "wrong-revision"
	CodePhantomWrite       history.Code = "phantom-write"
	CodeFailedWriteApplied history.Code = "failed-write-applied"
	CodeFinalMismatch      history.Code = "final-mismatch"
	// CodeFinalUnread: the cluster's final state could not be read (inconclusive).
	CodeFinalUnread history.Code = "final-unread"
)

// Check judges the history.
func Check(h *history.History) history.Verdict {
	v := history.Verdict{Checker: Name, Status: history.VerdictInconclusive, Code: CodeFinalUnread}
	if h.Final == nil {
		v.Reason = "inconclusive: the cluster's final state was not collected"
		return v
	}
	if h.Final.Error != "" || !h.Final.Complete {
		v.Reason = "inconclusive: the applied history could not be read completely: " + h.Final.Error
		return v
	}
	if keys := h.Unexplained(); len(keys) > 0 {
		v.Reason = fmt.Sprintf("inconclusive: the history of %d keys (%s) stops at a compaction that no declared restore explains", len(keys), keys[0])
		return v
	}
	var f findings
	f.declared, f.recovery = declaredRevision(h)
	issued := f.checkWrites(h)
	f.checkApplied(h, issued)
	return f.verdict(v)
}

// declaredRevision is the lowest revision a recovery (forced, or a lost cluster restored to a
// point) declared that writes after it may be lost (0: none), and the recovery's name.
func declaredRevision(h *history.History) (int64, string) {
	var declared int64
	var name string
	for _, e := range h.Events {
		if e.Kind == history.EventRecovery && (declared == 0 || e.Revision < declared) {
			declared, name = e.Revision, e.Name
		}
	}
	return declared, name
}

// findings are what Check found, problem by problem.
type findings struct {
	// declared is the recovery's revision and recovery its name (declaredRevision).
	declared int64
	recovery string
	acked    int
	// compacted counts acknowledged writes overwritten before a declared recovery's
	// compaction (supersededBeforeCompaction): kept as far as anyone can tell.
	compacted                                                           int
	lost, declaredLost, wrongRev, phantom, failedApplied, finalMismatch []string
}

// checkWrites compares every write the clients issued with the cluster's applied history,
// and returns the writes issued by value.
func (f *findings) checkWrites(h *history.History) map[string]history.Op {
	type where struct {
		key string
		rev int64
	}
	applied := map[string]where{}
	for key, ws := range h.Final.Applied {
		for _, w := range ws {
			if !w.Delete {
				applied[w.Value] = where{key, w.ModRevision}
			}
		}
	}
	issued := map[string]history.Op{}
	for _, o := range h.Ops {
		if !o.IsWrite() {
			continue
		}
		issued[o.Value] = o
		// A failed write, or a compare-and-set that answered it did not swap, changed nothing.
		if o.Status == history.Fail || o.Type == history.CAS && o.Status == history.OK && !o.Succeeded {
			if w, ok := applied[o.Value]; ok {
				f.failedApplied = append(f.failedApplied, fmt.Sprintf("%s %s=%s was reported as %s but applied at revision %d", o.Type, o.Key, o.Value, notApplied(o), w.rev))
			}
		}
		if !o.Acknowledged() {
			continue
		}
		f.acked++
		w, ok := applied[o.Value]
		switch {
		case (!ok || w.key != o.Key) && h.DeclaredLost(o):
			f.declaredLost = append(f.declaredLost, fmt.Sprintf("%s %s=%s acknowledged at revision %d, above the revision of a recovery after its call", o.Type, o.Key, o.Value, o.Revision))
		case (!ok || w.key != o.Key) && supersededBeforeCompaction(h, o):
			f.compacted++
		case !ok || w.key != o.Key:
			f.lost = append(f.lost, fmt.Sprintf("%s %s=%s acknowledged at revision %d by client %d is not in the key's history", o.Type, o.Key, o.Value, o.Revision, o.Client))
		case o.Revision != 0 && w.rev != o.Revision:
			f.wrongRev = append(f.wrongRev, fmt.Sprintf("%s %s=%s acknowledged at revision %d but applied at revision %d", o.Type, o.Key, o.Value, o.Revision, w.rev))
		}
	}
	return issued
}

// supersededBeforeCompaction reports whether acknowledged write o, missing from the read-back
// history, was overwritten before a compaction that a declared restore explains
// (History.Explained): its key's history starts with the key's value at or below the
// restore's revision, and o was called before the restore and came before that value. The
// value itself is judged as any applied write (issued, at its revision); a write missing
// between it and the restore's revision is still lost.
func supersededBeforeCompaction(h *history.History, o history.Op) bool {
	ws := h.Final.Applied[o.Key]
	if len(ws) == 0 || o.Revision == 0 || o.Revision >= ws[0].ModRevision {
		return false
	}
	e, ok := h.Explained(o.Key, ws[0].ModRevision)
	return ok && o.Call < e.Time
}

// notApplied is how o said it changed nothing.
func notApplied(o history.Op) string {
	if o.Status == history.Fail {
		return "failed"
	}
	return "not swapped"
}

// checkApplied looks, key by key, for applied writes no client issued and for final reads
// that disagree with the last applied write.
func (f *findings) checkApplied(h *history.History, issued map[string]history.Op) {
	keys := make([]string, 0, len(h.Final.Applied))
	for k := range h.Final.Applied {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ws := h.Final.Applied[k]
		for _, w := range ws {
			if _, ok := issued[w.Value]; !ok && !w.Delete {
				f.phantom = append(f.phantom, fmt.Sprintf("%s=%s at revision %d was never written by a client", k, w.Value, w.ModRevision))
			}
		}
		if len(ws) > 0 {
			last := ws[len(ws)-1]
			if got, ok := h.Final.Values[k]; !last.Delete && (!ok || got != last.Value) {
				f.finalMismatch = append(f.finalMismatch, fmt.Sprintf("final read of %s is %q but its last applied write is %q", k, got, last.Value))
			}
		}
	}
}

// verdict turns the findings into v's status, code, reason and details.
func (f *findings) verdict(v history.Verdict) history.Verdict {
	problems := 0
	v.Code = ""
	for i, list := range [][]string{f.lost, f.wrongRev, f.phantom, f.failedApplied, f.finalMismatch} {
		problems += len(list)
		if len(list) > 0 && v.Code == "" {
			v.Code = []history.Code{CodeLostWrite, CodeWrongRevision, CodePhantomWrite, CodeFailedWriteApplied, CodeFinalMismatch}[i]
		}
		for _, d := range list {
			if len(v.Details) < maxDetails {
				v.Details = append(v.Details, d)
			}
		}
	}
	acked := f.acked
	if problems == 0 {
		v.Status, v.Code = history.VerdictPass, CodeAllKept
		v.Reason = fmt.Sprintf("all %d acknowledged writes are in the cluster's history", acked)
		if f.compacted > 0 {
			v.Reason += fmt.Sprintf(" (%d of them overwritten below the compaction of the cluster restored from revision %d, where its history starts)", f.compacted, f.declared)
		}
		if len(f.declaredLost) > 0 {
			v.Code = CodeDeclaredLoss
			v.Reason = fmt.Sprintf("%d of %d acknowledged writes are in the cluster's history; the %d missing were all acknowledged after revision %d, from which the recovery %s restarted the cluster, declaring them possibly lost",
				acked-len(f.declaredLost), acked, len(f.declaredLost), f.declared, f.recovery)
			if f.compacted > 0 {
				v.Reason += fmt.Sprintf("; %d were overwritten below the restored cluster's compaction, where its history starts", f.compacted)
			}
			v.Details = append(v.Details, f.declaredLost...)
		}
		return v
	}
	v.Status = history.VerdictFail
	v.Reason = fmt.Sprintf("%d of %d acknowledged writes lost, %d at the wrong revision, %d phantom writes, %d failed writes applied, %d keys whose final read disagrees",
		len(f.lost), acked, len(f.wrongRev), len(f.phantom), len(f.failedApplied), len(f.finalMismatch))
	return v
}
