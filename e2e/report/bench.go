package report

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// BenchRun is one run of a benchmark scenario.
type BenchRun struct {
	Name       string        `json:"name"`
	LongestGap time.Duration `json:"longestGap"`
	OK         int           `json:"ok"`
	Failed     int           `json:"failed"`
	Unknown    int           `json:"unknown"`
	Passed     bool          `json:"passed"`
}

// Clean: no operation failed or ended unknown.
func (b BenchRun) Clean() bool { return b.Failed == 0 && b.Unknown == 0 }

// BenchSummary is the distribution of one benchmark over its runs.
type BenchSummary struct {
	Base string `json:"base"`
	// Operator is the operator the runs drove (label operator; "quorate" when unlabelled).
	Operator string     `json:"operator"`
	Runs     []BenchRun `json:"runs"`
	// Median, P95 (nearest rank) and Max of the runs' longest write gaps.
	Median, P95, Max time.Duration
	// Within50ms and Within100ms count the runs whose longest gap stayed within the bound;
	// NoFailed the runs without a failed operation; Clean the runs without a failed or
	// unknown one; Passed the runs whose every checker reached its expected verdict.
	Within50ms, Within100ms, NoFailed, Clean, Passed int
}

// Bench summarises the benchmark scenarios (label suite=bench) of a report, per base label
// and operator: by base, Quorate first, then the other operators by name.
func Bench(r *Report) []BenchSummary {
	type key struct{ base, operator string }
	by := map[key]*BenchSummary{}
	var keys []key
	for _, s := range r.Scenarios {
		if s.Labels["suite"] != "bench" {
			continue
		}
		k := key{s.Labels["base"], s.Labels["operator"]}
		if k.operator == "" {
			k.operator = "quorate"
		}
		if by[k] == nil {
			by[k] = &BenchSummary{Base: k.base, Operator: k.operator}
			keys = append(keys, k)
		}
		by[k].Runs = append(by[k].Runs, BenchRun{Name: s.Name, LongestGap: s.Stats.MaxWriteGap, OK: s.Stats.OK,
			Failed: s.Stats.Fail, Unknown: s.Stats.Unknown, Passed: s.Passed() && s.Error == ""})
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.base != b.base {
			return a.base < b.base
		}
		if (a.operator == "quorate") != (b.operator == "quorate") {
			return a.operator == "quorate"
		}
		return a.operator < b.operator
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
			if run.Clean() {
				sum.Clean++
			}
			if run.Passed {
				sum.Passed++
			}
		}
		sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
		n := len(gaps)
		if n%2 == 1 {
			sum.Median = gaps[n/2]
		} else {
			sum.Median = (gaps[n/2-1] + gaps[n/2]) / 2
		}
		sum.P95 = gaps[min(n-1, (95*n+99)/100-1)]
		sum.Max = gaps[n-1]
		out = append(out, *sum)
	}
	return out
}

// BenchMarkdown renders the summaries: one line per benchmark, then each run.
func BenchMarkdown(r *Report, sums []BenchSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\nKubernetes %s, Quorate %s, generated %s.\n\n", r.K8sVersion, r.Quorate, r.Generated.UTC().Format(time.RFC3339))
	b.WriteString("| benchmark | operator | runs | longest write gap: median | p95 | max | runs ≤ 50 ms | runs ≤ 100 ms | runs without a failed operation | runs without a failed or unknown operation | runs passed |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range sums {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %d | %d | %d | %d | %d |\n", s.Base, s.Operator, len(s.Runs), ms(s.Median), ms(s.P95), ms(s.Max), s.Within50ms, s.Within100ms, s.NoFailed, s.Clean, s.Passed)
	}
	for _, s := range sums {
		fmt.Fprintf(&b, "\n## %s, %s\n\n| run | longest write gap | ops ok/failed/unknown | passed |\n|---|---|---|---|\n", s.Base, s.Operator)
		for _, run := range s.Runs {
			fmt.Fprintf(&b, "| %s | %s | %d/%d/%d | %s |\n", run.Name, ms(run.LongestGap), run.OK, run.Failed, run.Unknown, mark(run.Passed))
		}
	}
	return b.String()
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
		if s.Labels["suite"] != "bench-rate" {
			continue
		}
		row := RateRow{Rate: s.Labels["rate"], OKRatio: s.Stats.SuccessRatio(), P50: s.Stats.P50, P99: s.Stats.P99, Gap: s.Stats.MaxWriteGap, Passed: s.Passed()}
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
