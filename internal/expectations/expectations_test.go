package expectations

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestExpectations(t *testing.T) {
	owner := types.NamespacedName{Namespace: "ns", Name: "demo"}
	clock := time.Unix(1000, 0)
	e := New(time.Minute)
	e.now = func() time.Time { return clock }

	cache := map[Key]types.UID{{"Pod", "demo-1"}: "old-uid"}
	observed := func(k Key) (types.UID, bool) { u, ok := cache[k]; return u, ok }

	if ok, _ := e.Satisfied(owner, observed); !ok {
		t.Fatal("nothing recorded must be satisfied")
	}
	e.ExpectCreate(owner, Key{"Pod", "demo-3"})
	e.ExpectDelete(owner, Key{"Pod", "demo-1"}, "old-uid")
	ok, why := e.Satisfied(owner, observed)
	if ok || !strings.Contains(why, "creation of Pod/demo-3") || !strings.Contains(why, "deletion of Pod/demo-1") {
		t.Fatalf("stale cache satisfied expectations: %v %q", ok, why)
	}

	// The cache catches up with the create; the deleted pod was recreated under a new UID.
	cache[Key{"Pod", "demo-3"}] = "new"
	cache[Key{"Pod", "demo-1"}] = "recreated-uid"
	if ok, why := e.Satisfied(owner, observed); !ok {
		t.Fatalf("caught-up cache not satisfied: %s", why)
	}

	// An expectation nobody will ever meet expires.
	e.ExpectCreate(owner, Key{"PersistentVolumeClaim", "demo-4"})
	if ok, _ := e.Satisfied(owner, observed); ok {
		t.Fatal("unmet create satisfied")
	}
	clock = clock.Add(2 * time.Minute)
	if ok, _ := e.Satisfied(owner, observed); !ok {
		t.Fatal("expired expectation still blocks")
	}

	e.ExpectCreate(owner, Key{"Pod", "x"})
	e.Forget(owner)
	if ok, _ := e.Satisfied(owner, observed); !ok {
		t.Fatal("Forget did not drop expectations")
	}
}

func TestOwnerVersion(t *testing.T) {
	owner := types.NamespacedName{Namespace: "ns", Name: "demo"}
	clock := time.Unix(1000, 0)
	e := New(time.Minute)
	e.now = func() time.Time { return clock }

	if !e.OwnerCurrent(owner, "5") {
		t.Fatal("nothing recorded must be current")
	}
	e.ExpectOwnerNewerThan(owner, "5")
	if e.OwnerCurrent(owner, "5") {
		t.Fatal("the version the operator replaced counted as current")
	}
	if !e.OwnerCurrent(owner, "7") {
		t.Fatal("a newer version did not count as current")
	}
	// Once caught up, the record is gone: the same version is not refused again.
	if !e.OwnerCurrent(owner, "5") {
		t.Fatal("record kept after the cache caught up")
	}

	// A write whose result the cache never shows (the object was replaced) expires.
	e.ExpectOwnerNewerThan(owner, "9")
	clock = clock.Add(2 * time.Minute)
	if !e.OwnerCurrent(owner, "9") {
		t.Fatal("expired record still blocks")
	}

	e.ExpectOwnerNewerThan(owner, "11")
	e.Forget(owner)
	if !e.OwnerCurrent(owner, "11") {
		t.Fatal("Forget did not drop the owner's version")
	}
}
