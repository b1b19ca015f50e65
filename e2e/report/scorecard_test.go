package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/quorate-dev/quorate/e2e/history"
)

func TestScorecardStatus(t *testing.T) {
	r := &Report{Scenarios: []Scenario{
		{Name: "steady", Verdicts: []history.Verdict{{Checker: "availability", Status: history.VerdictPass, Reason: "ok"}}},
		{Name: "scale", Verdicts: []history.Verdict{{Checker: "availability", Status: history.VerdictFail, Code: "write-gap", Reason: "gap of 12s"}}},
		{Name: "broken", Error: "setting up: no cluster"},
	}}
	var buf bytes.Buffer
	if err := r.WriteScorecard(&buf); err != nil {
		t.Fatal(err)
	}
	var got scorecardStatus
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := []struct{ name, state, err string }{
		{"quorate-steady", "pass", ""},
		{"quorate-scale", "fail", "availability: gap of 12s (expected pass)"},
		{"quorate-broken", "fail", "setting up: no cluster"},
	}
	if len(got.Results) != len(want) {
		t.Fatalf("%d results, want %d", len(got.Results), len(want))
	}
	for i, w := range want {
		g := got.Results[i]
		if g.Name != w.name || g.State != w.state || (w.err != "" && (len(g.Errors) == 0 || g.Errors[0] != w.err)) || (w.err == "" && len(g.Errors) > 0) {
			t.Errorf("result %d = %+v, want %s %s %q", i, g, w.name, w.state, w.err)
		}
	}
}
