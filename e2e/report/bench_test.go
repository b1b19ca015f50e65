package report

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/history"
)

func benchScenario(base string, run int, gap time.Duration, fail, unknown int) Scenario {
	return Scenario{Name: base + "-" + string(rune('a'+run)), Labels: map[string]string{"suite": "bench", "base": base, "run": fmt.Sprint(run)},
		Verdicts: []history.Verdict{{Checker: "availability", Status: history.VerdictPass}},
		Stats:    availability.Stats{MaxWriteGap: gap, OK: 1000, Fail: fail, Unknown: unknown}}
}

// The summary is the distribution of the runs' longest gaps and counts of clean runs, per
// benchmark; other scenarios are left out.
func TestBench(t *testing.T) {
	r := &Report{Scenarios: []Scenario{{Name: "steady", Labels: map[string]string{"suite": "core"}}}}
	gaps := []time.Duration{30, 45, 20, 60, 110, 40, 35, 25, 50, 55} // ms, 10 runs
	for i, g := range gaps {
		fail := 0
		if i == 4 {
			fail = 2
		}
		sc := benchScenario("upgrade", i, g*time.Millisecond, fail, 0)
		sc.Stats.Dropped = fail // raft dropped both at a leadership transfer
		r.Scenarios = append(r.Scenarios, sc)
	}
	r.Scenarios = append(r.Scenarios, benchScenario("delete", 0, 80*time.Millisecond, 0, 1))
	// Another operator's runs of the same benchmark are a distribution of their own, after
	// Quorate's.
	for i, g := range []time.Duration{900, 1200, 2500} {
		sc := benchScenario("upgrade", i, g*time.Millisecond, 1, 3)
		sc.Labels["operator"] = "etcd-io"
		r.Scenarios = append([]Scenario{sc}, r.Scenarios...)
	}
	sums := Bench(r)
	var order []string
	for _, s := range sums {
		order = append(order, s.Base+"/"+s.Operator)
	}
	if want := []string{"delete/quorate", "upgrade/quorate", "upgrade/etcd-io"}; !reflect.DeepEqual(order, want) {
		t.Fatalf("benchmarks %v, want %v", order, want)
	}
	up := sums[1]
	up.Runs = nil
	want := BenchSummary{Base: "upgrade", Operator: "quorate", Median: 42500 * time.Microsecond, P95: 110 * time.Millisecond, Max: 110 * time.Millisecond,
		Within50ms: 7, Within100ms: 9, NoFailed: 9, OnlyDropped: 1, Clean: 9, Passed: 10}
	if !reflect.DeepEqual(up, want) {
		t.Fatalf("upgrade summary\n got %+v\nwant %+v", up, want)
	}
	del := sums[0]
	del.Runs = nil
	want = BenchSummary{Base: "delete", Operator: "quorate", Median: 80 * time.Millisecond, P95: 80 * time.Millisecond, Max: 80 * time.Millisecond,
		Within50ms: 0, Within100ms: 1, NoFailed: 1, Clean: 0, Passed: 1}
	if !reflect.DeepEqual(del, want) {
		t.Fatalf("delete summary\n got %+v\nwant %+v", del, want)
	}
	peer := sums[2]
	peer.Runs = nil
	want = BenchSummary{Base: "upgrade", Operator: "etcd-io", Median: 1200 * time.Millisecond, P95: 2500 * time.Millisecond, Max: 2500 * time.Millisecond, Passed: 3}
	if !reflect.DeepEqual(peer, want) {
		t.Fatalf("etcd-io summary\n got %+v\nwant %+v", peer, want)
	}
	hasLines(t, BenchMarkdown(r, sums),
		"| upgrade | quorate | 10 | 42.5ms | 110ms | 110ms | 7 | 9 | 9 | 1 | 9 | 10 | — | — |",
		"| upgrade-e | 110ms | — | 1000/2 (2 raft-dropped)/0 | PASS |",
		"| upgrade | etcd-io | 3 | 1.2s | 2.5s | 2.5s | 0 | 0 | 0 | 0 | 0 | 3 | — | — |",
		"## upgrade, etcd-io")
}

// hasLines fails t for each of lines that is not a whole line of md.
func hasLines(t *testing.T, md string, lines ...string) {
	t.Helper()
	for _, line := range lines {
		if !strings.Contains("\n"+md, "\n"+line+"\n") {
			t.Errorf("the markdown has no line %q:\n%s", line, md)
		}
	}
}

// WithHandovers reads each run's history and adds the longest gap at a change of leader, and
// its distribution over the runs that had one.
func TestBenchHandovers(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	// handover is a history with writes every 5 ms but for a stall of d at 500 ms, which the
	// poller saw as a new term (samples at 450 and 700 ms).
	handover := func(d int64) *history.History {
		h := &history.History{End: ms(1000), Samples: []history.Sample{{Time: ms(450), RaftTerm: 2}, {Time: ms(700), RaftTerm: 3}}}
		for at := int64(5); at < 1000; at += 5 {
			if at > 500 && at < 500+d {
				continue
			}
			h.Ops = append(h.Ops, history.Op{Type: history.Put, Call: ms(at) - 1, Return: ms(at), Status: history.OK})
		}
		return h
	}
	files := map[string]*history.History{"a.json": handover(40), "b.json": handover(90), "c.json": handover(20),
		"d.json": {End: ms(1000), Samples: []history.Sample{{Time: ms(450), RaftTerm: 2}}}}
	r := &Report{}
	for _, f := range []string{"a.json", "b.json", "c.json", "d.json"} {
		sc := benchScenario("upgrade", len(r.Scenarios), 100*time.Millisecond, 0, 0)
		sc.History = f
		r.Scenarios = append(r.Scenarios, sc)
	}
	sums := Bench(r)
	err := WithHandovers(sums, func(f string) (*history.History, error) {
		if h, ok := files[f]; ok {
			return h, nil
		}
		return nil, fmt.Errorf("no history %s", f)
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, run := range sums[0].Runs {
		got = append(got, fmt.Sprintf("%d:%s", run.Handovers, run.HandoverGap))
	}
	if want := []string{"1:40ms", "1:90ms", "1:20ms", "0:0s"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("runs' handover gaps %v, want %v", got, want)
	}
	if s := sums[0]; s.HandoverRuns != 3 || s.HandoverMedian != 40*time.Millisecond || s.HandoverMax != 90*time.Millisecond {
		t.Fatalf("handover distribution: %d runs, median %s, max %s", s.HandoverRuns, s.HandoverMedian, s.HandoverMax)
	}
	hasLines(t, BenchMarkdown(r, sums),
		"| upgrade | quorate | 4 | 100ms | 100ms | 100ms | 0 | 4 | 4 | 0 | 4 | 4 | 40ms (3 runs) | 90ms |",
		"| upgrade-b | 100ms | 1: 90ms | 1000/0/0 | PASS |",
		"| upgrade-d | 100ms | — | 1000/0/0 | PASS |")
	sums[0].Runs[0].History = "missing.json"
	if err := WithHandovers(sums, func(f string) (*history.History, error) { return nil, fmt.Errorf("no history %s", f) }); err == nil {
		t.Error("a missing history file was not reported")
	}
}

// Runs with two client profiles make a distribution per profile, in the order the run named
// them, each labelled with its profile.
func TestBenchPerProfile(t *testing.T) {
	r := &Report{}
	for i, g := range []struct{ aware, service time.Duration }{{40, 900}, {50, 2000}, {60, 45}} {
		sc := benchScenario("etcd-upgrade", i, g.aware*time.Millisecond, 0, 0)
		sc.Profile, sc.History = "member-aware", fmt.Sprintf("history-%d-member-aware.json", i)
		sc.OtherProfiles = []ProfileResult{{Profile: "service-only", History: fmt.Sprintf("history-%d-service-only.json", i),
			Verdicts: sc.Verdicts, Stats: availability.Stats{MaxWriteGap: g.service * time.Millisecond, OK: 900, Fail: i % 2}}}
		r.Scenarios = append(r.Scenarios, sc)
	}
	sums := Bench(r)
	if len(sums) != 2 {
		t.Fatalf("%d summaries, want one per profile", len(sums))
	}
	want := []BenchSummary{
		{Base: "etcd-upgrade", Operator: "quorate", Profile: "member-aware", Median: 50 * time.Millisecond, P95: 60 * time.Millisecond, Max: 60 * time.Millisecond,
			Within50ms: 2, Within100ms: 3, NoFailed: 3, Clean: 3, Passed: 3},
		{Base: "etcd-upgrade", Operator: "quorate", Profile: "service-only", Median: 900 * time.Millisecond, P95: 2000 * time.Millisecond, Max: 2000 * time.Millisecond,
			Within50ms: 1, Within100ms: 1, NoFailed: 2, Clean: 2, Passed: 3},
	}
	for i := range sums {
		runs := sums[i].Runs
		sums[i].Runs = nil
		if !reflect.DeepEqual(sums[i], want[i]) {
			t.Errorf("summary %d\n got %+v\nwant %+v", i, sums[i], want[i])
		}
		if len(runs) != 3 || runs[1].History != fmt.Sprintf("history-1-%s.json", want[i].Profile) {
			t.Errorf("%s: runs %+v", want[i].Profile, runs)
		}
		sums[i].Runs = runs
	}
	hasLines(t, BenchMarkdown(r, sums),
		"| etcd-upgrade | quorate, member-aware client | 3 | 50ms | 60ms | 60ms | 2 | 3 | 3 | 0 | 3 | 3 | — | — |",
		"| etcd-upgrade | quorate, service-only client | 3 | 900ms | 2s | 2s | 1 | 1 | 2 | 0 | 2 | 3 | — | — |",
		"## etcd-upgrade, quorate, service-only client")
}
