// Package ownership holds the claims one operator install takes on the EtcdClusters it
// manages (a Lease per cluster): who may act on a cluster, how soon a settled cluster's claim
// is renewed, and whether the backup and schedule controllers may act on a cluster.
package ownership

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/names"
)

// Ownership is the claim one operator instance holds on each EtcdCluster it manages: a Lease
// in the cluster's namespace. Two Quorate installs whose watch scopes overlap (a cluster-wide
// and a namespaced install, during a move from one to the other) both see the cluster; only
// the holder of a claim changes anything, the status included.
//
// Every term is judged on this install's own clock (a monotonic one: time.Now carries a
// monotonic reading), never from the times written in the Lease by another install: another
// holder's claim has expired only once this install has seen the same version of the Lease,
// unchanged, for a whole term; this install's own claim lasts a term from the moment it sent
// the write that made or renewed it, less a margin in which no new action starts. A Lease
// found gone is a lost claim; whoever creates it again waits a term before acting, unless its
// own claim had not ended yet. docs/design.md ("Two installs") has the argument why no two
// installs act in overlapping windows.
type Ownership struct {
	// Identity names this operator install (its namespace): the pods of one install are one
	// instance at a time already (leader election).
	Identity string
	// Term is how long a claim lasts without renewal; 0 turns claims off.
	Term time.Duration
	// Clock reads the local time (tests inject one); nil is time.Now.
	Clock func() time.Time

	mu       sync.Mutex
	reported map[types.NamespacedName]string // the last holder this instance reported per cluster
	claims   map[types.NamespacedName]claim  // what this instance last saw or wrote of each claim
}

// claim is what this instance remembers of one cluster's Lease: the version it last saw or
// wrote, and when, on its own clock.
type claim struct {
	uid     types.UID
	version string // the Lease's resourceVersion
	holder  string
	term    time.Duration // the Lease's own term (LeaseDurationSeconds)
	// seen is when this instance first saw this version, or sent the write that made it.
	seen time.Time
	// ours: this instance holds the claim through this version, until seen + Term.
	ours bool
	// changesFrom is when membership changes and deletions may start (a claim created for a
	// cluster no install has acted on allows the rest at once, those only a term later).
	changesFrom time.Time
	// gone: the Lease was found deleted while ours; the next Claim reads it again.
	gone bool
	// absent is when this instance first found the Lease gone, and has not seen it since, on
	// a cluster another install acted on last (create leaves the claim to that install for a
	// term from then).
	absent time.Time
	// absentVersion is the cluster's resourceVersion when absent was set.
	absentVersion string
}

// Hold is what one pass may do under the cluster's claim, as judged when the pass started.
type Hold struct {
	// Act: this instance holds the claim and the pass may act.
	Act bool
	// Holder is the claim's holder as last seen ("" when nobody holds it yet).
	Holder string
	// Why says why the pass may not act, and when it may.
	Why string
	// Until is when the pass starts no new action: the claim's end on this instance's clock,
	// less the margin (zero with claims off).
	Until time.Time
	// ChangesFrom is when membership changes and deletions may start.
	ChangesFrom time.Time
	// Soon: the pass may not act, and the next may: this instance created its deleted Lease
	// again while its claim ran. The next pass should come at once, before a prune that
	// deletes the Lease every few seconds has deleted it again.
	Soon bool
}

// ErrClaimLost: the claim is no longer this instance's (the Lease changed hands or was
// deleted); the pass stops and changes nothing more.
var ErrClaimLost = errors.New("this operator install lost the cluster's claim")

// ErrTermRunningLow: less than the margin is left of the claim's term as judged when the pass
// started; the pass starts nothing more, and the next one renews the claim first.
var ErrTermRunningLow = errors.New("the cluster's claim has less than its safety margin left")

func (o *Ownership) now() time.Time {
	if o.Clock != nil {
		return o.Clock()
	}
	return time.Now()
}

// Margin is how long before its claim ends an instance starts no new action: it covers one
// action's duration (etcd calls time out after 5 s, the removal probe after 2 s) and the drift
// between two machines' clock rates. A quarter of the term.
func (o *Ownership) Margin() time.Duration {
	return o.Term / 4
}

func (o *Ownership) get(key types.NamespacedName) (claim, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	cl, ok := o.claims[key]
	return cl, ok
}

func (o *Ownership) put(key types.NamespacedName, cl claim) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.claims == nil {
		o.claims = map[types.NamespacedName]claim{}
	}
	o.claims[key] = cl
}

// hold is the Hold of a claim this instance holds.
func (o *Ownership) hold(cl claim) Hold {
	return Hold{Act: true, Holder: o.Identity, Until: cl.seen.Add(o.Term - o.Margin()), ChangesFrom: cl.changesFrom}
}

// trusted returns the Hold of a claim this instance holds with more than three fifths of its
// term left, by what it last wrote: nobody takes a claim over before it has seen it unchanged
// for a term, so the Lease need not be read again until it is due for renewal (at thousands of
// clusters a read per pass exceeded the client's rate limit). Every membership change and
// deletion reads it again first (Confirm). Passes come at most a third of the term apart
// (RenewWithin), so the first read after the trust ends comes before the last quarter of the
// term (0.4 + 0.33 < 0.75): a Lease deleted meanwhile is still the holder's to create again
// and continue under (create's held), not a claim it must wait a term for.
func (o *Ownership) trusted(key types.NamespacedName, now time.Time) (Hold, bool) {
	cl, ok := o.get(key)
	if !ok || !cl.ours || cl.gone || cl.seen.Add(o.Term).Sub(now) <= o.Term*3/5 {
		return Hold{}, false
	}
	return o.hold(cl), true
}

// Forget drops what this instance remembers of a deleted cluster.
func (o *Ownership) Forget(cluster types.NamespacedName) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.claims, cluster)
	delete(o.reported, cluster)
}

// observed is the claim as a Lease read now shows it, carrying over when this instance first
// saw that version.
func observed(prev claim, known bool, l *coordinationv1.Lease, now time.Time) (claim, bool) {
	if known && prev.uid == l.UID && prev.version == l.ResourceVersion {
		return prev, true
	}
	return claim{uid: l.UID, version: l.ResourceVersion, holder: ptr.Deref(l.Spec.HolderIdentity, ""),
		term: time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second, seen: now}, false
}

// Claim makes sure this instance holds the cluster's claim, creating, renewing or taking it
// over as needed: it reads the Lease (and, when the Lease is gone, the cluster) through live
// (uncached), writes it through w, and records an Event through rec when the holder changes.
// It returns what the pass may do.
func (o *Ownership) Claim(ctx context.Context, w client.Writer, live client.Reader, rec record.EventRecorder, c *v1alpha1.EtcdCluster) (Hold, error) {
	if o == nil || o.Term <= 0 || mutant.On("ignore-ownership") {
		return Hold{Act: true}, nil
	}
	now := o.now()
	cluster := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	if h, ok := o.trusted(cluster, now); ok {
		return h, nil
	}
	key := types.NamespacedName{Namespace: c.Namespace, Name: names.OwnerLease(c.Name)}
	prev, known := o.get(cluster)
	lease := &coordinationv1.Lease{}
	err := live.Get(ctx, key, lease)
	if apierrors.IsNotFound(err) {
		return o.create(ctx, w, live, rec, c, prev, known, now)
	}
	if err != nil {
		return Hold{}, fmt.Errorf("reading the cluster's claim (Lease %s): %w", key.Name, err)
	}
	cl, same := observed(prev, known, lease, now)
	if !same {
		if known && prev.ours && !prev.gone {
			o.reportLost(ctx, rec, c, fmt.Sprintf("its Lease %s now names %q as holder (version %s)", key.Name, cl.holder, cl.version))
		}
		o.put(cluster, cl)
	}
	term := max(cl.term, o.Term)
	switch {
	case cl.holder == o.Identity && same && cl.ours:
		// Ours, due for renewal: renewing the version this instance wrote proves nobody wrote
		// the Lease since (a conflict says somebody did).
		lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
		lease.Spec.LeaseDurationSeconds = ptr.To(int32(o.Term.Seconds()))
		return o.write(ctx, w, cluster, lease, now, cl.changesFrom, "renewing the cluster's claim")
	case cl.holder == o.Identity && !known:
		// This instance names itself holder but remembers nothing: the install restarted.
		// Leader election kept its previous pod from acting once this one leads.
		lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
		lease.Spec.LeaseDurationSeconds = ptr.To(int32(o.Term.Seconds()))
		return o.write(ctx, w, cluster, lease, now, now, "renewing the cluster's claim after a restart")
	case now.Sub(cl.seen) < term:
		if cl.holder == o.Identity {
			return Hold{Holder: cl.holder, Why: fmt.Sprintf("this install created the cluster's claim again after its Lease was deleted, and waits until it has seen it unchanged for a term (%s, %s left) before acting: another install may have held it until then", term, (term - now.Sub(cl.seen)).Round(time.Second))}, nil
		}
		o.reportOwner(rec, c, cl.holder, "", v1alpha1.EventOwnedElsewhere)
		return Hold{Holder: cl.holder, Why: fmt.Sprintf("operator %s holds the cluster's claim (Lease %s unchanged for %s of its term of %s on this install's clock)", cl.holder, key.Name, now.Sub(cl.seen).Round(time.Second), term)}, nil
	}
	// This instance saw the same version for a whole term: whoever wrote it stopped acting.
	lease.Spec = o.spec(now, ptr.Deref(lease.Spec.LeaseTransitions, 0)+1)
	h, err := o.write(ctx, w, cluster, lease, now, now, "taking over the cluster's claim from "+cl.holder)
	switch {
	case h.Act && cl.holder != o.Identity:
		o.reportOwner(rec, c, o.Identity, cl.holder, v1alpha1.EventOwnershipTakenOver)
	case h.Act:
		o.reportOwner(rec, c, o.Identity, "", v1alpha1.EventOwnershipAcquired)
	}
	return h, err
}

// write updates the Lease (its resourceVersion a precondition) sent at now; done, this
// instance holds the claim until now + Term.
func (o *Ownership) write(ctx context.Context, w client.Writer, cluster types.NamespacedName, lease *coordinationv1.Lease, now, changesFrom time.Time, what string) (Hold, error) {
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if err := w.Update(ctx, lease); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// Somebody wrote or deleted it since it was read: the next pass reads it again.
			return Hold{Holder: holder, Why: "the cluster's claim changed while " + what}, nil
		}
		return Hold{}, fmt.Errorf("%s: %w", what, err)
	}
	cl := claim{uid: lease.UID, version: lease.ResourceVersion, holder: o.Identity, term: o.Term, seen: now, ours: true, changesFrom: changesFrom}
	o.put(cluster, cl)
	return o.hold(cl), nil
}

// create creates the cluster's Lease, found gone. When this instance held the claim and its
// term had not ended, the new Lease continues it: nobody else could act before that term's
// end, nor, having seen the new Lease, before a term after it was written. Otherwise the
// Lease may have been deleted under another holder still acting: the new claim allows
// nothing until this instance has seen it unchanged for a term, except on a cluster no
// install has acted on yet (its status, read live, names no operator), where it allows at once
// everything but membership changes and deletions.
//
// A Lease found gone on a cluster another install acted on last (its status names that
// install) is left to that install until this one has found it gone for a whole term: a
// deletion does not end the holder's term, and the holder creates the Lease again and goes on.
// An install that raced it to create the Lease would win (it reads the Lease every pass, the
// holder only when due or before an action) and make both wait a term, over and over while a
// prune deletes the Lease more often than that.
func (o *Ownership) create(ctx context.Context, w client.Writer, live client.Reader, rec record.EventRecorder, c *v1alpha1.EtcdCluster, prev claim, known bool, now time.Time) (Hold, error) {
	cluster := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	key := types.NamespacedName{Namespace: c.Namespace, Name: names.OwnerLease(c.Name)}
	held := known && prev.ours && now.Before(prev.seen.Add(o.Term-o.Margin()))
	if known && prev.ours && !prev.gone {
		o.reportLost(ctx, rec, c, fmt.Sprintf("its Lease %s was deleted", key.Name))
	}
	cl := claim{holder: o.Identity, term: o.Term, seen: now, changesFrom: prev.changesFrom}
	switch {
	case held:
		cl.ours = true
	default:
		current := &v1alpha1.EtcdCluster{}
		if err := live.Get(ctx, cluster, current); err != nil {
			return Hold{}, fmt.Errorf("reading the cluster before claiming it: %w", err)
		}
		if last := current.Status.Operator; current.UID == c.UID && last != "" && last != o.Identity {
			// The cluster written since (its holder records what it does in its status) is a
			// sign of life this install may see although it never catches the holder's Lease
			// between two deletions: the term starts again.
			if !known || prev.absent.IsZero() || prev.absentVersion != current.ResourceVersion {
				prev.absent, prev.absentVersion = now, current.ResourceVersion
				o.put(cluster, prev)
			}
			if gone := now.Sub(prev.absent); gone < o.Term {
				return Hold{Holder: last, Why: fmt.Sprintf("the cluster's claim (Lease %s) is gone, and operator %s acted on the cluster last: this install leaves the claim to it until the Lease has been gone for a term (%s left on this install's clock)", key.Name, last, (o.Term - gone).Round(time.Second))}, nil
			}
		}
		if current.UID == c.UID && current.Status.Operator == "" && current.Status.ClusterID == "" {
			cl.ours, cl.changesFrom = true, now.Add(o.Term)
		}
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: names.ClusterLabels(c.Name)},
		Spec:       o.spec(now, 0),
	}
	if err := w.Create(ctx, lease); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Another instance created it first: look again next pass.
			return Hold{Why: "another operator install created the cluster's claim first"}, nil
		}
		return Hold{}, fmt.Errorf("claiming the cluster (Lease %s): %w", key.Name, err)
	}
	cl.uid, cl.version = lease.UID, lease.ResourceVersion
	o.put(cluster, cl)
	switch {
	case known && prev.ours && cl.ours:
		// A claim found lost ends the pass that found it, whatever the new Lease allows.
		return Hold{Holder: o.Identity, Soon: true, Why: fmt.Sprintf("the cluster's claim (Lease %s) was deleted; this install created it again and acts from its next pass", key.Name)}, nil
	case known && prev.ours:
		return Hold{Holder: o.Identity, Why: fmt.Sprintf("the cluster's claim (Lease %s) was deleted after this install's term had run low; this install created it again and waits until it has seen it unchanged for a term (%s) before acting: another install may have acted meanwhile", key.Name, o.Term)}, nil
	case cl.ours:
		o.reportOwner(rec, c, o.Identity, "", v1alpha1.EventOwnershipAcquired)
		return o.hold(cl), nil
	}
	return Hold{Holder: o.Identity, Why: fmt.Sprintf("the cluster's claim (Lease %s) was gone; this install created it and waits a term (%s) before acting, since another install may have held it until then", key.Name, o.Term)}, nil
}

// Confirm reads the cluster's claim again (live, uncached) right before a membership change or
// a deletion: it returns an error wrapping ErrClaimLost when the Lease is gone or was written
// by anyone but this instance since, and one wrapping ErrTermRunningLow when h's time is up.
func (o *Ownership) Confirm(ctx context.Context, live client.Reader, rec record.EventRecorder, c *v1alpha1.EtcdCluster, h Hold) error {
	if o == nil || o.Term <= 0 || mutant.On("ignore-ownership") {
		return nil
	}
	if err := o.InTerm(h); err != nil {
		return err
	}
	cluster := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	key := types.NamespacedName{Namespace: c.Namespace, Name: names.OwnerLease(c.Name)}
	now := o.now()
	prev, known := o.get(cluster)
	lease := &coordinationv1.Lease{}
	err := live.Get(ctx, key, lease)
	if apierrors.IsNotFound(err) {
		if known && prev.ours && !prev.gone {
			prev.gone = true
			o.put(cluster, prev)
			o.reportLost(ctx, rec, c, fmt.Sprintf("its Lease %s was deleted", key.Name))
		}
		return fmt.Errorf("%w: its Lease %s was deleted; nothing more is changed in this pass, and the next pass claims the cluster again", ErrClaimLost, key.Name)
	}
	if err != nil {
		return fmt.Errorf("reading the cluster's claim (Lease %s) before acting: %w", key.Name, err)
	}
	cl, same := observed(prev, known, lease, now)
	if same && cl.ours {
		return nil
	}
	if !same {
		o.put(cluster, cl)
	}
	if known && prev.ours && !prev.gone {
		o.reportLost(ctx, rec, c, fmt.Sprintf("its Lease %s now names %q as holder (version %s)", key.Name, cl.holder, cl.version))
	}
	return fmt.Errorf("%w: its Lease %s was written by another (holder %q) since this install's claim; nothing more is changed in this pass", ErrClaimLost, key.Name, cl.holder)
}

// ChangesWait is how long membership changes and deletions must wait under h (0: none): a
// claim created for a cluster no install had acted on allows them only after a term.
func (o *Ownership) ChangesWait(h Hold) time.Duration {
	if o == nil || o.Term <= 0 {
		return 0
	}
	return max(h.ChangesFrom.Sub(o.now()), 0)
}

// InTerm returns an error wrapping ErrTermRunningLow once h's time is up, or before its
// nil with claims off.
func (o *Ownership) InTerm(h Hold) error {
	if o == nil || o.Term <= 0 || h.Until.IsZero() {
		return nil
	}
	if now := o.now(); !now.Before(h.Until) {
		return fmt.Errorf("%w: the pass started acting under a claim that ends in less than %s now; the next pass renews it first", ErrTermRunningLow, o.Margin())
	}
	return nil
}

// reportLost records that this instance lost a claim it held, with the cause.
func (o *Ownership) reportLost(ctx context.Context, rec record.EventRecorder, c *v1alpha1.EtcdCluster, cause string) {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	o.mu.Lock()
	delete(o.reported, key) // a holder seen next is reported again
	o.mu.Unlock()
	msg := fmt.Sprintf("operator %s lost this cluster's claim: %s. It stopped acting on the cluster; if something deletes the Lease (a GitOps prune, a namespace clean-up), exclude Leases labelled for the cluster from it", o.Identity, cause)
	logf.FromContext(ctx).Info(msg)
	rec.Eventf(c, corev1.EventTypeWarning, v1alpha1.EventOwnershipLost, "%s", msg)
}

// RenewWithin shortens a requeue so that the next pass comes while the claim has more than
// half its term left: a settled cluster's claim is renewed in time, and never lapses while its
// holder runs.
func (o *Ownership) RenewWithin(after time.Duration) time.Duration {
	if o == nil || o.Term <= 0 {
		return after
	}
	return min(after, o.Term/3)
}

func (o *Ownership) spec(now time.Time, transitions int32) coordinationv1.LeaseSpec {
	t := metav1.MicroTime{Time: now}
	return coordinationv1.LeaseSpec{HolderIdentity: ptr.To(o.Identity), LeaseDurationSeconds: ptr.To(int32(o.Term.Seconds())),
		AcquireTime: &t, RenewTime: &t, LeaseTransitions: ptr.To(transitions)}
}

// reportOwner records an Event when this instance sees a new holder of a cluster's claim.
func (o *Ownership) reportOwner(rec record.EventRecorder, c *v1alpha1.EtcdCluster, holder, previous, reason string) {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	o.mu.Lock()
	if o.reported == nil {
		o.reported = map[types.NamespacedName]string{}
	}
	seen := o.reported[key] == holder
	o.reported[key] = holder
	o.mu.Unlock()
	if seen {
		return
	}
	switch reason {
	case v1alpha1.EventOwnershipAcquired:
		rec.Eventf(c, corev1.EventTypeNormal, reason, "operator %s manages this cluster", holder)
	case v1alpha1.EventOwnershipTakenOver:
		rec.Eventf(c, corev1.EventTypeWarning, reason, "operator %s took over this cluster from %s, whose claim expired", holder, previous)
	case v1alpha1.EventOwnedElsewhere:
		rec.Eventf(c, corev1.EventTypeNormal, reason, "operator %s sees this cluster but leaves it to %s, which holds its claim", o.Identity, holder)
	}
}

// Holds reports whether this instance holds the cluster's claim, without renewing or taking it
// (the cluster's own reconciler does that): the backup and schedule controllers act on a
// cluster only while its Lease, read through reader, is the version this instance wrote and
// holds, with more than the margin left of its term on this instance's clock. With claims off,
// it always does.
func (o *Ownership) Holds(ctx context.Context, reader client.Reader, c *v1alpha1.EtcdCluster) (bool, string, error) {
	if o == nil || o.Term <= 0 {
		return true, "", nil
	}
	lease := &coordinationv1.Lease{}
	err := reader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: names.OwnerLease(c.Name)}, lease)
	if apierrors.IsNotFound(err) {
		return false, "nobody yet", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("reading the claim of EtcdCluster %s: %w", c.Name, err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	now := o.now()
	cl, known := o.get(types.NamespacedName{Namespace: c.Namespace, Name: c.Name})
	_, same := observed(cl, known, lease, now)
	return same && cl.ours && !cl.gone && now.Before(o.hold(cl).Until), holder, nil
}
