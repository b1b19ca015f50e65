package availability

import (
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
	if !v.Pass || s.OK != 300 || s.MaxWriteGap > 200*time.Millisecond || len(s.Windows) != 31 {
		t.Fatalf("steady history: %v %+v", v, s)
	}
	if s.P50 != 10*time.Millisecond {
		t.Errorf("p50 = %s", s.P50)
	}

	v, s = Check(steady(30, 10, 15), budget)
	if v.Pass || !strings.Contains(v.Reason, "no write was acknowledged for 5.") || !strings.Contains(v.Reason, "from 9.9s") {
		t.Fatalf("a 5s outage passed or was misreported: %v", v)
	}
	if s.Windows[12].Unknown != 10 || s.Windows[12].OK != 0 {
		t.Errorf("window 12 = %+v", s.Windows[12])
	}

	// An outage at the end counts until the end of the run.
	v, _ = Check(steady(30, 27, 30), budget)
	if v.Pass {
		t.Fatalf("an outage at the end passed: %v", v)
	}

	v, _ = Check(steady(30, 0, 0), Budget{MaxWriteGap: time.Hour, MinSuccessRatio: 1.01})
	if v.Pass || !strings.Contains(v.Reason, "under the budget") {
		t.Fatalf("success ratio budget not enforced: %v", v)
	}
	v, _ = Check(&history.History{Start: 0, End: sec}, budget)
	if v.Pass {
		t.Fatal("an empty history passed")
	}
}
