// Package linearizability checks that a history of puts, gets and compare-and-sets is
// linearizable against a key-value model, holding etcd to its revisions as etcd's own
// robustness tests do: writes to a key take effect in the order of the revisions etcd
// acknowledged them with, and a read that reports revision h saw the key's newest acknowledged
// write at or below h, and nothing above it. This only removes orders a plain key-value check
// would accept, so a pass still means linearizable; a history whose revisions contradict its
// values or real time fails.
//
// A key whose every operation ended with a revision has one order left, checked directly
// (revision.go). A key with a write of unknown outcome that a read saw goes to porcupine's
// search, where such a write may take effect at any time after its call, or never (the model
// tries both); the revision rules keep that search small too.
package linearizability

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/quorate-dev/quorate/e2e/history"
)

// state of one key.
type state struct {
	Found bool
	Value string
	// Rev is the revision of the newest write with a known revision that took effect (0:
	// none). A write of unknown outcome that takes effect leaves it: its revision is not known.
	Rev int64
}

// describe is one operation as the visualization and the failure messages show it.
func describe(o history.Op) string {
	res := string(o.Status)
	switch {
	case o.Status != history.OK:
	case o.Type == history.Get && !o.Found:
		res = "absent"
	case o.Type == history.Get:
		res = o.Output
	case o.Type == history.CAS && o.Succeeded:
		res = "swapped"
	case o.Type == history.CAS:
		res = "not swapped, saw " + o.Output
	}
	if o.Status == history.OK && o.Revision != 0 {
		res += fmt.Sprintf(" @%d", o.Revision)
	}
	switch o.Type {
	case history.Put:
		return fmt.Sprintf("put(%s, %s) -> %s", o.Key, o.Value, res)
	case history.CAS:
		exp := o.Expect
		if o.ExpectAbsent {
			exp = "<absent>"
		}
		return fmt.Sprintf("cas(%s, %s -> %s) -> %s", o.Key, exp, o.Value, res)
	}
	return fmt.Sprintf("get(%s) -> %s", o.Key, res)
}

func (s state) matches(o history.Op) bool {
	if o.ExpectAbsent {
		return !s.Found
	}
	return s.Found && s.Value == o.Expect
}

// input is one operation, with what the revisions of the key's acknowledged writes say about
// where it can be linearized: Prev, for an acknowledged write with a revision, is the revision
// of the key's acknowledged write just before it; Floor, for a read that reports revision h,
// is the revision of the key's newest acknowledged write at or below h. Writes of unknown
// outcome have no revision, so the state keeps the revision of the newest one known.
type input struct {
	history.Op
	Prev, Floor int64
}

// reads reports whether a read can have seen s: its value, and if it reports a revision, the
// key's newest acknowledged write at or below it and nothing later.
func (in input) reads(s state) bool {
	if s.Found != in.Found || (s.Found && s.Value != in.Output) {
		return false
	}
	return in.Revision == 0 || s.Rev == in.Floor
}

// write is the state after an acknowledged write, which comes right after the key's previous
// acknowledged write.
func (in input) write(s state) (state, bool) {
	if in.Revision != 0 && s.Rev != in.Prev {
		return s, false
	}
	return state{Found: true, Value: in.Value, Rev: max(in.Revision, s.Rev)}, true
}

// Model is the key-value model, partitioned by key.
var Model = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{state{}} },
	Step: func(st, in, _ interface{}) []interface{} {
		s, o := st.(state), in.(input)
		// A write of unknown outcome has no revision: if it took effect, the key's revision
		// stays what it was.
		unknown := state{Found: true, Value: o.Value, Rev: s.Rev}
		switch o.Type {
		case history.Get:
			if o.reads(s) {
				return []interface{}{s}
			}
			return nil
		case history.Put:
			if o.Status == history.Unknown {
				return []interface{}{s, unknown}
			}
			if w, ok := o.write(s); ok {
				return []interface{}{w}
			}
			return nil
		case history.CAS:
			switch {
			case o.Status == history.Unknown && s.matches(o.Op):
				return []interface{}{s, unknown}
			case o.Status == history.Unknown:
				return []interface{}{s}
			case o.Succeeded && s.matches(o.Op):
				if w, ok := o.write(s); ok {
					return []interface{}{w}
				}
			case !o.Succeeded && !s.matches(o.Op) && o.reads(s):
				return []interface{}{s}
			}
			return nil
		}
		return nil
	},
	Equal:             func(a, b interface{}) bool { return a.(state) == b.(state) },
	DescribeOperation: func(in, _ interface{}) string { return describe(in.(input).Op) },
	DescribeState: func(st interface{}) string {
		s := st.(state)
		if !s.Found {
			return "<absent>"
		}
		return fmt.Sprintf("%s @%d", s.Value, s.Rev)
	},
}

// Operations turns a history into porcupine operations: failed operations had no effect and
// are left out; unknown ones stay open until after the end of the history. An unknown write
// whose unique value no operation ever read is left out too: open until after the end, it can
// always be ordered last, where nothing sees it, so it cannot change the verdict; but each one
// doubles the states the search may visit, and an outage under an open-loop load leaves
// hundreds. Each read that reports a revision gets its floor (see input).
func Operations(h *history.History) []porcupine.Operation {
	horizon := h.End + int64(time.Hour)
	observed := map[string]bool{}
	written := map[string][]int64{} // per key, the revisions of acknowledged writes
	for _, o := range h.Ops {
		switch {
		case o.Status != history.OK:
		case o.Found:
			observed[o.Output] = true
		case o.Type == history.CAS && o.Succeeded && !o.ExpectAbsent:
			observed[o.Expect] = true
		}
		if o.Acknowledged() && o.Revision != 0 {
			written[o.Key] = append(written[o.Key], o.Revision)
		}
	}
	for _, revs := range written {
		slices.Sort(revs)
	}
	var ops []porcupine.Operation
	for _, o := range h.Ops {
		switch {
		case o.Status == history.Fail:
			continue
		case o.Status == history.Unknown && !o.IsWrite():
			continue
		case o.Status == history.Unknown && !observed[o.Value]:
			continue
		}
		in := input{Op: o}
		if o.Status == history.OK && o.Revision != 0 {
			// The key's acknowledged writes below this revision (for a write), or at or below it.
			revs := written[o.Key]
			i := sort.Search(len(revs), func(i int) bool { return revs[i] > o.Revision })
			switch {
			case o.Acknowledged() && i > 1:
				in.Prev = revs[i-2]
			case !o.Acknowledged() && i > 0:
				in.Floor = revs[i-1]
			}
		}
		ret := o.Return
		if o.Status == history.Unknown {
			ret = horizon
		}
		ops = append(ops, porcupine.Operation{ClientId: o.Client, Input: in, Output: nil, Call: o.Call, Return: ret})
	}
	return ops
}

// Codes of the linearizability verdict.
// Name is the checker's name in verdicts and reports.
const Name history.CheckerName = "linearizability"

const (
	CodeLinearizable    history.Code = "linearizable"
	CodeNotLinearizable history.Code = "not-linearizable"
	// CodeTimeout: porcupine did not finish in time (inconclusive).
	CodeTimeout history.Code = "timeout"
)

// Check judges the history. The keys whose operations etcd's revisions place (see ordered)
// are checked in that order, without a search; the others (writes of unknown outcome that a
// read saw, operations without a revision) by porcupine's search, which can time out. On a
// violation the search finds (or a timeout) it writes porcupine's visualization into dir, if
// dir is not empty.
//
// A history with recoveries (history.Epochs: a forced recovery, a restore of a lost cluster to
// a point) is judged epoch by epoch: the cluster before a recovery, and the cluster restarted
// from its revision after it, which starts with the writes up to that revision. The writes a
// recovery declared lost are held to the lost-writes checker, not here.
func Check(h *history.History, timeout time.Duration, dir string) history.Verdict {
	epochs := history.Epochs(h)
	if len(epochs) == 1 {
		return checkEpoch(h, timeout, dir)
	}
	// Every epoch is judged: a failure in one outweighs an inconclusive search in another.
	var details []string
	var worst *history.Verdict
	for i, e := range epochs {
		// Each epoch's visualization in a file of its own.
		e.Scenario = fmt.Sprintf("%s-epoch-%d", h.Scenario, i+1)
		v := checkEpoch(e, timeout, dir)
		what := fmt.Sprintf("epoch %d of %d", i+1, len(epochs))
		if i > 0 {
			r := h.Recoveries()[i-1]
			what += fmt.Sprintf(" (after the recovery %s from revision %d)", r.Name, r.Revision)
		}
		details = append(details, what+": "+v.Reason)
		if v.Status == history.VerdictFail && (worst == nil || worst.Status != history.VerdictFail) ||
			v.Status == history.VerdictInconclusive && worst == nil {
			v.Reason = what + ": " + v.Reason
			worst = &v
		}
	}
	if worst != nil {
		worst.Details = append(worst.Details, details...)
		return *worst
	}
	return history.Verdict{Checker: Name, Status: history.VerdictPass, Code: CodeLinearizable,
		Reason: fmt.Sprintf("each of the %d epochs a recovery separates is linearizable", len(epochs)), Details: details}
}

// checkEpoch judges a history without recoveries, or one epoch of one.
func checkEpoch(h *history.History, timeout time.Duration, dir string) history.Verdict {
	v := history.Verdict{Checker: Name}
	ops := Operations(h)
	var searched []porcupine.Operation
	var broken []string
	for _, key := range Model.Partition(ops) {
		if !ordered(key) {
			searched = append(searched, key...)
		} else if why := inRevisionOrder(key, h.Start); why != "" {
			broken = append(broken, why)
		}
	}
	how := fmt.Sprintf("%d in etcd's revision order, %d by search", len(ops)-len(searched), len(searched))
	if len(broken) > 0 {
		v.Status, v.Code = history.VerdictFail, CodeNotLinearizable
		v.Reason = fmt.Sprintf("not linearizable: %s", broken[0])
		v.Details = broken
		return v
	}
	model := Model.ToModel()
	res, info := porcupine.CheckOperationsVerbose(model, searched, timeout)
	switch res {
	case porcupine.Ok:
		v.Status, v.Code = history.VerdictPass, CodeLinearizable
		v.Reason = fmt.Sprintf("%d operations are linearizable (%s)", len(ops), how)
		return v
	case porcupine.Unknown:
		v.Status, v.Code = history.VerdictInconclusive, CodeTimeout
		v.Reason = fmt.Sprintf("inconclusive: the search through %d of the %d operations did not finish within %s", len(searched), len(ops), timeout)
	default:
		v.Status, v.Code = history.VerdictFail, CodeNotLinearizable
		v.Reason = fmt.Sprintf("not linearizable: no order of the %d operations fits a key-value store (%s)", len(ops), how)
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err == nil {
			path := filepath.Join(dir, "linearizability-"+history.Slug(h.Label())+".html")
			if err := porcupine.VisualizePath(model, info, path); err == nil {
				v.Artifacts = map[string]string{"visualization": path}
				v.Details = append(v.Details, "porcupine visualization: "+path)
			} else {
				v.Details = append(v.Details, "writing the visualization failed: "+err.Error())
			}
		}
	}
	return v
}
