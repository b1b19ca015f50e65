package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"reflect"
	"strings"
	"testing"

	"github.com/quorate-dev/quorate/e2e/history"
)

// skippedReport holds a pass, a failure and a skip.
func skippedReport() *Report {
	return &Report{K8sVersion: "v1.35.4", Scenarios: []Scenario{
		{Name: "steady", Verdicts: []history.Verdict{{Checker: "availability", Status: history.VerdictPass, Reason: "ok"}}},
		{Name: "scale", Verdicts: []history.Verdict{{Checker: "availability", Status: history.VerdictFail, Code: "write-gap", Reason: "gap of 12s"}}},
		{Name: "steady-pod-kill", Skipped: []string{"Chaos Mesh: Chaos Mesh is not installed", "node access: only a cluster the suite starts"}},
	}}
}

func TestSkippedIsNeitherPassNorFailure(t *testing.T) {
	r := skippedReport()
	var got []Result
	for _, s := range r.Scenarios {
		got = append(got, s.Result())
	}
	if want := []Result{ResultPass, ResultFail, ResultSkipped}; !reflect.DeepEqual(got, want) {
		t.Errorf("results %v, want %v", got, want)
	}
	if r.Scenarios[2].Passed() {
		t.Error("a skipped scenario passed")
	}
	if c, want := r.Counts(), (Counts{Passed: 1, Failed: 1, Skipped: 1}); c != want {
		t.Errorf("counts %+v, want %+v", c, want)
	}
	if got, want := r.Counts().String(), "1 passed, 1 failed, 1 skipped (a skipped scenario did not run: it is not a pass)"; got != want {
		t.Errorf("counts say %q, want %q", got, want)
	}
	if got, want := r.Failures(), []string{"scale: availability FAIL: gap of 12s"}; !reflect.DeepEqual(got, want) {
		t.Errorf("failures %q, want %q", got, want)
	}
	if got, want := r.Skips(), []string{"steady-pod-kill: skipped, missing Chaos Mesh: Chaos Mesh is not installed; node access: only a cluster the suite starts"}; !reflect.DeepEqual(got, want) {
		t.Errorf("skips %q, want %q", got, want)
	}
}

func TestSkippedInEveryFormat(t *testing.T) {
	r := skippedReport()
	md := r.Markdown()
	for _, line := range []string{
		"Scenarios: 1 passed, 1 failed, 1 skipped (a skipped scenario did not run: it is not a pass).",
		"| steady-pod-kill | SKIPPED | - | - | - | - | - | - | - | - |",
		"## steady-pod-kill: SKIPPED",
		"- Chaos Mesh: Chaos Mesh is not installed",
		"- node access: only a cluster the suite starts",
	} {
		if !strings.Contains(md, line+"\n") {
			t.Errorf("summary.md lacks the line %q:\n%s", line, md)
		}
	}
	if got, want := Matrix([]*Report{r}), "| v1.35.4 | steady-pod-kill | SKIPPED | - | - | - | - | - |\n"; !strings.Contains(got, want) {
		t.Errorf("matrix lacks %q:\n%s", want, got)
	}
	if page := HTML([]*Report{r}); !strings.Contains(page, `<h3>steady-pod-kill — <span class="skipped">SKIPPED</span></h3><p>The scenario did not run: the cluster lacks a prerequisite.</p><ul><li>Chaos Mesh: Chaos Mesh is not installed</li><li>node access: only a cluster the suite starts</li></ul></section>`) {
		t.Errorf("the HTML page does not show the skip:\n%s", page)
	}

	var suites junitSuites
	if err := xml.Unmarshal(r.JUnit(), &suites); err != nil {
		t.Fatal(err)
	}
	s := suites.Suites[0]
	if s.Tests != 3 || s.Failures != 1 || s.Skipped != 1 {
		t.Errorf("JUnit suite counts tests %d failures %d skipped %d, want 3 1 1", s.Tests, s.Failures, s.Skipped)
	}
	want := junitCase{Name: "run", Classname: "conformance.steady-pod-kill",
		Skipped: &junitSkipped{Message: "a prerequisite is missing: Chaos Mesh: Chaos Mesh is not installed; node access: only a cluster the suite starts"}}
	if got := s.Cases[2]; !reflect.DeepEqual(got, want) {
		t.Errorf("JUnit case %+v, want %+v", got, want)
	}

	var buf bytes.Buffer
	if err := r.WriteScorecard(&buf); err != nil {
		t.Fatal(err)
	}
	var st scorecardStatus
	if err := json.Unmarshal(buf.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	wantSC := scorecardResult{Name: "quorate-steady-pod-kill", State: "error",
		Errors: []string{"skipped: a prerequisite is missing", "Chaos Mesh: Chaos Mesh is not installed", "node access: only a cluster the suite starts"}}
	if got := st.Results[2]; !reflect.DeepEqual(got, wantSC) {
		t.Errorf("scorecard result %+v, want %+v", got, wantSC)
	}
}

// TestMissingPrerequisiteFailed: with --missing-prerequisites=fail the scenario carries an
// Error as well as what was missing, and is a failure everywhere.
func TestMissingPrerequisiteFailed(t *testing.T) {
	s := Scenario{Name: "node-loss", Skipped: []string{"node access: no"}, Error: "a prerequisite is missing (--missing-prerequisites=fail): node access: no"}
	r := &Report{Scenarios: []Scenario{s}}
	if s.Result() != ResultFail || r.Counts() != (Counts{Failed: 1}) || len(r.Skips()) != 0 {
		t.Errorf("result %s, counts %+v, skips %q", s.Result(), r.Counts(), r.Skips())
	}
	if got, want := r.Failures(), []string{"node-loss: did not run to its end: " + s.Error}; !reflect.DeepEqual(got, want) {
		t.Errorf("failures %q, want %q", got, want)
	}
	var suites junitSuites
	if err := xml.Unmarshal(r.JUnit(), &suites); err != nil {
		t.Fatal(err)
	}
	if st := suites.Suites[0]; st.Failures != 1 || st.Skipped != 0 {
		t.Errorf("JUnit failures %d skipped %d, want 1 0", st.Failures, st.Skipped)
	}
	if md := r.Markdown(); !strings.Contains(md, "## node-loss: FAIL\n") {
		t.Errorf("summary.md:\n%s", md)
	}
}
