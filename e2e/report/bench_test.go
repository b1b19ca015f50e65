package report

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/history"
)

func benchScenario(base string, run int, gap time.Duration, fail, unknown int) Scenario {
	return Scenario{Name: base + "-" + string(rune('a'+run)), Labels: map[string]string{"suite": "bench", "base": base},
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
		r.Scenarios = append(r.Scenarios, benchScenario("upgrade", i, g*time.Millisecond, fail, 0))
	}
	r.Scenarios = append(r.Scenarios, benchScenario("delete", 0, 80*time.Millisecond, 0, 1))
	sums := Bench(r)
	if len(sums) != 2 || sums[0].Base != "delete" || sums[1].Base != "upgrade" {
		t.Fatalf("bases: %+v", sums)
	}
	up := sums[1]
	up.Runs = nil
	want := BenchSummary{Base: "upgrade", Median: 42500 * time.Microsecond, P95: 110 * time.Millisecond, Max: 110 * time.Millisecond,
		Within50ms: 7, Within100ms: 9, Clean: 9, Passed: 10}
	if !reflect.DeepEqual(up, want) {
		t.Fatalf("upgrade summary\n got %+v\nwant %+v", up, want)
	}
	del := sums[0]
	if del.Median != 80*time.Millisecond || del.Clean != 0 || del.Within100ms != 1 || del.Within50ms != 0 {
		t.Fatalf("delete summary %+v", del)
	}
	md := BenchMarkdown(r, sums)
	if !strings.Contains(md, "| upgrade | 10 | 42.5ms | 110ms | 110ms | 7 | 9 | 9 | 10 |") {
		t.Errorf("markdown:\n%s", md)
	}
}
