package etcdcluster

import (
	"testing"
	"time"

	"github.com/quorate-dev/quorate/controllers/ownership"
)

// The sooner requeue wins; one that asks for no pass gives way; of two as soon, the first.
func TestRequeueMerge(t *testing.T) {
	none := requeue{}
	soon := requeue{after: time.Second, reason: "soon"}
	later := requeue{after: 30 * time.Second, reason: "later"}
	also := requeue{after: time.Second, reason: "also soon"}
	for _, tc := range []struct {
		name string
		q, o requeue
		want requeue
	}{
		{"sooner second", later, soon, soon},
		{"sooner first", soon, later, soon},
		{"none first", none, later, later},
		{"none second", later, none, later},
		{"both none", none, none, none},
		{"a tie keeps the first", soon, also, soon},
	} {
		if got := tc.q.merge(tc.o); got != tc.want {
			t.Errorf("%s: %+v.merge(%+v) = %+v, want %+v", tc.name, tc.q, tc.o, got, tc.want)
		}
	}
}

// withinClaim shortens a requeue to a third of the claim's term, as RenewWithin did.
func TestWithinClaim(t *testing.T) {
	r := &Reconciler{Ownership: &ownership.Ownership{Term: 30 * time.Second}}
	if got := r.withinClaim(requeue{after: time.Minute, reason: "resync"}); got.after != 10*time.Second || got.reason == "resync" {
		t.Errorf("a minute within a 30 s claim: %+v, want 10s for the claim", got)
	}
	if got := r.withinClaim(requeue{after: time.Second, reason: "step"}); got != (requeue{after: time.Second, reason: "step"}) {
		t.Errorf("a second within a 30 s claim: %+v, want it unchanged", got)
	}
	r.Ownership = nil
	if got := r.withinClaim(requeue{after: time.Minute, reason: "resync"}); got.after != time.Minute {
		t.Errorf("without claims: %+v, want a minute", got)
	}
}
