package etcdcluster

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
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
