// Package linearizability checks that a history of puts, gets and compare-and-sets is
// linearizable against a key-value model, with porcupine. A write whose outcome is unknown may
// have taken effect at any time after its call, or never: the model tries both.
package linearizability

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/quorate-dev/quorate/e2e/history"
)

// state of one key.
type state struct {
	Found bool
	Value string
}

func (s state) matches(o history.Op) bool {
	if o.ExpectAbsent {
		return !s.Found
	}
	return s.Found && s.Value == o.Expect
}

// Model is the key-value model, partitioned by key.
var Model = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(history.Op).Key
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
		s, o := st.(state), in.(history.Op)
		written := state{Found: true, Value: o.Value}
		switch o.Type {
		case history.Get:
			if s.Found == o.Found && (!s.Found || s.Value == o.Output) {
				return []interface{}{s}
			}
			return nil
		case history.Put:
			if o.Status == history.Unknown {
				return []interface{}{s, written}
			}
			return []interface{}{written}
		case history.CAS:
			switch {
			case o.Status == history.Unknown && s.matches(o):
				return []interface{}{s, written}
			case o.Status == history.Unknown:
				return []interface{}{s}
			case o.Succeeded && s.matches(o):
				return []interface{}{written}
			case !o.Succeeded && !s.matches(o) && s.Found == o.Found && (!s.Found || s.Value == o.Output):
				return []interface{}{s}
			}
			return nil
		}
		return nil
	},
	Equal: func(a, b interface{}) bool { return a.(state) == b.(state) },
	DescribeOperation: func(in, _ interface{}) string {
		o := in.(history.Op)
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
	},
	DescribeState: func(st interface{}) string {
		s := st.(state)
		if !s.Found {
			return "<absent>"
		}
		return s.Value
	},
}

// Operations turns a history into porcupine operations: failed operations had no effect and
// are left out; unknown ones stay open until after the end of the history. An unknown write
// whose unique value no operation ever read is left out too: open until after the end, it can
// always be ordered last, where nothing sees it, so it cannot change the verdict; but each one
// doubles the states the search may visit, and an outage under an open-loop load leaves
// hundreds.
func Operations(h *history.History) []porcupine.Operation {
	horizon := h.End + int64(time.Hour)
	observed := map[string]bool{}
	for _, o := range h.Ops {
		switch {
		case o.Status != history.OK:
		case o.Found:
			observed[o.Output] = true
		case o.Type == history.CAS && o.Succeeded && !o.ExpectAbsent:
			observed[o.Expect] = true
		}
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
		ret := o.Return
		if o.Status == history.Unknown {
			ret = horizon
		}
		ops = append(ops, porcupine.Operation{ClientId: o.Client, Input: o, Output: nil, Call: o.Call, Return: ret})
	}
	return ops
}

// Codes of the linearizability verdict.
const (
	CodeLinearizable    = "linearizable"
	CodeNotLinearizable = "not-linearizable"
	// CodeTimeout: porcupine did not finish in time (inconclusive).
	CodeTimeout = "timeout"
)

// Check judges the history. On a violation (or a timeout) it writes porcupine's
// visualization into dir, if dir is not empty.
func Check(h *history.History, timeout time.Duration, dir string) history.Verdict {
	v := history.Verdict{Checker: "linearizability"}
	ops := Operations(h)
	model := Model.ToModel()
	res, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	switch res {
	case porcupine.Ok:
		v.Status, v.Code = history.VerdictPass, CodeLinearizable
		v.Reason = fmt.Sprintf("%d operations are linearizable", len(ops))
		return v
	case porcupine.Unknown:
		v.Status, v.Code = history.VerdictInconclusive, CodeTimeout
		v.Reason = fmt.Sprintf("inconclusive: the check of %d operations did not finish within %s", len(ops), timeout)
	default:
		v.Status, v.Code = history.VerdictFail, CodeNotLinearizable
		v.Reason = fmt.Sprintf("not linearizable: no order of the %d operations fits a key-value store", len(ops))
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err == nil {
			path := filepath.Join(dir, "linearizability-"+history.Slug(h.Scenario)+".html")
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
