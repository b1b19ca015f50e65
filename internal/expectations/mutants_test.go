//go:build mutants

package expectations

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/internal/mutant"
)

// drop-expectations: a creation the cache has not seen no longer holds up the next pass.
func TestDropExpectationsMutant(t *testing.T) {
	owner := types.NamespacedName{Namespace: "ns", Name: "demo"}
	notSeen := func(Key) (types.UID, bool) { return "", false }
	satisfied := func() (bool, string) {
		e := New(time.Minute)
		e.ExpectCreate(owner, Key{Kind: "Pod", Name: "demo-3"})
		return e.Satisfied(owner, notSeen)
	}
	if ok, why := satisfied(); ok || why != "waiting for the cache to see the [creation of Pod/demo-3]" {
		t.Fatalf("without the mutant: satisfied %v, %q", ok, why)
	}
	defer mutant.Set("drop-expectations")()
	if ok, why := satisfied(); !ok || why != "" {
		t.Fatalf("with drop-expectations: satisfied %v, %q", ok, why)
	}
}
