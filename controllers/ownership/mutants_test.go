//go:build mutants

package ownership

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"

	"github.com/quorate-dev/quorate/internal/mutant"
)

// ignore-ownership: the install that does not hold the cluster's claim acts on it anyway, and
// its check before a membership change passes.
func TestIgnoreOwnershipMutant(t *testing.T) {
	w := newWorld(t, "")
	clk := &clock{t: time.Unix(1_000_000, 0)}
	a := &Ownership{Identity: "ns-a/quorate-operator", Term: time.Minute, Clock: clk.Now}
	b := &Ownership{Identity: "ns-b/quorate-operator", Term: time.Minute, Clock: clk.Now}
	rec := record.NewFakeRecorder(10)
	if h := w.claim(t, a, rec); !h.Act {
		t.Fatalf("install a does not hold the new claim: %s", h.Why)
	}
	h := w.claim(t, b, rec)
	if h.Act {
		t.Fatal("without the mutant, install b acts on a cluster a holds")
	}
	if err := b.Confirm(context.Background(), w.store, rec, w.c, h); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("without the mutant, b's Confirm = %v, want ErrClaimLost", err)
	}
	defer mutant.Set("ignore-ownership")()
	h = w.claim(t, b, rec)
	if !h.Act {
		t.Fatalf("with ignore-ownership, install b does not act: %s", h.Why)
	}
	if err := b.Confirm(context.Background(), w.store, rec, w.c, h); err != nil {
		t.Fatalf("with ignore-ownership, b's Confirm = %v", err)
	}
}
