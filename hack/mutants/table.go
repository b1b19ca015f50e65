package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/quorate-dev/quorate/e2e/report"
	"github.com/quorate-dev/quorate/internal/mutant"
)

// Outcome of one mutant's run.
type Outcome string

const (
	// Killed: a scenario did not pass (a checker missed its expected verdict, or the scenario
	// could not run to its end).
	Killed Outcome = "killed"
	// Survived: every scenario run passed with the mutant active.
	Survived Outcome = "survived"
	// NotRun: no report: the run stopped before its scenarios (see its log), or the mutant
	// was not run. Not counted as killed.
	NotRun Outcome = "not run"
)

// Kill is one way a scenario failed under the mutant.
type Kill struct {
	Scenario string
	// Checker and Code of the verdict that missed its expectation; empty when the scenario
	// did not run to its end (Error).
	Checker, Code, Status string
	Error                 string
}

func (k Kill) String() string {
	if k.Checker == "" {
		return fmt.Sprintf("%s: did not run to its end (%s)", k.Scenario, oneLine(k.Error, 120))
	}
	return fmt.Sprintf("%s: %s %s [%s]", k.Scenario, k.Checker, k.Status, k.Code)
}

// Result is one mutant's row.
type Result struct {
	Mutant  mutant.Mutant
	Outcome Outcome
	// Ran are the scenarios the reports hold, Missing those expected but absent.
	Ran, Missing []string
	Kills        []Kill
	// Problem says why there is no result (NotRun).
	Problem string
}

// Judge reads the reports of m's run under dir/<name> (every */report.json: one per Kubernetes
// version) and decides whether a scenario killed it.
func Judge(m mutant.Mutant, dir string) Result {
	r := Result{Mutant: m}
	paths, _ := filepath.Glob(filepath.Join(dir, m.Name, "*", "report.json"))
	sort.Strings(paths)
	if len(paths) == 0 {
		r.Outcome, r.Problem = NotRun, "no report.json under "+filepath.Join(dir, m.Name)
		return r
	}
	ran := map[string]bool{}
	var skipped []string
	for _, p := range paths {
		rep, err := report.Load(p)
		if err != nil {
			r.Outcome, r.Problem = NotRun, fmt.Sprintf("%s: %v", p, err)
			return r
		}
		for _, s := range rep.Scenarios {
			if len(s.Skipped) > 0 {
				// A prerequisite was missing: the scenario did not run, so it killed nothing.
				skipped = append(skipped, s.Name+" ("+strings.Join(s.Skipped, "; ")+")")
				continue
			}
			ran[s.Name] = true
			r.Kills = append(r.Kills, kills(s)...)
		}
	}
	for n := range ran {
		r.Ran = append(r.Ran, n)
	}
	sort.Strings(r.Ran)
	for _, s := range m.Scenarios {
		if !ran[s] {
			r.Missing = append(r.Missing, s)
		}
	}
	switch {
	case len(r.Kills) > 0:
		r.Outcome = Killed
	case len(skipped) > 0:
		// Neither survived nor equivalent: a scenario that could kill it did not run.
		r.Outcome, r.Problem = NotRun, "skipped for a missing prerequisite: "+strings.Join(skipped, ", ")
	case len(r.Ran) == 0:
		r.Outcome, r.Problem = NotRun, "the reports hold no scenario"
	default:
		r.Outcome = Survived
	}
	return r
}

// kills are the ways scenario s failed, for every client profile.
func kills(s report.Scenario) []Kill {
	if s.Error != "" {
		return []Kill{{Scenario: s.Name, Error: s.Error}}
	}
	var out []Kill
	for _, p := range s.Profiles() {
		ps := s.ForProfile(p)
		if len(ps.Verdicts) == 0 {
			out = append(out, Kill{Scenario: ps.Label(), Error: "no verdict"})
		}
		for _, v := range ps.Verdicts {
			if !ps.Expect(v.Checker).Met(v) {
				out = append(out, Kill{Scenario: ps.Label(), Checker: string(v.Checker), Code: string(v.Code), Status: string(v.Status)})
			}
		}
	}
	return out
}

// Table is the Markdown of a run: one row per mutant, then the score.
func Table(results []Result) string {
	var b strings.Builder
	b.WriteString("# Mutants\n\n")
	b.WriteString("Seeded operator bugs (internal/mutant), each run against the scenarios expected to kill it " +
		"(`make mutants`; docs/conformance.md, \"Mutants\"). Killed: a scenario did not pass with the mutant active; " +
		"by: the scenario, the checker that missed its expected verdict, and the verdict's code.\n\n")
	b.WriteString("| Mutant | Bug class | Where | Result | Killed by | Scenarios run | Notes |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	killed, equivalent := 0, 0
	for _, r := range results {
		var by []string
		for _, k := range r.Kills {
			by = append(by, cell(k.String()))
		}
		var notes []string
		if r.Problem != "" {
			notes = append(notes, r.Problem)
		}
		if len(r.Missing) > 0 {
			notes = append(notes, "expected scenarios not in the report: "+strings.Join(r.Missing, ", "))
		}
		if r.Outcome == Survived {
			if r.Mutant.Equivalent != "" {
				equivalent++
				notes = append(notes, "equivalent: "+r.Mutant.Equivalent)
			} else {
				notes = append(notes, "a scenario is missing: add one that fails under this bug, then run again")
			}
		}
		if r.Outcome == Killed {
			killed++
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Mutant.Name, cell(r.Mutant.Class), cell(r.Mutant.Where), r.Outcome,
			dash(strings.Join(by, "<br>")), dash(strings.Join(r.Ran, ", ")), dash(cell(strings.Join(notes, "; "))))
	}
	fmt.Fprintf(&b, "\nMutation score: %d killed / %d mutants", killed, len(results))
	if len(results) > 0 {
		fmt.Fprintf(&b, " = %.0f%%", 100*float64(killed)/float64(len(results)))
	}
	if equivalent > 0 {
		fmt.Fprintf(&b, " (%d survivor(s) argued equivalent: %d killed / %d non-equivalent)", equivalent, killed, len(results)-equivalent)
	}
	b.WriteString(".\n")
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
