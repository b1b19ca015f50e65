package report

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/history"
)

func scenario(name string, gap bool, expectAvailability history.Expectation) Scenario {
	sec := int64(time.Second)
	h := &history.History{Start: 0, End: 30 * sec}
	for t := int64(0); t < 30*sec; t += sec / 10 {
		st := history.OK
		if gap && t > 10*sec && t < 20*sec {
			st = history.Unknown
		}
		h.Ops = append(h.Ops, history.Op{Type: history.Put, Call: t, Return: t + sec/50, Status: st})
	}
	v, stats := availability.Check(h, availability.Budget{MaxWriteGap: 2 * time.Second, MinSuccessRatio: 0.5})
	s := Scenario{Name: name, Start: time.Unix(100, 0), Duration: 30 * time.Second, Stats: stats,
		Expected: map[history.CheckerName]history.Expectation{"availability": expectAvailability},
		Verdicts: []history.Verdict{{Checker: "linearizability", Status: history.VerdictPass, Code: "linearizable", Reason: "ok"}, v},
		Events:   []history.Event{{Time: 10 * sec, End: 20 * sec, Kind: "fault", Name: "quorum-loss", Text: "two pods stopped"}, {Time: 5 * sec, Kind: "membership", Name: "MemberAdded", Text: "x"}}}
	s.AddLatencies(h, 100)
	return s
}

func TestReportFiles(t *testing.T) {
	r := &Report{Title: "t", K8sVersion: "v1.35.4", Scenarios: []Scenario{
		scenario("steady", false, history.ExpectPass),                                             // passes
		scenario("quorum-loss", true, history.ExpectFail(availability.CodeWriteGap)),              // fails availability as expected: passes
		scenario("unexpected-gap", true, history.ExpectPass),                                      // fails
		scenario("wrong-failure", true, history.ExpectFail(availability.CodeFirstWrite)),          // fails, but not for the expected reason
		scenario("expected-failure-passed", false, history.ExpectFail(availability.CodeWriteGap)), // passes where a failure was expected
	}}
	for i, want := range []bool{true, true, false, false, false} {
		if got := r.Scenarios[i].Passed(); got != want {
			t.Errorf("%s: Passed() = %v, want %v", r.Scenarios[i].Name, got, want)
		}
	}
	stopped := scenario("stopped", false, history.ExpectPass)
	stopped.Error = "scaling to 5: timed out"
	r2 := &Report{Scenarios: append(slices.Clone(r.Scenarios), stopped)}
	wantFailures := []string{
		"unexpected-gap: availability FAIL: " + r.Scenarios[2].Verdicts[1].Reason,
		"wrong-failure: availability FAIL (write-gap, expected first-write): " + r.Scenarios[3].Verdicts[1].Reason,
		"expected-failure-passed: availability PASS (expected fail): " + r.Scenarios[4].Verdicts[1].Reason,
		"stopped: did not run to its end: scaling to 5: timed out",
	}
	if got := r2.Failures(); !slices.Equal(got, wantFailures) {
		t.Errorf("Failures():\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantFailures, "\n"))
	}
	dir := t.TempDir()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	b, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err := xml.Unmarshal(b, &suites); err != nil {
		t.Fatal(err)
	}
	if s := suites.Suites[0]; s.Tests != 10 || s.Failures != 3 {
		t.Errorf("junit: %d tests, %d failures; want 10 and 3", s.Tests, s.Failures)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	for _, want := range []string{"<svg", "quorum-loss", "fail (expected)", "longest write gap", "two pods stopped", "<circle"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if !strings.Contains(string(md), "| unexpected-gap | FAIL |") || !strings.Contains(string(md), "FAIL (write-gap, expected first-write)") || !strings.Contains(string(md), "PASS (expected fail)") {
		t.Errorf("summary.md:\n%s", md)
	}

	// A matrix of two versions.
	root := t.TempDir()
	for _, v := range []string{"v1.34.4", "v1.35.4"} {
		r.K8sVersion = v
		if err := r.Write(filepath.Join(root, v)); err != nil {
			t.Fatal(err)
		}
	}
	reports, err := Combine(root)
	if err != nil || len(reports) != 2 {
		t.Fatalf("Combine: %d reports, %v", len(reports), err)
	}
	m, _ := os.ReadFile(filepath.Join(root, "summary.md"))
	if strings.Count(string(m), "| steady | PASS |") != 2 {
		t.Errorf("matrix:\n%s", m)
	}
}
