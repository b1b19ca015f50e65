package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/history"
)

// profiled is a scenario run with two client profiles: member-aware without a gap, and
// service-only with a 10 s one that its budget does not allow.
func profiled(name string) Scenario {
	s := scenario(name, false, history.ExpectPass)
	other := scenario(name, true, history.ExpectPass)
	s.Profile, s.History = "member-aware", "history-"+name+"-member-aware.json"
	p := ProfileResult{Profile: "service-only", Verdicts: other.Verdicts, Stats: other.Stats, History: "history-" + name + "-service-only.json"}
	p.HistoryStart, p.HistoryEnd, p.Latencies = other.HistoryStart, other.HistoryEnd, other.Latencies
	s.OtherProfiles = []ProfileResult{p}
	return s
}

// A scenario passes only when every client profile's verdicts meet their expectations, and
// each report names the profile of every result.
func TestProfilesSideBySide(t *testing.T) {
	s := profiled("scale")
	r := &Report{Title: "t", K8sVersion: "v1.35.4", Scenarios: []Scenario{s}}
	gapReason := s.OtherProfiles[0].Verdicts[1].Reason
	if s.Passed() {
		t.Error("the scenario passed although the service-only profile's availability failed")
	}
	if got, want := r.Failures(), []string{"scale [service-only]: availability FAIL: " + gapReason}; !slices.Equal(got, want) {
		t.Errorf("Failures() = %q, want %q", got, want)
	}
	passing := profiled("steady")
	passing.OtherProfiles[0].Verdicts = passing.Verdicts
	if !passing.Passed() {
		t.Error("a scenario whose every profile met its expectations did not pass")
	}

	// summary.md: one row per profile, labelled, side by side.
	var rows []string
	for _, l := range strings.Split(r.Markdown(), "\n") {
		if strings.HasPrefix(l, "| scale") {
			rows = append(rows, l)
		}
	}
	row := func(label, result, availability string, p ProfileResult) string {
		return fmt.Sprintf("| %s | %s | pass | - | %s | - | - | %s | %d/%d/%d | %s |", label, result, availability, p.Stats.MaxWriteGap.Round(time.Millisecond),
			p.Stats.OK, p.Stats.Fail, p.Stats.Unknown, p.Stats.P99.Round(100*time.Microsecond))
	}
	ps := s.Profiles()
	wantRows := []string{row("scale [member-aware]", "PASS", "pass", ps[0]), row("scale [service-only]", "FAIL", "FAIL", ps[1])}
	if !slices.Equal(rows, wantRows) {
		t.Errorf("summary rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}

	// junit.xml: a case per checker and profile.
	var suites junitSuites
	if err := xml.Unmarshal(r.JUnit(), &suites); err != nil {
		t.Fatal(err)
	}
	var cases []string
	for _, c := range suites.Suites[0].Cases {
		cases = append(cases, fmt.Sprintf("%s failed=%v", c.Name, c.Failure != nil))
	}
	wantCases := []string{"linearizability [member-aware] failed=false", "availability [member-aware] failed=false",
		"linearizability [service-only] failed=false", "availability [service-only] failed=true"}
	if !slices.Equal(cases, wantCases) {
		t.Errorf("junit cases %q, want %q", cases, wantCases)
	}

	// The matrix of combined reports: a row per profile too.
	wantMatrix := []string{"| v1.35.4 | scale [member-aware] | PASS | pass | - | pass | - | - |", "| v1.35.4 | scale [service-only] | FAIL | pass | - | FAIL | - | - |"}
	var matrix []string
	for _, l := range strings.Split(Matrix([]*Report{r}), "\n") {
		if strings.HasPrefix(l, "| v1.35.4") {
			matrix = append(matrix, l)
		}
	}
	if !slices.Equal(matrix, wantMatrix) {
		t.Errorf("matrix\n%s\nwant\n%s", strings.Join(matrix, "\n"), strings.Join(wantMatrix, "\n"))
	}

	// The scorecard: the profile before each verdict.
	var buf bytes.Buffer
	if err := r.WriteScorecard(&buf); err != nil {
		t.Fatal(err)
	}
	var sc scorecardStatus
	if err := json.Unmarshal(buf.Bytes(), &sc); err != nil {
		t.Fatal(err)
	}
	v := func(p string, i int) history.Verdict {
		return map[string]ProfileResult{"member-aware": ps[0], "service-only": ps[1]}[p].Verdicts[i]
	}
	wantSC := scorecardResult{Name: "quorate-scale", State: "fail",
		Log: strings.Join([]string{"[member-aware] " + v("member-aware", 0).String(), "[member-aware] " + v("member-aware", 1).String(),
			"[service-only] " + v("service-only", 0).String(), "[service-only] " + v("service-only", 1).String()}, "\n"),
		Errors: []string{"[service-only] availability: " + gapReason + " (expected pass)"}}
	if len(sc.Results) != 1 || !reflect.DeepEqual(sc.Results[0], wantSC) {
		t.Errorf("scorecard %+v, want %+v", sc.Results, wantSC)
	}

	// A JSON round trip keeps every profile (combined reports are redrawn from report.json).
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Scenario
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Profiles(), s.Profiles()) {
		t.Error("report.json loses the profiles' results")
	}
}

// ForProfile is the scenario as one profile saw it, and Profiles lists the first profile's
// results before the others'.
func TestForProfile(t *testing.T) {
	s := profiled("scale")
	ps := s.Profiles()
	if len(ps) != 2 || ps[0].Profile != "member-aware" || !reflect.DeepEqual(ps[1], s.OtherProfiles[0]) {
		t.Fatalf("Profiles() = %+v", ps)
	}
	got := s.ForProfile(ps[1])
	want := s
	want.Profile, want.Verdicts, want.Stats, want.History = "service-only", ps[1].Verdicts, ps[1].Stats, ps[1].History
	want.HistoryStart, want.HistoryEnd, want.Latencies, want.OtherProfiles = ps[1].HistoryStart, ps[1].HistoryEnd, ps[1].Latencies, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ForProfile(service-only) = %+v, want %+v", got, want)
	}
	if d := scenario("steady", false, history.ExpectPass); len(d.Profiles()) != 1 || d.Profiles()[0].Profile != "" || d.Label() != "steady" {
		t.Errorf("a default run has profiles %+v, label %q", d.Profiles(), d.Label())
	}
}

// The page links every profile's history.
func TestProfilesPageLinksEachHistory(t *testing.T) {
	page := HTML([]*Report{{K8sVersion: "v1.35.4", Scenarios: []Scenario{profiled("scale")}}})
	for _, f := range []string{"history-scale-member-aware.json", "history-scale-service-only.json"} {
		if n := strings.Count(page, `<a href="`+f+`">`); n != 1 {
			t.Errorf("index.html links %s %d times, want once", f, n)
		}
	}
}
