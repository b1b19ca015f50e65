// Package availability measures what clients saw: successes, failures and unknown outcomes per
// time window, the longest time without an acknowledged write, and latency percentiles, and
// judges them against a scenario's budget.
package availability

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/e2e/history"
)

// Budget is what a scenario promises clients.
type Budget struct {
	// MaxWriteGap is the longest allowed time without an acknowledged write, counted from the
	// first acknowledged write to the end of the run.
	MaxWriteGap time.Duration `json:"maxWriteGap"`
	// MaxFirstWrite is the longest allowed time from the start of the load to the first
	// acknowledged write. The workload's clients have each completed a read before the load
	// starts, so this is the cluster's answer to a ready client, not connection set-up; it is
	// judged on its own because a run that never gets going is a different failure from an
	// outage in the middle of one. Zero means not judged.
	MaxFirstWrite time.Duration `json:"maxFirstWrite,omitempty"`
	// MinSuccessRatio is the lowest allowed share of operations that succeeded.
	MinSuccessRatio float64 `json:"minSuccessRatio"`
}

// Window counts outcomes of operations invoked in [Start, Start+width).
type Window struct {
	Start   int64 `json:"start"`
	OK      int   `json:"ok"`
	Fail    int   `json:"fail"`
	Unknown int   `json:"unknown"`
}

// Stats summarises a history.
type Stats struct {
	Width         time.Duration `json:"width"`
	Windows       []Window      `json:"windows"`
	Total, OK     int
	Fail, Unknown int
	// Dropped counts the failed writes raft dropped while leadership changed (within Fail).
	Dropped          int           `json:"dropped,omitempty"`
	MaxWriteGap      time.Duration `json:"maxWriteGap"`
	GapStart, GapEnd int64
	// FirstWrite is the time from the start of the history to the first acknowledged write
	// (the whole run when no write was acknowledged).
	FirstWrite         time.Duration `json:"firstWrite"`
	P50, P90, P99, Max time.Duration
	// Gaps is the distribution of the times between consecutive acknowledged writes.
	Gaps Gaps `json:"gaps"`
}

// GapThresholds are the bounds the distribution counts gaps over: at 300 writes a second the
// time between writes is a few milliseconds, so a gap over 10 ms is already a stall.
var GapThresholds = []time.Duration{10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second}

// Gaps describes the times between consecutive acknowledged writes (from the first to the end
// of the run), at nanosecond resolution.
type Gaps struct {
	// Count of intervals.
	Count int `json:"count"`
	// P50, P99 and P999 of the intervals.
	P50  time.Duration `json:"p50"`
	P99  time.Duration `json:"p99"`
	P999 time.Duration `json:"p999"`
	// Over[i] is how many intervals exceeded GapThresholds[i].
	Over []int `json:"over"`
	// Longest are the longest intervals, longest first (at most 10).
	Longest []Gap `json:"longest,omitempty"`
}

// Gap is one interval without an acknowledged write, in Unix nanoseconds.
type Gap struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Length of the gap.
func (g Gap) Length() time.Duration { return time.Duration(g.To - g.From) }

// gapsOf computes the distribution of the intervals between the sorted times ts.
func gapsOf(ts []int64) Gaps {
	g := Gaps{Over: make([]int, len(GapThresholds))}
	if len(ts) < 2 {
		return g
	}
	all := make([]Gap, 0, len(ts)-1)
	for i := 1; i < len(ts); i++ {
		gap := Gap{From: ts[i-1], To: ts[i]}
		all = append(all, gap)
		for j, t := range GapThresholds {
			if gap.Length() > t {
				g.Over[j]++
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Length() > all[j].Length() })
	g.Count = len(all)
	at := func(p float64) time.Duration { return all[min(len(all)-1, int((1-p)*float64(len(all))))].Length() }
	g.P50, g.P99, g.P999 = at(0.50), at(0.99), at(0.999)
	g.Longest = all[:min(10, len(all))]
	return g
}

// Analyze computes the statistics of h with windows of the given width.
func Analyze(h *history.History, width time.Duration) Stats {
	s := Stats{Width: width}
	if h.End <= h.Start {
		return s
	}
	n := int((h.End-h.Start)/int64(width)) + 1
	s.Windows = make([]Window, n)
	for i := range s.Windows {
		s.Windows[i].Start = h.Start + int64(i)*int64(width)
	}
	var lat []time.Duration
	for _, o := range h.Ops {
		s.Total++
		i := int((o.Call - h.Start) / int64(width))
		if i < 0 {
			i = 0
		}
		if i >= n {
			i = n - 1
		}
		switch o.Status {
		case history.OK:
			s.OK++
			s.Windows[i].OK++
			lat = append(lat, o.Latency())
		case history.Fail:
			s.Fail++
			s.Windows[i].Fail++
			if o.DroppedByRaft() {
				s.Dropped++
			}
		default:
			s.Unknown++
			s.Windows[i].Unknown++
		}
	}
	acks := ackTimes(h)
	// Gaps are counted from the first acknowledged write; the time before it is FirstWrite.
	// Without any acknowledged write the whole run is one gap.
	prev := h.Start
	if len(acks) > 0 {
		prev = max(h.Start, acks[0])
		s.FirstWrite = time.Duration(prev - h.Start)
	} else {
		s.FirstWrite = time.Duration(h.End - h.Start)
	}
	s.GapStart, s.GapEnd = prev, prev
	if len(acks) > 0 {
		s.Gaps = gapsOf(append(acks[:len(acks):len(acks)], max(h.End, acks[len(acks)-1])))
	} else {
		s.Gaps = gapsOf(nil)
	}
	for _, t := range append(acks, h.End) {
		if gap := time.Duration(t - prev); gap > s.MaxWriteGap {
			s.MaxWriteGap, s.GapStart, s.GapEnd = gap, prev, t
		}
		if t > prev {
			prev = t
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	s.P50, s.P90, s.P99 = pct(0.50), pct(0.90), pct(0.99)
	if len(lat) > 0 {
		s.Max = lat[len(lat)-1]
	}
	return s
}

// ackTimes are the times at which h's writes were acknowledged, in order.
func ackTimes(h *history.History) []int64 {
	var acks []int64
	for _, o := range h.Ops {
		if o.Acknowledged() {
			acks = append(acks, o.Return)
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i] < acks[j] })
	return acks
}

// SuccessRatio is OK over all operations.
func (s Stats) SuccessRatio() float64 {
	if s.Total == 0 {
		return 0
	}
	return float64(s.OK) / float64(s.Total)
}

// Codes of the availability verdict; a failure carries the first broken budget's code.
// Name is the checker's name in verdicts and reports.
const Name history.CheckerName = "availability"

const (
	CodeWithinBudget history.Code = "within-budget"
	CodeNoOperations history.Code = "no-operations"
	CodeWriteGap     history.Code = "write-gap"
	CodeFirstWrite   history.Code = "first-write"
	CodeSuccessRatio history.Code = "success-ratio"
)

// Check judges h against the budget.
func Check(h *history.History, b Budget) (history.Verdict, Stats) {
	s := Analyze(h, time.Second)
	v := history.Verdict{Checker: Name}
	rel := func(t int64) string { return fmt.Sprintf("%.1fs", time.Duration(t-h.Start).Seconds()) }
	v.Details = []string{
		fmt.Sprintf("%d operations: %d ok, %d failed, %d unknown (%.2f%% ok)", s.Total, s.OK, s.Fail, s.Unknown, 100*s.SuccessRatio()),
		fmt.Sprintf("first acknowledged write after %s", s.FirstWrite.Round(time.Millisecond)),
		fmt.Sprintf("longest time without an acknowledged write: %s (from %s to %s)", s.MaxWriteGap.Round(time.Millisecond), rel(s.GapStart), rel(s.GapEnd)),
		fmt.Sprintf("latency of successful operations: p50 %s, p90 %s, p99 %s, max %s", s.P50.Round(time.Microsecond*100), s.P90.Round(time.Microsecond*100), s.P99.Round(time.Microsecond*100), s.Max.Round(time.Millisecond)),
		s.Gaps.Summary(),
	}
	var broken []string
	var codes []history.Code
	if s.Total == 0 {
		broken, codes = append(broken, "no operation was issued"), append(codes, CodeNoOperations)
	}
	if b.MaxWriteGap > 0 && s.MaxWriteGap > b.MaxWriteGap {
		codes = append(codes, CodeWriteGap)
		broken = append(broken, fmt.Sprintf("no write was acknowledged for %s (from %s to %s), over the budget of %s", s.MaxWriteGap.Round(time.Millisecond), rel(s.GapStart), rel(s.GapEnd), b.MaxWriteGap))
	}
	if b.MaxFirstWrite > 0 && s.FirstWrite > b.MaxFirstWrite {
		codes = append(codes, CodeFirstWrite)
		broken = append(broken, fmt.Sprintf("the first write was acknowledged %s after the load started, over the budget of %s: the cluster did not serve writes to ready clients", s.FirstWrite.Round(time.Millisecond), b.MaxFirstWrite))
	}
	if b.MinSuccessRatio > 0 && s.SuccessRatio() < b.MinSuccessRatio {
		codes = append(codes, CodeSuccessRatio)
		broken = append(broken, fmt.Sprintf("%.2f%% of operations succeeded, under the budget of %.2f%%", 100*s.SuccessRatio(), 100*b.MinSuccessRatio))
	}
	if len(broken) == 0 {
		v.Status, v.Code = history.VerdictPass, CodeWithinBudget
		v.Reason = fmt.Sprintf("within budget: longest write gap %s (budget %s), first write after %s, %.2f%% ok (budget %.2f%%)", s.MaxWriteGap.Round(time.Millisecond), b.MaxWriteGap, s.FirstWrite.Round(time.Millisecond), 100*s.SuccessRatio(), 100*b.MinSuccessRatio)
		return v, s
	}
	v.Status, v.Code = history.VerdictFail, codes[0]
	v.Reason = strings.Join(broken, "; ")
	return v, s
}

// Summary describes the distribution in one line.
func (g Gaps) Summary() string {
	if g.Count == 0 {
		return "time between acknowledged writes: fewer than two writes"
	}
	var over []string
	for i, t := range GapThresholds {
		if g.Over[i] > 0 {
			over = append(over, fmt.Sprintf("%d over %s", g.Over[i], t))
		}
	}
	if len(over) == 0 {
		over = []string{"none over " + GapThresholds[0].String()}
	}
	return fmt.Sprintf("time between acknowledged writes (%d intervals): p50 %s, p99 %s, p99.9 %s; %s",
		g.Count, g.P50.Round(10*time.Microsecond), g.P99.Round(10*time.Microsecond), g.P999.Round(10*time.Microsecond), strings.Join(over, ", "))
}
