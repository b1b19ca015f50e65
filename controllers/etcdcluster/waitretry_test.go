package etcdcluster

import (
	"slices"
	"testing"
	"time"
)

// A waiting pass looks again every 5 s, or at the moment the planner knows its wait ends.
func TestWaitRetry(t *testing.T) {
	for _, c := range []struct{ known, want time.Duration }{
		{0, 5 * time.Second},
		{-time.Second, 5 * time.Second},
		{1200 * time.Millisecond, 1200 * time.Millisecond},
		{5 * time.Second, 5 * time.Second},
		{time.Minute, 5 * time.Second},
	} {
		if got := waitRetry(c.known); got != c.want {
			t.Errorf("waitRetry(%s) = %s, want %s", c.known, got, c.want)
		}
	}
}

// A removal the quorum probe refuses is probed again after 2 s, then 4, 8, 16, and every 30 s.
func TestRemovalRetry(t *testing.T) {
	var got []time.Duration
	for n := range 8 {
		got = append(got, removalRetry(n))
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("removalRetry(0..7) = %v, want %v", got, want)
	}
}
