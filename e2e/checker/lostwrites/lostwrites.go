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

// Check judges the history.
func Check(h *history.History) history.Verdict {
	v := history.Verdict{Checker: "lost-writes"}
	if h.Final == nil {
		v.Reason = "inconclusive: the cluster's final state was not collected"
		return v
	}
	if h.Final.Error != "" || !h.Final.Complete {
		v.Reason = "inconclusive: the applied history could not be read completely: " + h.Final.Error
		return v
	}
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
	acked := 0
	var lost, wrongRev, phantom, failedApplied, finalMismatch []string
	for _, o := range h.Ops {
		if !o.IsWrite() {
			continue
		}
		issued[o.Value] = o
		if o.Status == history.Fail {
			if w, ok := applied[o.Value]; ok {
				failedApplied = append(failedApplied, fmt.Sprintf("%s %s=%s was reported as failed but applied at revision %d", o.Type, o.Key, o.Value, w.rev))
			}
		}
		if !o.Acknowledged() {
			continue
		}
		acked++
		w, ok := applied[o.Value]
		switch {
		case !ok || w.key != o.Key:
			lost = append(lost, fmt.Sprintf("%s %s=%s acknowledged at revision %d by client %d is not in the key's history", o.Type, o.Key, o.Value, o.Revision, o.Client))
		case o.Revision != 0 && w.rev != o.Revision:
			wrongRev = append(wrongRev, fmt.Sprintf("%s %s=%s acknowledged at revision %d but applied at revision %d", o.Type, o.Key, o.Value, o.Revision, w.rev))
		}
	}
	keys := make([]string, 0, len(h.Final.Applied))
	for k := range h.Final.Applied {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ws := h.Final.Applied[k]
		for _, w := range ws {
			if _, ok := issued[w.Value]; !ok && !w.Delete {
				phantom = append(phantom, fmt.Sprintf("%s=%s at revision %d was never written by a client", k, w.Value, w.ModRevision))
			}
		}
		if len(ws) > 0 {
			last := ws[len(ws)-1]
			if got, ok := h.Final.Values[k]; !last.Delete && (!ok || got != last.Value) {
				finalMismatch = append(finalMismatch, fmt.Sprintf("final read of %s is %q but its last applied write is %q", k, got, last.Value))
			}
		}
	}
	problems := 0
	for _, list := range [][]string{lost, wrongRev, phantom, failedApplied, finalMismatch} {
		problems += len(list)
		for _, d := range list {
			if len(v.Details) < maxDetails {
				v.Details = append(v.Details, d)
			}
		}
	}
	if problems == 0 {
		v.Pass = true
		v.Reason = fmt.Sprintf("all %d acknowledged writes are in the cluster's history", acked)
		return v
	}
	v.Reason = fmt.Sprintf("%d of %d acknowledged writes lost, %d at the wrong revision, %d phantom writes, %d failed writes applied, %d keys whose final read disagrees",
		len(lost), acked, len(wrongRev), len(phantom), len(failedApplied), len(finalMismatch))
	return v
}
