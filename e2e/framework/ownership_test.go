package framework

import (
	"testing"
	"time"
)

func TestClaimsInOrder(t *testing.T) {
	start := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	wide, narrow := Identity("ops"), Identity("apps")
	moved := start.Add(90 * time.Second)
	want := []Claim{{Holder: wide}, {At: moved, Holder: narrow}}
	for _, tc := range []struct {
		name   string
		claims []Claim
		err    string
	}{
		{"in order", []Claim{{At: start, Holder: wide}, {At: moved.Add(40 * time.Second), Holder: narrow}}, ""},
		{"in the second it moved", []Claim{{At: start, Holder: wide}, {At: moved.Truncate(time.Second), Holder: narrow}}, ""},
		{"taken while the holder ran", []Claim{{At: start, Holder: wide}, {At: moved.Add(-2 * time.Second), Holder: narrow}},
			"claim 1: apps/quorate-operator at 2026-11-25T03:01:28Z, want apps/quorate-operator after 2026-11-25T03:01:30Z"},
		{"wrong holder", []Claim{{At: start, Holder: narrow}, {At: moved.Add(time.Minute), Holder: wide}},
			"claim 0: apps/quorate-operator at 2026-11-25T03:00:00Z, want ops/quorate-operator after 0001-01-01T00:00:00Z"},
		{"one claim more", []Claim{{At: start, Holder: wide}, {At: moved, Holder: narrow}, {At: moved.Add(time.Minute), Holder: wide}},
			"claims [{2026-11-25 03:00:00 +0000 UTC ops/quorate-operator} {2026-11-25 03:01:30 +0000 UTC apps/quorate-operator} {2026-11-25 03:02:30 +0000 UTC ops/quorate-operator}], want them taken by ops/quorate-operator, then apps/quorate-operator, in this order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ClaimsInOrder(tc.claims, want)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.err {
				t.Errorf("ClaimsInOrder:\n got %q\nwant %q", got, tc.err)
			}
		})
	}
}
