// Package report writes the results of a conformance run for people and for CI: JUnit XML, a
// Markdown summary, and an HTML page that shows per scenario the availability timeline and the
// latency as pictures (SVG drawn from the history), the verdicts, and the events of the run.
// Reports of several Kubernetes versions combine into one version x scenario table.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker"
	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/history"
)

// Scenario is the result of one scenario.
type Scenario struct {
	Name     string            `json:"name"`
	Labels   map[string]string `json:"labels,omitempty"`
	Start    time.Time         `json:"start"`
	Duration time.Duration     `json:"duration"`
	Verdicts []history.Verdict `json:"verdicts"`
	// Expected is the verdict each checker should reach (a pass unless listed). A scenario
	// whose fault the operator cannot mask expects the availability verdict to fail, with the
	// code of the broken budget.
	Expected map[checker.Name]history.Expectation `json:"expected,omitempty"`
	Budget   availability.Budget                  `json:"budget"`
	// Class of the scenario's disruption (planned, fault, partition), which chose the budget;
	// empty for a scenario with a budget of its own.
	Class   string             `json:"class,omitempty"`
	Stats   availability.Stats `json:"stats"`
	Events  []history.Event    `json:"events,omitempty"`
	History string             `json:"history,omitempty"` // file name of the saved history
	Error   string             `json:"error,omitempty"`   // the scenario could not run to its end
	// Skipped names, one line each, the prerequisites the cluster lacked (framework.
	// Prerequisite): the scenario did not run. A skip is never a pass, nor a failure of the
	// operator; the summary counts it apart. With Error set too (--missing-prerequisites=fail)
	// it is a failure.
	Skipped []string `json:"skipped,omitempty"`
	// Timeline data for the pictures (kept so combined reports can redraw them).
	HistoryStart int64      `json:"historyStart"`
	HistoryEnd   int64      `json:"historyEnd"`
	Latencies    [][2]int64 `json:"latencies,omitempty"` // (call offset ns, latency ns), sampled
	// Timings are how long the operator took to reach a state (the side-by-side benchmark's
	// time to converge).
	Timings []Timing `json:"timings,omitempty"`
	// Profile is the client profile (e2e/workload.Profile) whose results Verdicts, Stats,
	// History and the timeline data above are, when the run had another than the default
	// member-aware profile alone (--client-profiles); "" for that default.
	Profile string `json:"profile,omitempty"`
	// OtherProfiles are the results of the client profiles that ran beside Profile, in
	// --client-profiles order: each its own load and history, judged by every checker against
	// the same budget and expectations.
	OtherProfiles []ProfileResult `json:"otherProfiles,omitempty"`
}

// ProfileResult is what one client profile of a scenario saw.
type ProfileResult struct {
	Profile      string             `json:"profile"`
	Verdicts     []history.Verdict  `json:"verdicts"`
	Stats        availability.Stats `json:"stats"`
	History      string             `json:"history,omitempty"`
	HistoryStart int64              `json:"historyStart"`
	HistoryEnd   int64              `json:"historyEnd"`
	Latencies    [][2]int64         `json:"latencies,omitempty"`
}

// AddLatencies samples the latencies of successful operations for the latency picture.
func (p *ProfileResult) AddLatencies(h *history.History, max int) {
	p.Latencies, p.HistoryStart, p.HistoryEnd = latencies(h, max), h.Start, h.End
}

// Profiles are the results of every client profile of the scenario, Profile's first; one
// without a profile name for a run of the default profile alone.
func (s Scenario) Profiles() []ProfileResult {
	first := ProfileResult{Profile: s.Profile, Verdicts: s.Verdicts, Stats: s.Stats, History: s.History,
		HistoryStart: s.HistoryStart, HistoryEnd: s.HistoryEnd, Latencies: s.Latencies}
	return append([]ProfileResult{first}, s.OtherProfiles...)
}

// ForProfile is the scenario as profile p saw it: its verdicts, statistics, history and
// timeline data in place of the first profile's, and no other profile.
func (s Scenario) ForProfile(p ProfileResult) Scenario {
	s.Profile, s.Verdicts, s.Stats, s.History = p.Profile, p.Verdicts, p.Stats, p.History
	s.HistoryStart, s.HistoryEnd, s.Latencies, s.OtherProfiles = p.HistoryStart, p.HistoryEnd, p.Latencies, nil
	return s
}

// Label names the scenario, with its client profile when it has one: "scale [service-only]".
func (s Scenario) Label() string {
	if s.Profile == "" {
		return s.Name
	}
	return s.Name + " [" + s.Profile + "]"
}

// profiled reports whether the scenario names its client profiles (another than the default
// alone ran).
func (s Scenario) profiled() bool { return s.Profile != "" || len(s.OtherProfiles) > 0 }

// Timing is how long the operator took to reach a state, or why it did not.
type Timing struct {
	// Name says what was waited for ("first write after creation", "scaled to 5").
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// Error is why the state was not reached within the time allowed.
	Error string `json:"error,omitempty"`
}

// Result is the scenario's outcome as the report shows it.
type Result string

const (
	ResultPass Result = "PASS"
	ResultFail Result = "FAIL"
	// ResultSkipped: a prerequisite was missing and the scenario did not run (Skipped).
	ResultSkipped Result = "SKIPPED"
)

// Result is PASS, FAIL, or SKIPPED when the scenario did not run for a missing prerequisite
// (FAIL when that was asked to fail it: Error says so).
func (s Scenario) Result() Result {
	switch {
	case s.Error != "":
		return ResultFail
	case len(s.Skipped) > 0:
		return ResultSkipped
	case s.Passed():
		return ResultPass
	}
	return ResultFail
}

// Passed: the scenario ran and every checker reached its expected verdict, for every client
// profile.
func (s Scenario) Passed() bool {
	if s.Error != "" || len(s.Skipped) > 0 {
		return false
	}
	for _, p := range s.Profiles() {
		if !s.ForProfile(p).profilePassed() {
			return false
		}
	}
	return true
}

// profileResult is the outcome of the first profile's history (Result for one profile).
func (s Scenario) profileResult() Result {
	switch {
	case s.Error != "":
		return ResultFail
	case len(s.Skipped) > 0:
		return ResultSkipped
	case s.profilePassed():
		return ResultPass
	}
	return ResultFail
}

// profilePassed: every checker reached its expected verdict on the first profile's history.
func (s Scenario) profilePassed() bool {
	if s.Error != "" || len(s.Skipped) > 0 || len(s.Verdicts) == 0 {
		return false
	}
	for _, v := range s.Verdicts {
		if !s.Expect(v.Checker).Met(v) {
			return false
		}
	}
	return true
}

// Failures says, a line each, why the scenarios that did not pass failed: the error that
// stopped a scenario, and each checker that missed its expected verdict with its reason. The
// suite prints them last, so that the end of a run's output names the cause.
func (r *Report) Failures() []string {
	var out []string
	for _, s := range r.Scenarios {
		if s.Error != "" {
			out = append(out, fmt.Sprintf("%s: did not run to its end: %s", s.Name, s.Error))
		}
		if len(s.Skipped) > 0 {
			continue
		}
		for _, p := range s.Profiles() {
			ps := s.ForProfile(p)
			if s.Error == "" && len(ps.Verdicts) == 0 {
				out = append(out, ps.Label()+": no verdict")
			}
			for _, v := range ps.Verdicts {
				if !ps.Expect(v.Checker).Met(v) {
					out = append(out, fmt.Sprintf("%s: %s %s: %s", ps.Label(), v.Checker, verdictCell(ps, v.Checker), v.Reason))
				}
			}
		}
	}
	return out
}

// Skips says, a line each, which scenarios were skipped and which prerequisites they lacked.
func (r *Report) Skips() []string {
	var out []string
	for _, s := range r.Scenarios {
		if s.Result() == ResultSkipped {
			out = append(out, fmt.Sprintf("%s: skipped, missing %s", s.Name, strings.Join(s.Skipped, "; ")))
		}
	}
	return out
}

// Counts are how many scenarios passed, failed and were skipped.
type Counts struct{ Passed, Failed, Skipped int }

// Counts counts the scenarios by Result.
func (r *Report) Counts() Counts {
	var c Counts
	for _, s := range r.Scenarios {
		switch s.Result() {
		case ResultPass:
			c.Passed++
		case ResultSkipped:
			c.Skipped++
		default:
			c.Failed++
		}
	}
	return c
}

// String: "12 passed, 1 failed, 2 skipped (a skip is not a pass)".
func (c Counts) String() string {
	s := fmt.Sprintf("%d passed, %d failed, %d skipped", c.Passed, c.Failed, c.Skipped)
	if c.Skipped > 0 {
		s += " (a skipped scenario did not run: it is not a pass)"
	}
	return s
}

// Expect is what the scenario expects of a checker.
func (s Scenario) Expect(name checker.Name) history.Expectation {
	if want, ok := s.Expected[name]; ok {
		return want
	}
	return history.ExpectPass
}

// Report is one run of the suite on one Kubernetes version.
type Report struct {
	Title      string    `json:"title"`
	K8sVersion string    `json:"k8sVersion"`
	Quorate    string    `json:"quorate"`
	Generated  time.Time `json:"generated"`
	// Environment is what the run ran against (nil in reports of older suites).
	Environment *Environment `json:"environment,omitempty"`
	Scenarios   []Scenario   `json:"scenarios"`
}

// AddLatencies samples the latencies of successful operations for the latency picture.
func (s *Scenario) AddLatencies(h *history.History, max int) {
	s.Latencies, s.HistoryStart, s.HistoryEnd = latencies(h, max), h.Start, h.End
}

// latencies samples at most about max (call offset, latency) pairs of h's successful operations.
func latencies(h *history.History, max int) [][2]int64 {
	var ok []history.Op
	for _, o := range h.Ops {
		if o.Status == history.OK {
			ok = append(ok, o)
		}
	}
	step := 1
	if len(ok) > max {
		step = len(ok)/max + 1
	}
	var out [][2]int64
	for i := 0; i < len(ok); i += step {
		out = append(out, [2]int64{ok[i].Call - h.Start, ok[i].Return - ok[i].Call})
	}
	return out
}

// Write writes report.json, junit.xml, summary.md and index.html into dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sort.SliceStable(r.Scenarios, func(i, j int) bool { return r.Scenarios[i].Start.Before(r.Scenarios[j].Start) })
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{"report.json": b, "junit.xml": r.JUnit(), "summary.md": []byte(r.Markdown()), "index.html": []byte(HTML([]*Report{r}))}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Load reads a report.json.
func Load(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	return &r, json.Unmarshal(b, &r)
}

func mark(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// verdictCell renders a verdict against its expectation for tables.
func verdictCell(s Scenario, name checker.Name) string {
	for _, v := range s.Verdicts {
		if v.Checker != name {
			continue
		}
		want := s.Expect(name)
		switch {
		case want.Met(v) && v.Passed():
			return "pass"
		case want.Met(v):
			return "fail (expected)"
		case v.Status == history.VerdictInconclusive:
			return "INCONCLUSIVE"
		case v.Passed():
			return "PASS (expected fail)"
		case want.Status == history.VerdictFail:
			return "FAIL (" + string(v.Code) + ", expected " + string(want.Code) + ")"
		}
		return "FAIL"
	}
	return "-"
}

// Markdown is the summary.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\nKubernetes %s, Quorate %s, generated %s.\n\nScenarios: %s.\n\n", r.Title, r.K8sVersion, r.Quorate, r.Generated.UTC().Format(time.RFC3339), r.Counts())
	if r.Environment != nil {
		b.WriteString(r.Environment.markdown() + "\n")
	}
	fmt.Fprintf(&b, "| scenario | result | %s | longest write gap | ops ok/fail/unknown | p99 latency |\n|---|---|%s---|---|---|\n",
		strings.Join(checkerColumns(), " | "), strings.Repeat("---|", len(checker.Names)))
	// A row per client profile, side by side, when the run named them.
	for _, sc := range r.Scenarios {
		for _, p := range sc.Profiles() {
			s := sc.ForProfile(p)
			cells := make([]string, len(checker.Names))
			for i, c := range checker.Names {
				cells[i] = verdictCell(s, c)
			}
			if len(s.Skipped) > 0 {
				// Not run, skipped or failed for it: no figures.
				fmt.Fprintf(&b, "| %s | %s | %s | - | - | - |\n", s.Label(), s.profileResult(), strings.Join(cells, " | "))
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", s.Label(), s.profileResult(), strings.Join(cells, " | "),
				s.Stats.MaxWriteGap.Round(time.Millisecond), opsCell(s.Stats.OK, s.Stats.Fail, s.Stats.Dropped, s.Stats.Unknown), s.Stats.P99.Round(100*time.Microsecond))
		}
	}
	for _, s := range r.Scenarios {
		fmt.Fprintf(&b, "\n## %s: %s\n\n", s.Name, s.Result())
		if s.Result() == ResultSkipped {
			b.WriteString("The scenario did not run: the cluster lacks a prerequisite.\n\n")
			for _, m := range s.Skipped {
				fmt.Fprintf(&b, "- %s\n", m)
			}
			continue
		}
		if s.Error != "" {
			fmt.Fprintf(&b, "The scenario did not run to its end: %s\n\n", s.Error)
		}
		for i, p := range s.Profiles() {
			ps := s.ForProfile(p)
			if s.profiled() {
				if i > 0 {
					b.WriteString("\n")
				}
				fmt.Fprintf(&b, "### Client profile %s: %s\n\n", ps.Profile, mark(ps.profilePassed()))
			}
			markdownVerdicts(&b, ps)
		}
		if len(s.Events) > 0 {
			b.WriteString("\nEvents:\n\n")
			for _, e := range s.Events {
				fmt.Fprintf(&b, "- %s %s %s: %s\n", offset(s, e.Time), e.Kind, e.Name, e.Text)
			}
		}
	}
	return b.String()
}

// markdownVerdicts writes the scenario's (first profile's) verdicts and longest write gaps.
func markdownVerdicts(b *strings.Builder, s Scenario) {
	for _, v := range s.Verdicts {
		fmt.Fprintf(b, "- **%s** %s: %s\n", v.Checker, verdictCell(s, v.Checker), v.Reason)
		for _, d := range v.Details {
			fmt.Fprintf(b, "  - %s\n", d)
		}
	}
	if len(s.Stats.Gaps.Longest) > 0 {
		b.WriteString("\nLongest times without an acknowledged write:")
		for _, g := range s.Stats.Gaps.Longest {
			fmt.Fprintf(b, " %s (%s)", g.Length().Round(10*time.Microsecond), offsetMs(s, g.From))
		}
		b.WriteString("\n")
	}
}

func offset(s Scenario, t int64) string {
	if s.HistoryStart == 0 {
		return ""
	}
	return fmt.Sprintf("+%.1fs", time.Duration(t-s.HistoryStart).Seconds())
}

// checkerColumns are the checkers' names as column headings, in report order.
func checkerColumns() []string {
	out := make([]string, len(checker.Names))
	for i, c := range checker.Names {
		out[i] = string(c)
	}
	return out
}
