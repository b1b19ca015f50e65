package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/e2e/report"
)

// Run is one campaign run as a report recorded it.
type Run struct {
	Kubernetes string
	Report     string
	Scenario   report.Scenario
}

// outcome is what a run showed, over every client profile.
type outcome struct {
	ran, passed, error                     bool
	lost, linear, split, inconclusive, gap bool
	operations                             int
	longest                                time.Duration
	why                                    []string
}

func judge(r Run) outcome {
	s := r.Scenario
	o := outcome{ran: s.Result() != report.ResultSkipped, passed: s.Result() == report.ResultPass, error: s.Error != ""}
	if s.Error != "" {
		o.why = append(o.why, oneLine(s.Error, 200))
	}
	if !o.ran {
		return o
	}
	for _, p := range s.Profiles() {
		ps := s.ForProfile(p)
		o.operations += ps.Stats.Total
		o.longest = max(o.longest, ps.Stats.MaxWriteGap)
		for _, v := range ps.Verdicts {
			if v.Status == history.VerdictInconclusive {
				o.inconclusive = true
			}
			if ps.Expect(v.Checker).Met(v) {
				continue
			}
			o.why = append(o.why, fmt.Sprintf("%s %s %s [%s]", ps.Label(), v.Checker, v.Status, v.Code))
			if v.Status != history.VerdictFail {
				continue
			}
			switch v.Checker {
			case checker.LostWrites:
				o.lost = true
			case checker.Linearizability:
				o.linear = true
			case checker.SplitBrain:
				o.split = true
			case checker.Availability:
				o.gap = true
			}
		}
	}
	return o
}

// Table is the Markdown of the campaign: a summary per Kubernetes version, what the runs
// drew, and every run that did not pass with the command that replays it.
func Table(runs []Run) string {
	var b strings.Builder
	b.WriteString("# Randomized campaign\n\n")
	b.WriteString("Written by `go run ./hack/campaign table` from the reports of `make campaign` (docs/conformance.md, \"The randomized campaign\"). ")
	b.WriteString("Each run draws an operation, a fault and the moment the fault starts from its seed and index, and runs them on a cluster of 3 members (5 for a roll or an upgrade) under the workload; every checker judges it. ")
	b.WriteString("A run counts once however many client profiles it had, by its newest report when it was replayed; a skipped run (a prerequisite missing) is counted apart and in nothing else, and the write gaps are of the runs that reached their end.\n\n")

	byVersion := map[string][]Run{}
	for _, r := range runs {
		byVersion[r.Kubernetes] = append(byVersion[r.Kubernetes], r)
	}
	versions := make([]string, 0, len(byVersion))
	for v := range byVersion {
		versions = append(versions, v)
	}
	sort.Strings(versions)

	b.WriteString("| Kubernetes | runs | passed | skipped | stopped before the end | operations | runs that lost an acknowledged write | linearizability violations | split brains | inconclusive | over the availability budget | longest write gap, fault class (max / median) | partition class (max / median) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range versions {
		var ran, passed, skipped, stopped, ops, lost, linear, split, inconclusive, gap int
		gaps := map[string][]time.Duration{}
		for _, r := range byVersion[v] {
			o := judge(r)
			if !o.ran {
				skipped++
				continue
			}
			ran++
			ops += o.operations
			passed += b2i(o.passed)
			stopped += b2i(o.error)
			lost += b2i(o.lost)
			linear += b2i(o.linear)
			split += b2i(o.split)
			inconclusive += b2i(o.inconclusive)
			gap += b2i(o.gap)
			if !o.error {
				// A run stopped by a failed step has no gap of the whole operation.
				gaps[r.Scenario.Class] = append(gaps[r.Scenario.Class], o.longest)
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s |\n", v, ran, passed, skipped, stopped, ops, lost, linear, split, inconclusive, gap,
			spread(gaps["fault"]), spread(gaps["partition"]))
	}

	b.WriteString("\n## What the runs drew\n\n| Kubernetes | operation | runs | passed |\n|---|---|---|---|\n")
	drawn(&b, versions, byVersion, label.Operation)
	b.WriteString("\n| Kubernetes | fault | runs | passed |\n|---|---|---|---|\n")
	drawn(&b, versions, byVersion, label.Fault)

	b.WriteString("\n## Runs that did not pass\n\n")
	var failed int
	for _, v := range versions {
		for _, r := range byVersion[v] {
			o := judge(r)
			if !o.ran || o.passed {
				continue
			}
			if failed == 0 {
				b.WriteString("| Kubernetes | run | operation | fault, moment | why | replay |\n|---|---|---|---|---|---|\n")
			}
			failed++
			l := r.Scenario.Labels
			// A run whose fault needs something of the nodes (netem) is left out by make
			// campaign's default CHAOS_SKIP_LABELS: its replay asks for it.
			skip := ""
			if l[label.Needs] != "" {
				skip = " CHAOS_SKIP_LABELS="
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s at %s | %s | `make campaign K8S_VERSION=%s SEED=%s FROM=%s RUNS=1 CAMPAIGN_OPERATIONS=%s CAMPAIGN_FAULTS=%s%s` |\n", v, r.Scenario.Name, l[label.Operation], l[label.Fault], l[label.Moment],
				cell(strings.Join(o.why, "; ")), v, l[label.Seed], l[label.Run], l[label.DrawOperations], l[label.DrawFaults], skip)
		}
	}
	if failed == 0 {
		b.WriteString("None.\n")
	}
	return b.String()
}

// drawn writes, per version, how many runs drew each value of the label key, and how many of
// them passed.
func drawn(b *strings.Builder, versions []string, byVersion map[string][]Run, key string) {
	for _, v := range versions {
		count, passed := map[string]int{}, map[string]int{}
		for _, r := range byVersion[v] {
			o := judge(r)
			if !o.ran {
				continue
			}
			count[r.Scenario.Labels[key]]++
			passed[r.Scenario.Labels[key]] += b2i(o.passed)
		}
		var values []string
		for k := range count {
			values = append(values, k)
		}
		sort.Strings(values)
		for _, k := range values {
			fmt.Fprintf(b, "| %s | %s | %d | %d |\n", v, k, count[k], passed[k])
		}
	}
}

// spread is "max / median" of the gaps, "–" when there are none.
func spread(gaps []time.Duration) string {
	if len(gaps) == 0 {
		return "–"
	}
	slices.Sort(gaps)
	return fmt.Sprintf("%s / %s", ms(gaps[len(gaps)-1]), ms(gaps[(len(gaps)-1)/2]))
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
