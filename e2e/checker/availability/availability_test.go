package availability

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/history"
)

const sec = int64(time.Second)

// steady returns ok puts every 100ms from 0 to end seconds, except in [gapFrom, gapTo).
func steady(end, gapFrom, gapTo int64) *history.History {
	h := &history.History{Start: 0, End: end * sec}
	for t := int64(0); t < end*sec; t += sec / 10 {
		st := history.OK
		if t >= gapFrom*sec && t < gapTo*sec {
			st = history.Unknown
		}
		h.Ops = append(h.Ops, history.Op{Type: history.Put, Call: t, Return: t + sec/100, Status: st, Value: "v"})
	}
	return h
}

func TestCheck(t *testing.T) {
	budget := Budget{MaxWriteGap: 2 * time.Second, MinSuccessRatio: 0.9}
	v, s := Check(steady(30, 0, 0), budget)
	if v.Status != history.VerdictPass || v.Code != CodeWithinBudget || s.OK != 300 || s.MaxWriteGap > 200*time.Millisecond || len(s.Windows) != 31 {
		t.Fatalf("steady history: %v %+v", v, s)
	}
	if s.P50 != 10*time.Millisecond {
		t.Errorf("p50 = %s", s.P50)
	}

	v, s = Check(steady(30, 10, 15), budget)
	if v.Status != history.VerdictFail || v.Code != CodeWriteGap || !strings.Contains(v.Reason, "no write was acknowledged for 5.") || !strings.Contains(v.Reason, "from 9.9s") {
		t.Fatalf("a 5s outage passed or was misreported: %v", v)
	}
	if s.Windows[12].Unknown != 10 || s.Windows[12].OK != 0 {
		t.Errorf("window 12 = %+v", s.Windows[12])
	}

	// An outage at the end counts until the end of the run.
	v, _ = Check(steady(30, 27, 30), budget)
	if v.Status != history.VerdictFail || v.Code != CodeWriteGap {
		t.Fatalf("an outage at the end passed: %v", v)
	}

	v, _ = Check(steady(30, 0, 0), Budget{MaxWriteGap: time.Hour, MinSuccessRatio: 1.01})
	if v.Status != history.VerdictFail || v.Code != CodeSuccessRatio {
		t.Fatalf("success ratio budget not enforced: %v", v)
	}
	v, _ = Check(&history.History{Start: 0, End: sec}, budget)
	if v.Status != history.VerdictFail || v.Code != CodeNoOperations {
		t.Fatal("an empty history passed")
	}
}

// The time before the first acknowledged write is reported and judged on its own, not as a
// write gap; a run in which nothing was ever acknowledged is still one gap over its length.
func TestFirstWrite(t *testing.T) {
	budget := Budget{MaxWriteGap: 2 * time.Second, MinSuccessRatio: 0.8, MaxFirstWrite: 5 * time.Second}
	v, s := Check(steady(30, 0, 3), budget) // first ack returns at 3.01s
	if !v.Passed() {
		t.Fatalf("a 3s start within a 5s first-write budget failed: %v", v)
	}
	if s.FirstWrite != 3010*time.Millisecond || s.MaxWriteGap != 100*time.Millisecond {
		t.Fatalf("first write %s, longest gap %s; want 3.01s and 100ms", s.FirstWrite, s.MaxWriteGap)
	}
	if !strings.Contains(strings.Join(v.Details, "\n"), "first acknowledged write after 3.01s") {
		t.Errorf("details do not report the first write: %q", v.Details)
	}

	v, s = Check(steady(30, 0, 8), budget)
	if v.Status != history.VerdictFail || v.Code != CodeFirstWrite || !strings.Contains(v.Reason, "the first write was acknowledged 8.01s after the load started, over the budget of 5s") {
		t.Fatalf("an 8s start passed or was misreported: %v", v)
	}
	if s.MaxWriteGap > time.Second {
		t.Errorf("the start was counted as a write gap: %s", s.MaxWriteGap)
	}

	v, _ = Check(steady(30, 10, 15), Budget{MaxWriteGap: 2 * time.Second, MaxFirstWrite: 5 * time.Second})
	if v.Status != history.VerdictFail || v.Code != CodeWriteGap || strings.Contains(v.Reason, "first write") {
		t.Fatalf("an outage in the middle was blamed on the start: %v", v)
	}
	h := steady(30, 0, 8)
	for i := range h.Ops {
		if h.Ops[i].Call >= 20*sec {
			h.Ops[i].Status = history.Unknown
		}
	}
	// Both broken: a slow start and an outage later are both named.
	v, _ = Check(h, Budget{MaxWriteGap: 2 * time.Second, MaxFirstWrite: 5 * time.Second})
	if v.Status != history.VerdictFail || v.Code != CodeWriteGap || !strings.Contains(v.Reason, "first write") || !strings.Contains(v.Reason, "no write was acknowledged for") {
		t.Fatalf("want both the slow start and the outage named: %v", v)
	}

	// Nothing acknowledged at all: the whole run is the gap and the first write never came.
	v, s = Check(steady(10, 0, 10), budget)
	if v.Passed() || s.MaxWriteGap != 10*time.Second || s.FirstWrite != 10*time.Second {
		t.Fatalf("a run without an acknowledged write: %v %+v", v, s)
	}
}

// The distribution counts every interval between acknowledged writes, at nanosecond
// resolution, and keeps the longest with their times.
func TestGaps(t *testing.T) {
	ms := int64(time.Millisecond)
	h := &history.History{Start: 0, End: 1000 * ms}
	// Writes acknowledged every 5 ms, except a 30 ms and a 120 ms stall, and a failed write.
	var acks []int64
	for t := int64(0); t <= 1000*ms; t += 5 * ms {
		if (t > 100*ms && t < 130*ms) || (t > 500*ms && t < 620*ms) {
			continue
		}
		acks = append(acks, t)
	}
	for _, a := range acks {
		h.Ops = append(h.Ops, history.Op{Type: history.Put, Call: a - ms, Return: a, Status: history.OK, Value: "v"})
	}
	h.Ops = append(h.Ops, history.Op{Type: history.Put, Call: 510 * ms, Return: 600 * ms, Status: history.Unknown, Value: "u"})
	_, s := Check(h, Budget{MaxWriteGap: time.Second})
	want := Gaps{
		Count: len(acks), // the intervals between acks, and the last ack to the end of the run
		// 173 intervals: the 99th percentile is the second longest, the 99.9th the longest.
		P50: 5 * time.Millisecond, P99: 30 * time.Millisecond, P999: 120 * time.Millisecond,
		Over:    []int{2, 2, 1, 1, 0, 0, 0, 0, 0},
		Longest: []Gap{{From: 500 * ms, To: 620 * ms}, {From: 100 * ms, To: 130 * ms}},
	}
	for len(want.Longest) < 10 {
		// The rest are 5 ms intervals; which ones is the sort's business.
		want.Longest = append(want.Longest, s.Gaps.Longest[len(want.Longest)])
	}
	// acks ends at 1000 ms = End: the last interval is empty.
	if !reflect.DeepEqual(s.Gaps, want) {
		t.Fatalf("gaps:\n got %+v\nwant %+v", s.Gaps, want)
	}
	for _, g := range s.Gaps.Longest[2:] {
		if g.Length() != 5*time.Millisecond {
			t.Errorf("a 5 ms interval expected after the two stalls, got %+v", g)
		}
	}
	if got := s.Gaps.Summary(); got != "time between acknowledged writes (173 intervals): p50 5ms, p99 30ms, p99.9 120ms; 2 over 10ms, 2 over 25ms, 1 over 50ms, 1 over 100ms" {
		t.Errorf("summary: %s", got)
	}
}

// Writes raft dropped at a leadership transfer are failures, counted apart too; other failed
// operations (a read, a write refused for another cause) are not among them.
func TestDroppedWritesAreCountedApart(t *testing.T) {
	h := steady(2, 0, 0)
	for i, o := range []history.Op{
		{Type: history.Put, Status: history.Fail, Error: "rpc error: code = Unknown desc = " + history.ProposalDropped},
		{Type: history.CAS, Status: history.Fail, Error: "rpc error: code = Unknown desc = " + history.ProposalDropped},
		{Type: history.Get, Status: history.Fail, Error: "rpc error: code = Unknown desc = " + history.ProposalDropped},
		{Type: history.Put, Status: history.Fail, Error: "etcdserver: no leader"},
		{Type: history.Put, Status: history.Unknown, Error: "context deadline exceeded"},
	} {
		o.Call, o.Return = int64(i)*sec/10, int64(i)*sec/10+sec/100
		h.Ops = append(h.Ops, o)
	}
	s := Analyze(h, time.Second)
	if got := [4]int{s.OK, s.Fail, s.Dropped, s.Unknown}; got != [4]int{20, 4, 2, 1} {
		t.Fatalf("ok, failed, dropped, unknown = %v, want [20 4 2 1]", got)
	}
}
