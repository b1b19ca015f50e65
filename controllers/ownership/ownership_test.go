package ownership

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

// clock is a fake local clock, shared by the installs of a test unless one is given its own.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// world is one API server (a fake client counting the Lease reads, giving each created object
// a UID of its own as the API server does) with one cluster.
type world struct {
	store client.WithWatch
	raw   client.WithWatch // the same objects, the test's own reads not counted
	reads int
	c     *v1alpha1.EtcdCluster
	lease types.NamespacedName
}

func newWorld(t *testing.T, operator string) *world {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo", UID: "cluster-uid"}}
	c.Status.Operator = operator
	w := &world{c: c, lease: types.NamespacedName{Namespace: "ns", Name: names.OwnerLease("demo")}}
	created := 0
	w.raw = fake.NewClientBuilder().WithScheme(scheme).WithObjects(c).WithStatusSubresource(c).Build()
	w.store = interceptor.NewClient(w.raw, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*coordinationv1.Lease); ok {
				w.reads++
			}
			return cl.Get(ctx, k, obj, opts...)
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			created++
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", created)))
			return cl.Create(ctx, obj, opts...)
		},
	})
	return w
}

func (w *world) claim(t *testing.T, o *Ownership, rec record.EventRecorder) Hold {
	t.Helper()
	h, err := o.Claim(context.Background(), w.store, w.store, rec, w.c)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (w *world) get(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := w.raw.Get(context.Background(), w.lease, l); err != nil {
		t.Fatal(err)
	}
	return l
}

func (w *world) deleteLease(t *testing.T) {
	t.Helper()
	if err := w.store.Delete(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: w.lease.Namespace, Name: w.lease.Name}}); err != nil {
		t.Fatal(err)
	}
}

// events drains a fake recorder.
func events(rec *record.FakeRecorder) []string {
	var got []string
	for {
		select {
		case e := <-rec.Events:
			got = append(got, e)
		default:
			return got
		}
	}
}

// A claim held with more than three fifths of its term left is not read again; one due for renewal is
// read and renewed; one another install holds is never assumed.
func TestClaimReadsTheLeaseOnlyWhenDue(t *testing.T) {
	w := newWorld(t, "")
	clk := &clock{t: time.Unix(1_000_000, 0)}
	o := &Ownership{Identity: "ns-a/quorate-operator", Term: time.Minute, Clock: clk.Now}
	rec := record.NewFakeRecorder(10)
	claim := func(step string, wantAct bool, wantReads int) {
		t.Helper()
		h := w.claim(t, o, rec)
		if h.Act != wantAct || w.reads != wantReads {
			t.Fatalf("%s: act %v after %d Lease reads, want %v after %d (%s)", step, h.Act, w.reads, wantAct, wantReads, h.Why)
		}
	}
	claim("created", true, 1)
	claim("held", true, 1)
	clk.advance(23 * time.Second)
	claim("still held", true, 1)

	// Due for renewal (less than three fifths of the term left): read and renewed.
	clk.advance(2 * time.Second)
	claim("due", true, 2)
	if got, want := w.get(t).Spec.RenewTime.Time, clk.Now(); !got.Equal(want) {
		t.Fatalf("the claim was not renewed: renewed at %s, want %s", got, want)
	}
	claim("renewed", true, 2)

	// Another install holds it (it changed hands): once this install's term runs low it reads
	// the Lease and stands back.
	lease := w.get(t)
	lease.Spec.HolderIdentity = ptr.To("ns-b/quorate-operator")
	if err := w.store.Update(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	clk.advance(25 * time.Second)
	claim("held elsewhere", false, 3)
	claim("held elsewhere, read again", false, 4)

	o.Forget(types.NamespacedName{Namespace: "ns", Name: "demo"})
	if _, ok := o.get(types.NamespacedName{Namespace: "ns", Name: "demo"}); ok {
		t.Fatal("a forgotten cluster is still remembered")
	}
}

// Another holder's claim expires once this install has seen the same version of its Lease for a
// whole term on its own clock: the renew time written by a machine whose clock is hours off,
// either way, changes nothing, and every new version starts the term again.
func TestOtherHoldersClaimExpiresOnThisInstallsClock(t *testing.T) {
	for _, skew := range []time.Duration{-3 * time.Hour, 0, 3 * time.Hour} {
		t.Run(fmt.Sprint(skew), func(t *testing.T) {
			w := newWorld(t, "ns-b/quorate-operator")
			clk := &clock{t: time.Unix(1_000_000, 0)}
			other := metav1.MicroTime{Time: clk.Now().Add(skew)}
			lease := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: w.lease.Namespace, Name: w.lease.Name},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("ns-b/quorate-operator"), LeaseDurationSeconds: ptr.To(int32(60)),
					AcquireTime: &other, RenewTime: &other},
			}
			if err := w.store.Create(context.Background(), lease); err != nil {
				t.Fatal(err)
			}
			o := &Ownership{Identity: "ns-a/quorate-operator", Term: time.Minute, Clock: clk.Now}
			rec := record.NewFakeRecorder(10)
			var acted []time.Duration
			start := clk.Now()
			for range 20 {
				if h := w.claim(t, o, rec); h.Act {
					acted = append(acted, clk.Now().Sub(start))
				}
				if clk.Now().Sub(start) == 50*time.Second {
					// The holder renews (with its own skewed clock): the term starts again.
					lease := w.get(t)
					lease.Spec.RenewTime = &metav1.MicroTime{Time: other.Add(50 * time.Second)}
					if err := w.store.Update(context.Background(), lease); err != nil {
						t.Fatal(err)
					}
				}
				clk.advance(10 * time.Second)
			}
			// Seen renewed at 50 s (read at 60 s), expired a term later, at 120 s.
			if len(acted) == 0 || acted[0] != 120*time.Second {
				t.Fatalf("acted at %v after the other holder's renewal, want from 2m0s", acted)
			}
			if got, want := events(rec), []string{
				"Normal OwnedElsewhere operator ns-a/quorate-operator sees this cluster but leaves it to ns-b/quorate-operator, which holds its claim",
				"Warning OwnershipTakenOver operator ns-a/quorate-operator took over this cluster from ns-b/quorate-operator, whose claim expired",
			}; !slices.Equal(got, want) {
				t.Fatalf("events:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// A Lease deleted under its holder is a lost claim: the holder's check before an action says so
// with an Event, the pass that finds it gone does not act, and the holder, whose term had not
// ended, acts again from the next pass under the Lease it created again.
func TestDeletedLeaseIsALostClaim(t *testing.T) {
	w := newWorld(t, "")
	clk := &clock{t: time.Unix(1_000_000, 0)}
	o := &Ownership{Identity: "ns-a/quorate-operator", Term: time.Minute, Clock: clk.Now}
	rec := record.NewFakeRecorder(10)
	h := w.claim(t, o, rec)
	if !h.Act {
		t.Fatalf("not acting on a new cluster: %s", h.Why)
	}
	if err := o.Confirm(context.Background(), w.store, rec, w.c, h); err != nil {
		t.Fatalf("confirming a held claim: %v", err)
	}
	w.deleteLease(t)
	clk.advance(time.Second)
	if err := o.Confirm(context.Background(), w.store, rec, w.c, h); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("confirming after the Lease was deleted: %v, want ErrClaimLost", err)
	}
	if ok, _, err := o.Holds(context.Background(), w.store, w.c); ok || err != nil {
		t.Fatalf("Holds = %v, %v after the Lease was deleted", ok, err)
	}
	if h := w.claim(t, o, rec); h.Act {
		t.Fatal("the pass that found the Lease gone acts")
	}
	h = w.claim(t, o, rec)
	if !h.Act {
		t.Fatalf("the holder does not act again under the Lease it created again: %s", h.Why)
	}
	if err := o.Confirm(context.Background(), w.store, rec, w.c, h); err != nil {
		t.Fatalf("confirming the claim created again: %v", err)
	}
	if got, want := events(rec), []string{
		"Normal OwnershipAcquired operator ns-a/quorate-operator manages this cluster",
		"Warning OwnershipLost operator ns-a/quorate-operator lost this cluster's claim: its Lease demo-operator was deleted. It stopped acting on the cluster; if something deletes the Lease (a GitOps prune, a namespace clean-up), exclude Leases labelled for the cluster from it",
	}; !slices.Equal(got, want) {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
}

// Another install that finds the Lease gone on a cluster the holder acted on leaves it to the
// holder until it has found it gone for a whole term on its own clock; the holder, gone, does
// not come back, so the other install creates the Lease then, and acts only once it has seen it
// unchanged for a term: the holder it replaces may act until its own term ends, and the holder's
// check before an action sees the claim lost.
func TestTakeoverOfADeletedLeaseWaitsATerm(t *testing.T) {
	w := newWorld(t, "") // a new cluster: a acts at once
	clkA, clkB := &clock{t: time.Unix(1_000_000, 0)}, &clock{t: time.Unix(5_000_000, 0)}
	a := &Ownership{Identity: "ns-a/quorate-operator", Term: time.Minute, Clock: clkA.Now}
	b := &Ownership{Identity: "ns-b/quorate-operator", Term: time.Minute, Clock: clkB.Now}
	rec := record.NewFakeRecorder(20)
	ha := w.claim(t, a, rec)
	// a acted on it: its status names a.
	w.c.Status.Operator = a.Identity
	if err := w.raw.Status().Update(context.Background(), w.c); err != nil {
		t.Fatal(err)
	}
	if !ha.Act {
		t.Fatalf("a does not act on the cluster whose claim it holds: %s", ha.Why)
	}
	w.deleteLease(t)
	if err := a.Confirm(context.Background(), w.store, rec, w.c, ha); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("a's check after the Lease was deleted: %v, want ErrClaimLost", err)
	}
	leaseGone := func(when string) {
		t.Helper()
		if err := w.raw.Get(context.Background(), w.lease, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s: the Lease is there (%v), want it left to a", when, err)
		}
	}
	for _, step := range []time.Duration{0, 30 * time.Second, 29 * time.Second} {
		clkB.advance(step)
		if hb := w.claim(t, b, rec); hb.Act || hb.Holder != a.Identity {
			t.Fatalf("b %s after it found the Lease gone: %+v, want it left to a", clkB.Now().Sub(time.Unix(5_000_000, 0)), hb)
		}
		leaseGone(fmt.Sprintf("b %s after it found the Lease gone", clkB.Now().Sub(time.Unix(5_000_000, 0))))
	}
	clkB.advance(time.Second)
	if hb := w.claim(t, b, rec); hb.Act || hb.Holder != b.Identity {
		t.Fatalf("b a term after it found the Lease gone: %+v, want it to create the Lease and wait", hb)
	}
	for _, step := range []time.Duration{20 * time.Second, 20 * time.Second, 19 * time.Second} {
		clkB.advance(step)
		if hb := w.claim(t, b, rec); hb.Act {
			t.Fatalf("b acts %s after it created the Lease, within a term", clkB.Now().Sub(time.Unix(5_000_060, 0)))
		}
	}
	clkB.advance(time.Second)
	if hb := w.claim(t, b, rec); !hb.Act {
		t.Fatalf("b does not act a term after it created the Lease: %s", hb.Why)
	}
	if h := w.claim(t, a, rec); h.Act {
		t.Fatal("a acts under b's Lease")
	}
}

// A pass starts nothing once less than the margin is left of the term its claim had when the
// pass started; a claim created for a cluster no install has acted on allows membership changes
// and deletions only a term later.
func TestPassStopsWhenTheTermRunsLow(t *testing.T) {
	w := newWorld(t, "")
	clk := &clock{t: time.Unix(1_000_000, 0)}
	o := &Ownership{Identity: "ns-a/quorate-operator", Term: time.Minute, Clock: clk.Now}
	h := w.claim(t, o, record.NewFakeRecorder(10))
	if got := o.ChangesWait(h); got != time.Minute {
		t.Fatalf("changes wait %s under a new cluster's first claim, want a term", got)
	}
	clk.advance(44 * time.Second)
	if err := o.InTerm(h); err != nil {
		t.Fatalf("44 s into a term of a minute: %v", err)
	}
	clk.advance(time.Second)
	if err := o.InTerm(h); !errors.Is(err, ErrTermRunningLow) {
		t.Fatalf("45 s into a term of a minute: %v, want ErrTermRunningLow", err)
	}
	if err := o.Confirm(context.Background(), w.store, record.NewFakeRecorder(10), w.c, h); !errors.Is(err, ErrTermRunningLow) {
		t.Fatalf("confirming 45 s into a term of a minute: %v, want ErrTermRunningLow", err)
	}
}

// A Lease deleted under the claim of the install that acted on the cluster last is left to
// it: the holder creates it again and goes on acting, however often a prune deletes it; only
// when the Lease stays gone for a term does another install create it (and then waits a term
// before acting).
func TestDeletedLeaseIsLeftToItsHolder(t *testing.T) {
	w, clkA, clkB, a, b, rec := twoInstalls(t)
	w.c.Status.Operator = a.Identity
	if err := w.raw.Status().Update(context.Background(), w.c); err != nil {
		t.Fatal(err)
	}
	if h := w.claim(t, b, rec); h.Act || h.Holder != a.Identity {
		t.Fatalf("b's first look: %+v, want a's claim", h)
	}
	for i := range 5 { // a prune every 9 s
		w.deleteLease(t)
		clkA.advance(9 * time.Second)
		clkB.advance(9 * time.Second)
		want := Hold{Holder: a.Identity, Why: "the cluster's claim (Lease demo-operator) is gone, and operator ns-a/quorate-operator acted on the cluster last: this install leaves the claim to it until the Lease has been gone for a term (1m0s left on this install's clock)"}
		if h := w.claim(t, b, rec); h != want {
			t.Fatalf("deletion %d, b:\n got %+v\nwant %+v", i, h, want)
		}
		if err := a.Confirm(context.Background(), w.store, rec, w.c, Hold{Act: true, Holder: a.Identity, Until: clkA.Now().Add(time.Minute)}); !errors.Is(err, ErrClaimLost) {
			t.Fatalf("deletion %d: a's check before an action: %v, want ErrClaimLost", i, err)
		}
		if h := w.claim(t, a, rec); h.Act {
			t.Fatalf("deletion %d: a's pass that found the Lease gone acts", i)
		}
		if h := w.claim(t, a, rec); !h.Act {
			t.Fatalf("deletion %d: a does not act under the Lease it created again: %s", i, h.Why)
		}
		if h := w.claim(t, b, rec); h.Act || h.Holder != a.Identity {
			t.Fatalf("deletion %d: b after a created the Lease again: %+v", i, h)
		}
	}
	// a is gone: once b has found the Lease gone for a term, b creates it, and acts a term later.
	w.deleteLease(t)
	if h := w.claim(t, b, rec); h.Holder != a.Identity || h.Act {
		t.Fatalf("b finding the Lease gone: %+v", h)
	}
	clkB.advance(59 * time.Second)
	if h := w.claim(t, b, rec); h.Holder != a.Identity || h.Act {
		t.Fatalf("b within a term of finding the Lease gone: %+v", h)
	}
	clkB.advance(time.Second)
	if h := w.claim(t, b, rec); h.Act || h.Holder != b.Identity {
		t.Fatalf("b after a's term: %+v, want b's new claim, not acting yet", h)
	}
	clkB.advance(time.Minute)
	if h := w.claim(t, b, rec); !h.Act {
		t.Fatalf("b a term after it created the Lease: %s", h.Why)
	}
}

// A holder whose passes come a third of the term apart (RenewWithin) finds its Lease deleted
// while it may still create it again as its own, however the deletion falls between its
// passes: whatever pass trusted the claim without reading it, the next one reads it in time.
func TestHolderFindsItsDeletedLeaseInTime(t *testing.T) {
	for p := time.Second; p < time.Minute; p += time.Second {
		w := newWorld(t, "")
		clk := &clock{t: time.Unix(1_000_000, 0)}
		o := &Ownership{Identity: "ns-a/quorate-operator", Term: time.Minute, Clock: clk.Now}
		rec := record.NewFakeRecorder(10)
		if h := w.claim(t, o, rec); !h.Act {
			t.Fatalf("not acting on a new cluster: %s", h.Why)
		}
		w.c.Status.Operator = o.Identity // it acted on it
		if err := w.raw.Status().Update(context.Background(), w.c); err != nil {
			t.Fatal(err)
		}
		clk.advance(p)
		if h := w.claim(t, o, rec); !h.Act || w.reads != 1 {
			continue // read (and renewed): not a pass that trusted the claim
		}
		w.deleteLease(t)
		// Passes a third of the term apart: the trusted ones act (their membership changes
		// read the Lease first, Confirm); the first that reads finds it gone and stops.
		h := Hold{Act: true}
		for h.Act {
			clk.advance(o.RenewWithin(time.Hour))
			h = w.claim(t, o, rec)
		}
		if !h.Soon {
			t.Fatalf("trusted at %s: the pass that created the deleted Lease again does not ask for the next pass at once: %+v", p, h)
		}
		if h := w.claim(t, o, rec); !h.Act {
			t.Fatalf("trusted at %s, the Lease deleted then: the holder does not continue under the Lease it created again: %s", p, h.Why)
		}
	}
}

// An install that never catches the holder's Lease between deletions (its passes fall in the
// gaps) still leaves the claim to the holder while the holder writes the cluster's status.
func TestGoneLeaseLeftToAHolderThatWritesStatus(t *testing.T) {
	w, clkA, clkB, a, b, rec := twoInstalls(t)
	for i := range 12 { // 108 s of a prune every 9 s
		w.c.Status.Operator = a.Identity
		w.c.Status.ObservedGeneration = int64(i)
		if err := w.raw.Status().Update(context.Background(), w.c); err != nil {
			t.Fatal(err)
		}
		w.deleteLease(t)
		clkA.advance(9 * time.Second)
		clkB.advance(9 * time.Second)
		if h := w.claim(t, b, rec); h.Act || h.Holder != a.Identity {
			t.Fatalf("round %d: b %+v, want the claim left to a", i, h)
		}
		if err := w.raw.Get(context.Background(), w.lease, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
			t.Fatalf("round %d: b created the Lease (%v)", i, err)
		}
		if err := a.Confirm(context.Background(), w.store, rec, w.c, Hold{Act: true, Holder: a.Identity, Until: clkA.Now().Add(time.Minute)}); !errors.Is(err, ErrClaimLost) {
			t.Fatalf("round %d: a's check: %v, want ErrClaimLost", i, err)
		}
		w.claim(t, a, rec) // a creates the Lease again; b does not read it before the next prune
		if h := w.claim(t, a, rec); !h.Act {
			t.Fatalf("round %d: a does not act under the Lease it created again: %s", i, h.Why)
		}
	}
}

// twoInstalls is a world with two installs a and b, each on its own clock, and a holding the
// claim of the new cluster it acted on first.
func twoInstalls(t *testing.T) (*world, *clock, *clock, *Ownership, *Ownership, *record.FakeRecorder) {
	t.Helper()
	w := newWorld(t, "")
	clkA, clkB := &clock{t: time.Unix(1_000_000, 0)}, &clock{t: time.Unix(5_000_000, 0)}
	a := &Ownership{Identity: "ns-a/quorate-operator", Term: time.Minute, Clock: clkA.Now}
	b := &Ownership{Identity: "ns-b/quorate-operator", Term: time.Minute, Clock: clkB.Now}
	rec := record.NewFakeRecorder(100)
	if h := w.claim(t, a, rec); !h.Act {
		t.Fatalf("a does not act on a new cluster: %s", h.Why)
	}
	return w, clkA, clkB, a, b, rec
}
