package corpus

import (
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker"
	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/history"
)

var update = flag.Bool("update", false, "rewrite the verdicts in testdata/corpus.json from what the checkers say now (review the diff)")

const manifest = "testdata/corpus.json"

// TestCorpus judges every history of the corpus with every checker, as the suite does, and
// compares the whole verdicts (artifact paths aside) with the recorded ones.
func TestCorpus(t *testing.T) {
	entries := readManifest(t)
	if len(entries) == 0 {
		t.Fatal("the corpus is empty")
	}
	for i := range entries {
		e := &entries[i]
		t.Run(e.Name, func(t *testing.T) {
			h, err := load(filepath.Join("testdata", e.History))
			if err != nil {
				t.Fatal(err)
			}
			if e.Inject != "" {
				bug, ok := bugs[e.Inject]
				if !ok {
					t.Fatalf("unknown injected bug %q", e.Inject)
				}
				if err := bug(h); err != nil {
					t.Fatalf("injecting %s: %v", e.Inject, err)
				}
			}
			got := judge(h, e.Budget, t.TempDir())
			if *update {
				e.Verdicts = got
				return
			}
			if !reflect.DeepEqual(got, e.Verdicts) {
				t.Errorf("verdicts changed for %s (%s):\n got %s\nwant %s", e.Name, e.Why, dump(got), dump(e.Verdicts))
			}
			for _, v := range got {
				if want := e.expectation(v.Checker); !want.Met(v) {
					t.Errorf("%s: %s expected %s", e.Name, v, want)
				}
			}
		})
	}
	if *update {
		out, err := json.MarshalIndent(entries, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(manifest, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCorpusCoversEveryVerdictKind keeps the corpus honest: it holds passes, and failures of
// every checker that can fail.
func TestCorpusCoversEveryVerdictKind(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range readManifest(t) {
		for _, v := range e.Verdicts {
			seen[string(v.Checker)+" "+string(v.Status)] = true
		}
	}
	var missing []string
	for _, c := range checker.Names {
		for _, s := range []history.VerdictStatus{history.VerdictPass, history.VerdictFail} {
			if !seen[string(c)+" "+string(s)] {
				missing = append(missing, string(c)+" "+string(s))
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("no history in the corpus is judged %v", missing)
	}
}

func readManifest(t *testing.T) []Entry {
	t.Helper()
	var entries []Entry
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatalf("%s: %v", manifest, err)
	}
	return entries
}

// Entry is one judged history: a recorded run, possibly with a bug's effect injected.
type Entry struct {
	Name string `json:"name"`
	// Why the history is in the corpus.
	Why     string `json:"why"`
	History string `json:"history"`
	// Inject names a bug of bugs applied to the history before judging it.
	Inject string              `json:"inject,omitempty"`
	Budget availability.Budget `json:"budget"`
	// Expect is what the run expected of a checker (pass unless named), as a scenario does.
	Expect   map[checker.Name]history.Expectation `json:"expect,omitempty"`
	Verdicts []history.Verdict                    `json:"verdicts"`
}

func (e Entry) expectation(name checker.Name) history.Expectation {
	if x, ok := e.Expect[name]; ok {
		return x
	}
	return history.ExpectPass
}

// judge runs every checker the way the suite does (checker.All).
func judge(h *history.History, b availability.Budget, dir string) []history.Verdict {
	out, _ := checker.All(h, checker.Input{Budget: b, LinearizabilityTimeout: 5 * time.Minute, Dir: dir})
	for i := range out {
		out[i].Artifacts = nil // temporary paths
		for j, d := range out[i].Details {
			out[i].Details[j] = strings.ReplaceAll(d, dir, "$DIR")
		}
	}
	return out
}

func load(path string) (*history.History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var h history.History
	if err := json.NewDecoder(z).Decode(&h); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &h, nil
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// bugs are the effects of real bug classes, written into a recorded history: what the history
// of a run would hold had the cluster (or the operator driving it) had the bug.
var bugs = map[string]func(*history.History) error{
	// A member lost data it had acknowledged (wiped volume rejoined as if it had it, a
	// second bootstrap): the last acknowledged put is missing from the cluster's history.
	"lost-acknowledged-write": func(h *history.History) error {
		op, ok := lastAcknowledgedPut(h)
		if !ok {
			return fmt.Errorf("no acknowledged put")
		}
		ws := h.Final.Applied[op.Key]
		for i, w := range ws {
			if w.Value == op.Value && !w.Delete {
				h.Final.Applied[op.Key] = append(ws[:i:i], ws[i+1:]...)
				if h.Final.Values[op.Key] == op.Value {
					h.Final.Values[op.Key] = ""
					if i > 0 {
						h.Final.Values[op.Key] = ws[i-1].Value
					}
				}
				return nil
			}
		}
		return fmt.Errorf("put %d of %s is not in the applied history", op.ID, op.Key)
	},
	// A read served from a member that fell behind (a serializable read passed off as
	// linearizable, a partitioned old leader): a get returns the value before the latest
	// write that had been acknowledged before the get began, at the revision it reported.
	"stale-read": staleRead(false),
	// The same stale read, reporting the revision of the value it returned (as the member
	// that fell behind would): its revision agrees with its value, and only real time tells.
	"stale-read-at-its-revision": staleRead(true),
	// Two leaders in one term (a member bootstrapped a second cluster with the same member
	// IDs, or a partitioned leader kept serving): a follower claims leadership in a term in
	// which another member leads.
	"two-leaders": func(h *history.History) error {
		for i, s := range h.Samples {
			if s.Error == "" && s.Leader != 0 && s.MemberID != 0 && s.Leader != s.MemberID {
				h.Samples[i].Leader = s.MemberID
				return nil
			}
		}
		return fmt.Errorf("no follower sample")
	},
	// A member that joined another cluster (bootstrapped on its own on an empty volume).
	"second-cluster": func(h *history.History) error {
		for i, s := range h.Samples {
			if s.Error == "" && s.ClusterID != 0 {
				h.Samples[i].ClusterID = s.ClusterID + 1
				return nil
			}
		}
		return fmt.Errorf("no sample with a cluster ID")
	},
	// A watch that skipped an event (a watcher resumed from the wrong revision).
	"watch-missed-event": func(h *history.History) error {
		i := middleWatchEvent(h)
		if i < 0 {
			return fmt.Errorf("no watch events")
		}
		h.WatchEvents = append(h.WatchEvents[:i:i], h.WatchEvents[i+1:]...)
		return nil
	},
	// A watch that delivered events out of revision order.
	"watch-out-of-order": func(h *history.History) error {
		i := middleWatchEvent(h)
		if i < 0 || i+1 >= len(h.WatchEvents) {
			return fmt.Errorf("no watch events")
		}
		for j := i + 1; j < len(h.WatchEvents); j++ {
			a, b := h.WatchEvents[i], h.WatchEvents[j]
			if a.Watcher == b.Watcher && a.Revision != b.Revision {
				h.WatchEvents[i].Revision, h.WatchEvents[i].Key, h.WatchEvents[i].Value = b.Revision, b.Key, b.Value
				h.WatchEvents[j].Revision, h.WatchEvents[j].Key, h.WatchEvents[j].Value = a.Revision, a.Key, a.Value
				return nil
			}
		}
		return fmt.Errorf("no two events of one watcher")
	},
}

func lastAcknowledgedPut(h *history.History) (history.Op, bool) {
	var last history.Op
	found := false
	for _, o := range h.Ops {
		if o.Type == history.Put && o.Acknowledged() && (!found || o.Return > last.Return) {
			last, found = o, true
		}
	}
	return last, found
}

func middleWatchEvent(h *history.History) int {
	if len(h.WatchEvents) == 0 {
		return -1
	}
	return len(h.WatchEvents) / 2
}

// staleRead is the stale-read bug; with revision, the get also reports the revision of the
// value it returns.
func staleRead(revision bool) func(*history.History) error {
	return func(h *history.History) error {
		ops := append([]history.Op(nil), h.Ops...)
		sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
		for _, g := range ops {
			if g.Type != history.Get || g.Status != history.OK || !g.Found {
				continue
			}
			var done []history.Op // acknowledged puts of the key completed before the get began
			for _, w := range h.Ops {
				if w.Type == history.Put && w.Acknowledged() && w.Key == g.Key && w.Return < g.Call {
					done = append(done, w)
				}
			}
			sort.Slice(done, func(i, j int) bool { return done[i].Return < done[j].Return })
			if len(done) < 2 || done[len(done)-1].Value != g.Output {
				continue
			}
			for i := range h.Ops {
				if h.Ops[i].ID == g.ID {
					h.Ops[i].Output = done[len(done)-2].Value
					if revision {
						h.Ops[i].Revision = done[len(done)-2].Revision
					}
					return nil
				}
			}
		}
		return fmt.Errorf("no get follows two acknowledged puts of its key")
	}
}
