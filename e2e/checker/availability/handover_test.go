package availability

import (
	"reflect"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/history"
)

func TestHandovers(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	put := func(ret int64) history.Op {
		return history.Op{Type: history.Put, Call: ret - ms(1), Return: ret, Status: history.OK}
	}
	sample := func(at int64, term uint64) history.Sample {
		return history.Sample{Time: at, Endpoint: "m", RaftTerm: term}
	}
	h := &history.History{Start: 0, End: ms(2000)}
	// Writes every 10 ms, except a 70 ms stall from 500 to 570 ms (the handover, seen between
	// the samples at 450 and 700 ms) and a longer 120 ms one from 1200 to 1320 ms, with no
	// leader change near it.
	for at := int64(10); at <= 1990; at += 10 {
		if (at > 500 && at < 570) || (at > 1200 && at < 1320) {
			continue
		}
		h.Ops = append(h.Ops, put(ms(at)))
	}
	// A failed write and an unknown one are not acknowledgements.
	h.Ops = append(h.Ops, history.Op{Type: history.Put, Call: ms(520), Return: ms(521), Status: history.Fail},
		history.Op{Type: history.Put, Call: ms(530), Status: history.Unknown})
	h.Samples = []history.Sample{
		sample(ms(200), 2), sample(ms(450), 2),
		{Time: ms(600), Endpoint: "m", Error: "context deadline exceeded"},
		sample(ms(700), 3),
		// A member behind (a lower term) and the same term again are no handover.
		sample(ms(800), 2), sample(ms(900), 3),
		// A second handover with writes flowing: its gap is the 10 ms spacing.
		sample(ms(1600), 3), sample(ms(1700), 4),
	}
	got := Handovers(h)
	want := []Handover{
		{Term: 3, From: ms(450), To: ms(700), Gap: 70 * time.Millisecond},
		{Term: 4, From: ms(1600), To: ms(1700), Gap: 10 * time.Millisecond},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("handovers\n got %+v\nwant %+v", got, want)
	}
	// The whole run's longest gap is the other one: the two measures differ.
	if s := Analyze(h, time.Second); s.MaxWriteGap != 120*time.Millisecond {
		t.Fatalf("longest gap %v, want 120ms", s.MaxWriteGap)
	}
	if got := Handovers(&history.History{Samples: []history.Sample{sample(1, 5)}}); got != nil {
		t.Fatalf("one term only: %+v", got)
	}
}
