// Package ownership holds the claims one operator install takes on the EtcdClusters it
// manages (a Lease per cluster): who may act on a cluster, how soon a settled cluster's claim
// is renewed, and whether the backup and schedule controllers may act on a cluster.
package ownership

import (
	"context"
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

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

// Ownership is the claim one operator instance holds on each EtcdCluster it manages: a Lease
// in the cluster's namespace. Two Quorate installs whose watch scopes overlap (a cluster-wide
// and a namespaced install, during a move from one to the other) both see the cluster; only
// the holder of an unexpired claim changes anything, the status included. A claim is taken
// over only after it expired, and a pass acts only while at least half of its claim's term is
// left, so no two instances act in overlapping windows.
type Ownership struct {
	// Identity names this operator install (its namespace): the pods of one install are one
	// instance at a time already (leader election).
	Identity string
	// Term is how long a claim lasts without renewal; 0 turns claims off.
	Term time.Duration

	mu       sync.Mutex
	reported map[types.NamespacedName]string    // the last holder this instance reported per cluster
	held     map[types.NamespacedName]time.Time // when this instance's claims expire, as last written or read
}

// holding says whether this instance holds the claim with more than half its term left, by
// what it last wrote or read: no other install takes a claim over before it expires, so the
// Lease need not be read again until it is due for renewal (at thousands of clusters a read per
// pass exceeded the client's rate limit). Like client-go's leader election, this trusts the
// claim's term: a Lease deleted by hand is noticed at the next renewal.
func (o *Ownership) holding(key types.NamespacedName, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	expires, ok := o.held[key]
	return ok && expires.Sub(now) > o.Term/2
}

// record remembers when this instance's claim on a cluster expires (zero: it holds none).
func (o *Ownership) record(key types.NamespacedName, expires time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if expires.IsZero() {
		delete(o.held, key)
		return
	}
	if o.held == nil {
		o.held = map[types.NamespacedName]time.Time{}
	}
	o.held[key] = expires
}

// Forget drops what this instance remembers of a deleted cluster.
func (o *Ownership) Forget(cluster types.NamespacedName) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.held, cluster)
	delete(o.reported, cluster)
}

// Claim makes sure this instance holds the cluster's claim, creating, renewing or taking it
// over as needed: it reads the Lease through live (uncached), writes it through w, and records
// an Event through rec when the holder changes. It returns whether this instance may act, and
// the holder.
func (o *Ownership) Claim(ctx context.Context, w client.Writer, live client.Reader, rec record.EventRecorder, c *v1alpha1.EtcdCluster) (bool, string, error) {
	if o == nil || o.Term <= 0 {
		return true, "", nil
	}
	now := time.Now()
	cluster := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	if o.holding(cluster, now) {
		return true, o.Identity, nil
	}
	o.record(cluster, time.Time{})
	key := types.NamespacedName{Namespace: c.Namespace, Name: names.OwnerLease(c.Name)}
	lease := &coordinationv1.Lease{}
	err := live.Get(ctx, key, lease)
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: names.ClusterLabels(c.Name)},
			Spec:       o.spec(now, 0),
		}
		if err := w.Create(ctx, lease); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return false, "", nil // another instance created it first: look again next pass
			}
			return false, "", fmt.Errorf("claiming the cluster (Lease %s): %w", key.Name, err)
		}
		o.record(cluster, now.Add(o.Term))
		o.reportOwner(rec, c, o.Identity, "", v1alpha1.EventOwnershipAcquired)
		return true, o.Identity, nil
	}
	if err != nil {
		return false, "", fmt.Errorf("reading the cluster's claim (Lease %s): %w", key.Name, err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	expires := renewed(lease).Add(time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second)
	switch {
	case holder == o.Identity && expires.Sub(now) > o.Term/2:
		o.record(cluster, expires)
		return true, holder, nil
	case holder == o.Identity:
		lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
		lease.Spec.LeaseDurationSeconds = ptr.To(int32(o.Term.Seconds()))
		if err := w.Update(ctx, lease); err != nil {
			if apierrors.IsConflict(err) {
				return false, holder, nil
			}
			return false, holder, fmt.Errorf("renewing the cluster's claim: %w", err)
		}
		o.record(cluster, now.Add(o.Term))
		return true, holder, nil
	case holder != "" && now.Before(expires):
		o.reportOwner(rec, c, holder, "", v1alpha1.EventOwnedElsewhere)
		return false, holder, nil
	}
	// The claim expired (or was released): take it over.
	lease.Spec = o.spec(now, ptr.Deref(lease.Spec.LeaseTransitions, 0)+1)
	if err := w.Update(ctx, lease); err != nil {
		if apierrors.IsConflict(err) {
			return false, holder, nil
		}
		return false, holder, fmt.Errorf("taking over the cluster's claim from %s: %w", holder, err)
	}
	o.record(cluster, now.Add(o.Term))
	o.reportOwner(rec, c, o.Identity, holder, v1alpha1.EventOwnershipTakenOver)
	return true, o.Identity, nil
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

func renewed(l *coordinationv1.Lease) time.Time {
	switch {
	case l.Spec.RenewTime != nil:
		return l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		return l.Spec.AcquireTime.Time
	}
	return time.Time{}
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

// Holds reports whether this instance holds the cluster's unexpired claim, without renewing
// or taking it (the cluster's own reconciler does that): the backup and schedule controllers
// act on a cluster only while its holder is this instance. With claims off, it always does.
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
	expires := renewed(lease).Add(time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second)
	return holder == o.Identity && time.Now().Before(expires), holder, nil
}
