package etcdcluster

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/ownership"
)

// requeue is when the next pass of a cluster comes, and why: every pass that asks for one
// says why, and the reason is logged at V(1) when the pass ends.
type requeue struct {
	after  time.Duration // 0: no pass is asked for
	reason string
}

// merge is the sooner of two requeues (one that asks for no pass gives way to the other; of
// two as soon, q).
func (q requeue) merge(o requeue) requeue {
	switch {
	case o.after <= 0:
		return q
	case q.after <= 0 || o.after < q.after:
		return o
	}
	return q
}

// result is the pass's result for q, its reason logged.
func (q requeue) result(ctx context.Context) ctrl.Result {
	if q.after > 0 {
		logf.FromContext(ctx).V(1).Info("next pass", "after", q.after.String(), "reason", q.reason)
	}
	return ctrl.Result{RequeueAfter: q.after}
}

// withinClaim brings q forward so that the next pass comes while the cluster's claim has more
// than half its term left (ownership.Ownership.RenewWithin).
func (r *Reconciler) withinClaim(q requeue) requeue {
	if d := r.Ownership.RenewWithin(q.after); d != q.after {
		return q.merge(requeue{after: d, reason: "renewing the cluster's claim in time"})
	}
	return q
}

// holdKey carries a pass's ownership.Hold in its context, to every place that acts.
type holdKey struct{}

func withHold(ctx context.Context, h ownership.Hold) context.Context {
	return context.WithValue(ctx, holdKey{}, h)
}

// holdOf is the Hold the pass acts under (the zero Hold, which bounds nothing, outside one).
func holdOf(ctx context.Context) ownership.Hold {
	h, _ := ctx.Value(holdKey{}).(ownership.Hold)
	return h
}

// mayAct is the check before every action a pass takes (execute, removeLeftover): none starts
// once the claim's term as judged at the pass's start runs low (ownership.ErrTermRunningLow),
// and membership changes and deletions (changes) first read the claim again, live, and stop
// the pass when it is no longer this instance's (ownership.ErrClaimLost). A claim too new for
// changes returns how long they wait.
func (r *Reconciler) mayAct(ctx context.Context, c *v1alpha1.EtcdCluster, changes bool) (time.Duration, error) {
	h := holdOf(ctx)
	if !changes {
		return 0, r.Ownership.InTerm(h)
	}
	if wait := r.Ownership.ChangesWait(h); wait > 0 {
		return wait, nil
	}
	return 0, r.Ownership.Confirm(ctx, r.APIReader, r.Recorder, c, h)
}
