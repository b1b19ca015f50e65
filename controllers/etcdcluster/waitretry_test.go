package etcdcluster

import (
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
