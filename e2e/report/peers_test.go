package report

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/history"
)

func peerScenario(operator, op string, gap time.Duration, timings []Timing, verdicts ...history.Verdict) Scenario {
	return Scenario{Name: "peers-" + operator + "-" + op, Labels: map[string]string{"suite": "peers", "operator": operator, "operation": op},
		Verdicts: verdicts, Timings: timings, Stats: availability.Stats{MaxWriteGap: gap, OK: 900, Fail: 2, Unknown: 1}}
}

var passAll = history.Verdict{Checker: "availability", Status: history.VerdictPass}

// Rows follow the order the operations ran; Quorate's cell comes first whatever order the
// operators ran in; other suites are left out; a failed checker is named with its code.
func TestPeers(t *testing.T) {
	r := &Report{K8sVersion: "v1.35.4", Quorate: "0.2.0", Scenarios: []Scenario{
		{Name: "steady", Labels: map[string]string{"suite": "core"}},
		peerScenario("etcd-io", "scale", 2*time.Second, []Timing{{Name: "scaled to 5", Seconds: 90}},
			history.Verdict{Checker: "availability", Status: history.VerdictFail, Code: "gap-over-budget"}),
		peerScenario("quorate", "scale", 200*time.Millisecond, []Timing{{Name: "scaled to 5", Seconds: 30}}, passAll),
		peerScenario("quorate", "upgrade", 100*time.Millisecond, []Timing{{Name: "every member at etcd 3.6.16", Seconds: 60}}, passAll),
		peerScenario("etcd-io", "upgrade", 400*time.Millisecond, []Timing{{Name: "every member at etcd 3.6.16", Seconds: 180, Error: "timed out | pods at 3.5.35"}}, passAll),
	}}
	// An earlier run's result for the same operator and operation is replaced by the later one.
	r.Scenarios = append([]Scenario{peerScenario("quorate", "scale", time.Second, nil, passAll)}, r.Scenarios...)
	rows, operators := Peers(r)
	if want := []string{"quorate", "etcd-io"}; !reflect.DeepEqual(operators, want) {
		t.Fatalf("operators %v, want %v", operators, want)
	}
	want := []PeerRow{
		{Operation: "scale", Cells: []PeerCell{
			{Operator: "quorate", LongestGap: 200 * time.Millisecond, Writes: true, OK: 900, Failed: 2, Unknown: 1, Timings: []Timing{{Name: "scaled to 5", Seconds: 30}}, Verdicts: "all pass"},
			{Operator: "etcd-io", LongestGap: 2 * time.Second, Writes: true, OK: 900, Failed: 2, Unknown: 1, Timings: []Timing{{Name: "scaled to 5", Seconds: 90}}, Verdicts: "availability fail [gap-over-budget]"},
		}},
		{Operation: "upgrade", Cells: []PeerCell{
			{Operator: "quorate", LongestGap: 100 * time.Millisecond, Writes: true, OK: 900, Failed: 2, Unknown: 1, Timings: []Timing{{Name: "every member at etcd 3.6.16", Seconds: 60}}, Verdicts: "all pass"},
			{Operator: "etcd-io", LongestGap: 400 * time.Millisecond, Writes: true, OK: 900, Failed: 2, Unknown: 1, Timings: []Timing{{Name: "every member at etcd 3.6.16", Seconds: 180, Error: "timed out | pods at 3.5.35"}}, Verdicts: "all pass"},
		}},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows\n%+v\nwant\n%+v", rows, want)
	}
	md := PeersMarkdown(r, rows, operators)
	wantTable := `## scale

| | quorate | etcd-io |
|---|---|---|
| longest write gap | 200ms | 2s (×10.00) |
| operations ok / failed / unknown | 900 / 2 / 1 | 900 / 2 / 1 |
| scaled to 5 | 30.0 s | 90.0 s (×3.00) |
| verdicts | all pass | availability fail [gap-over-budget] |

## upgrade

| | quorate | etcd-io |
|---|---|---|
| longest write gap | 100ms | 400ms (×4.00) |
| operations ok / failed / unknown | 900 / 2 / 1 | 900 / 2 / 1 |
| every member at etcd 3.6.16 | 60.0 s | **not reached** in 180 s: timed out \| pods at 3.5.35 |
| verdicts | all pass | all pass |
`
	if _, tables, ok := strings.Cut(md, "\n## "); !ok || "## "+tables != wantTable {
		t.Fatalf("markdown:\n%s\nwant tables:\n%s", md, wantTable)
	}
	if page := PeersHTML(r, rows, operators); !strings.Contains(page, "<svg") || strings.Count(page, "<rect") != 4+2 {
		t.Fatalf("the page should draw 4 bars and 2 legend swatches:\n%s", page)
	}
}
