package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/label"
)

// BenchRun is one run of a benchmark scenario.
type BenchRun struct {
	Name       string        `json:"name"`
	LongestGap time.Duration `json:"longestGap"`
	// HandoverGap is the longest gap at a change of leader (availability.Handovers), when
	// WithHandovers found one; History is the run's history file.
	HandoverGap time.Duration `json:"handoverGap,omitempty"`
	Handovers   int           `json:"handovers,omitempty"`
	History     string        `json:"history,omitempty"`
	OK          int           `json:"ok"`
	Failed      int           `json:"failed"`
	// Dropped of the Failed are writes raft dropped while leadership changed.
	Dropped int  `json:"dropped,omitempty"`
	Unknown int  `json:"unknown"`
	Passed  bool `json:"passed"`
}

// Clean: no operation failed or ended unknown.
func (b BenchRun) Clean() bool { return b.Failed == 0 && b.Unknown == 0 }

// BenchSummary is the distribution of one benchmark over its runs.
type BenchSummary struct {
	Base string `json:"base"`
	// Operator is the operator the runs drove (label operator; "quorate" when unlabelled).
	Operator string `json:"operator"`
	// Profile is the workload's client profile the runs measured, when the run named its
	// profiles (--client-profiles); each profile has its own summary.
	Profile string     `json:"profile,omitempty"`
	Runs    []BenchRun `json:"runs"`
	// Median, P95 (nearest rank) and Max of the runs' longest write gaps.
	Median, P95, Max time.Duration
	// Within50ms and Within100ms count the runs whose longest gap stayed within the bound;
	// NoFailed the runs without a failed operation; Clean the runs without a failed or
	// unknown one; Passed the runs whose every checker reached its expected verdict.
	Within50ms, Within100ms, NoFailed, Clean, Passed int
	// OnlyDropped counts the runs whose failed operations were all writes raft dropped at a
	// leadership change (and that had some); a transfer the operator asked for, or an election.
	OnlyDropped int
	// HandoverMedian and HandoverMax are the distribution of the runs' longest gaps at a
	// change of leader, over the HandoverRuns runs that had one (WithHandovers).
	HandoverMedian, HandoverMax time.Duration
	HandoverRuns                int
}

// Bench summarises the benchmark scenarios (label suite=bench) of a report, per base label,
// operator and client profile: by base, Quorate first, then the other operators by name, each
// operator's profiles in the order the run named them.
func Bench(r *Report) []BenchSummary {
	type key struct{ base, operator, profile string }
	by := map[key]*BenchSummary{}
	var keys []key
	profileOrder := map[string]int{}
	for _, sc := range r.Scenarios {
		if sc.Labels[label.Suite] != label.SuiteBench {
			continue
		}
		for _, p := range sc.Profiles() {
			s := sc.ForProfile(p)
			if _, ok := profileOrder[s.Profile]; !ok {
				profileOrder[s.Profile] = len(profileOrder)
			}
			k := key{s.Labels[label.Base], s.Labels[label.Operator], s.Profile}
			if k.operator == "" {
				k.operator = "quorate"
			}
			if by[k] == nil {
				by[k] = &BenchSummary{Base: k.base, Operator: k.operator, Profile: k.profile}
				keys = append(keys, k)
			}
			by[k].Runs = append(by[k].Runs, BenchRun{Name: s.Name, LongestGap: s.Stats.MaxWriteGap, OK: s.Stats.OK,
				Failed: s.Stats.Fail, Dropped: s.Stats.Dropped, Unknown: s.Stats.Unknown, Passed: s.profilePassed(), History: s.History})
		}
	}
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.base != b.base {
			return a.base < b.base
		}
		if a.operator != b.operator {
			if (a.operator == "quorate") != (b.operator == "quorate") {
				return a.operator == "quorate"
			}
			return a.operator < b.operator
		}
		return profileOrder[a.profile] < profileOrder[b.profile]
	})
	out := make([]BenchSummary, 0, len(keys))
	for _, k := range keys {
		sum := by[k]
		gaps := make([]time.Duration, 0, len(sum.Runs))
		for _, run := range sum.Runs {
			gaps = append(gaps, run.LongestGap)
			if run.LongestGap <= 50*time.Millisecond {
				sum.Within50ms++
			}
			if run.LongestGap <= 100*time.Millisecond {
				sum.Within100ms++
			}
			if run.Failed == 0 {
				sum.NoFailed++
			}
			if run.Failed > 0 && run.Failed == run.Dropped {
				sum.OnlyDropped++
			}
			if run.Clean() {
				sum.Clean++
			}
			if run.Passed {
				sum.Passed++
			}
		}
		sum.Median, sum.P95, sum.Max = distribution(gaps)
		out = append(out, *sum)
	}
	return out
}

// distribution is the median, p95 (nearest rank) and maximum of ds (zeros when empty).
func distribution(ds []time.Duration) (median, p95, maximum time.Duration) {
	n := len(ds)
	if n == 0 {
		return 0, 0, 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	if n%2 == 1 {
		median = ds[n/2]
	} else {
		median = (ds[n/2-1] + ds[n/2]) / 2
	}
	return median, ds[min(n-1, (95*n+99)/100-1)], ds[n-1]
}

// WithHandovers adds to each run the longest write gap at a change of leader, from its
// history file (load reads one by name), and to each summary the distribution of those gaps
// over the runs that had a handover: what moving leadership cost, apart from the rest of
// the run.
func WithHandovers(sums []BenchSummary, load func(file string) (*history.History, error)) error {
	for i := range sums {
		var gaps []time.Duration
		for j := range sums[i].Runs {
			run := &sums[i].Runs[j]
			if run.History == "" {
				continue
			}
			h, err := load(run.History)
			if err != nil {
				return err
			}
			hs := availability.Handovers(h)
			run.Handovers = len(hs)
			for _, ho := range hs {
				run.HandoverGap = max(run.HandoverGap, ho.Gap)
			}
			if len(hs) > 0 {
				gaps = append(gaps, run.HandoverGap)
			}
		}
		sums[i].HandoverRuns = len(gaps)
		sums[i].HandoverMedian, _, sums[i].HandoverMax = distribution(gaps)
	}
	return nil
}

// BenchMarkdown renders the summaries: one line per benchmark, then each run.
func BenchMarkdown(r *Report, sums []BenchSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\nKubernetes %s, Quorate %s, generated %s.\n\n", r.K8sVersion, r.Quorate, r.Generated.UTC().Format(time.RFC3339))
	b.WriteString("| benchmark | operator | runs | longest write gap: median | p95 | max | runs ≤ 50 ms | runs ≤ 100 ms | runs without a failed operation | runs whose only failed operations raft dropped | runs without a failed or unknown operation | runs passed | gap at the leader handover: median | max |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range sums {
		hmed, hmax := "—", "—"
		if s.HandoverRuns > 0 {
			hmed, hmax = fmt.Sprintf("%s (%d runs)", ms(s.HandoverMedian), s.HandoverRuns), ms(s.HandoverMax)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %d | %d | %d | %d | %d | %d | %s | %s |\n", s.Base, s.operatorLabel(), len(s.Runs), ms(s.Median), ms(s.P95), ms(s.Max),
			s.Within50ms, s.Within100ms, s.NoFailed, s.OnlyDropped, s.Clean, s.Passed, hmed, hmax)
	}
	for _, s := range sums {
		fmt.Fprintf(&b, "\n## %s, %s\n\n| run | longest write gap | leader handovers: longest gap at one | ops ok/failed/unknown | passed |\n|---|---|---|---|---|\n", s.Base, s.operatorLabel())
		for _, run := range s.Runs {
			ho := "—"
			if run.Handovers > 0 {
				ho = fmt.Sprintf("%d: %s", run.Handovers, ms(run.HandoverGap))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", run.Name, ms(run.LongestGap), ho, opsCell(run.OK, run.Failed, run.Dropped, run.Unknown), mark(run.Passed))
		}
	}
	b.WriteString("\nThe gap at a leader handover is the longest time without an acknowledged write around a change of raft term the split-brain poller saw (between its last sample of the old term and its first of the new, 250 ms apart per member): what moving leadership cost, apart from the rest of the run.\n")
	return b.String()
}

// operatorLabel is the operator, with the client profile when the run named one:
// "quorate, service-only client".
func (b BenchSummary) operatorLabel() string {
	if b.Profile == "" {
		return b.Operator
	}
	return b.Operator + ", " + b.Profile + " client"
}

func ms(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }

// RateRow is one run of the rate benchmark.
type RateRow struct {
	Rate     string  `json:"rate"`     // asked for, operations per second
	Achieved float64 `json:"achieved"` // operations issued per second of the run
	OKRatio  float64 `json:"okRatio"`
	P50, P99 time.Duration
	Gap      time.Duration
	Passed   bool
}

// Rates tabulates the rate benchmark (label suite=bench-rate) of a report.
func Rates(r *Report) []RateRow {
	var out []RateRow
	for _, s := range r.Scenarios {
		if s.Labels[label.Suite] != label.SuiteBenchRate {
			continue
		}
		row := RateRow{Rate: s.Labels[label.Rate], OKRatio: s.Stats.SuccessRatio(), P50: s.Stats.P50, P99: s.Stats.P99, Gap: s.Stats.MaxWriteGap, Passed: s.Passed()}
		if span := time.Duration(s.HistoryEnd - s.HistoryStart); span > 0 {
			row.Achieved = float64(s.Stats.Total) / span.Seconds()
		}
		out = append(out, row)
	}
	return out
}

// RatesMarkdown renders the rate benchmark.
func RatesMarkdown(rows []RateRow) string {
	var b strings.Builder
	b.WriteString("\n## Rate a 3-member cluster sustains on this machine (open loop)\n\n| asked ops/s | issued ops/s | ok | latency p50 | p99 | longest write gap | passed |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.0f | %.3f%% | %s | %s | %s | %s |\n", r.Rate, r.Achieved, 100*r.OKRatio, ms(r.P50), ms(r.P99), ms(r.Gap), mark(r.Passed))
	}
	return b.String()
}

// opsCell is "ok/failed/unknown", the failed naming how many raft dropped when it dropped any.
func opsCell(ok, failed, dropped, unknown int) string {
	if dropped > 0 {
		return fmt.Sprintf("%d/%d (%d raft-dropped)/%d", ok, failed, dropped, unknown)
	}
	return fmt.Sprintf("%d/%d/%d", ok, failed, unknown)
}
