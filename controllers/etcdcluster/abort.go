package etcdcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/planner"
)

// keepFinalizer holds the cluster with FinalizerJoin (want) or lets it go. The pass holds it
// while a join is recorded and not completed (EtcdCluster.JoinUnfinished), and lets it go once
// the join completed or its abort is over. Adding it when the join is recorded rather than at
// creation also covers clusters created before the finalizer existed: no membership change of
// the join comes before it. A change is the pass's only step; it reports whether it made one.
func (r *Reconciler) keepFinalizer(ctx context.Context, c *v1alpha1.EtcdCluster, want bool) (requeue, bool, error) {
	if controllerutil.ContainsFinalizer(c, v1alpha1.FinalizerJoin) == want {
		return requeue{}, false, nil
	}
	updated := c.DeepCopy()
	what := "adding"
	if want {
		controllerutil.AddFinalizer(updated, v1alpha1.FinalizerJoin)
	} else {
		what = "removing"
		controllerutil.RemoveFinalizer(updated, v1alpha1.FinalizerJoin)
	}
	// The lock: a list patched from a stale copy would drop a finalizer added since.
	if err := r.Patch(ctx, updated, client.MergeFromWithOptions(c, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return requeue{}, true, nil
		}
		return requeue{}, true, fmt.Errorf("%s the finalizer %s, which holds a deleted EtcdCluster until its members left the external cluster of its join: %w; retrying", what, v1alpha1.FinalizerJoin, err)
	}
	// Until the cache shows the write, a pass would find the finalizer as it was.
	r.Expectations.ExpectOwnerNewerThan(client.ObjectKeyFromObject(c), c.ResourceVersion)
	logf.FromContext(ctx).Info(what+" the join finalizer", "finalizer", v1alpha1.FinalizerJoin)
	return requeue{after: r.StepDelay, reason: what + " the join finalizer"}, true, nil
}

// holdsJoin: the cluster must be held by FinalizerJoin, its join recorded and not completed.
func holdsJoin(c *v1alpha1.EtcdCluster) bool {
	return c.JoinUnfinished() && !mutant.On("no-join-finalizer")
}

// abort is the pass of a cluster deleted while FinalizerJoin holds it: one step of
// planner.PlanAbort, from the member list read now. The operator's members leave the external
// cluster one at a time; then the finalizer goes, and with the EtcdCluster its pods and volumes.
// Nothing is created for a cluster being deleted: no certificates, Services or PDB.
func (r *Reconciler) abort(ctx context.Context, original, c *v1alpha1.EtcdCluster) (ctrl.Result, error) {
	if !c.JoinUnfinished() {
		q, _, err := r.keepFinalizer(ctx, c, false)
		return q.result(ctx), err
	}
	obs, clusterID, res, done, err := r.observeIdentified(ctx, original, c)
	if done {
		return res, err
	}
	defer obs.close()
	state := obs.buildState(c, clusterID, time.Now(), r.Settings)
	action := planner.PlanAbort(state)
	logf.FromContext(ctx).V(1).Info("planned the join's abort", "action", action.String())
	if action.Kind == planner.Finish {
		// The finalizer goes: no status after it, the cluster may be gone at once.
		q, _, err := r.keepFinalizer(ctx, c, false)
		if err == nil {
			r.Recorder.Eventf(original, corev1.EventTypeNormal, v1alpha1.EventJoinAborted, "%s", action.Message)
			metrics.CountReconcile(c.Namespace, c.Name, string(action.Kind))
		}
		return q.result(ctx), err
	}
	q, _, execErr := r.execute(ctx, c, obs, state, action)
	outcome := string(action.Kind)
	if execErr != nil {
		outcome = "Error"
	}
	metrics.CountReconcile(c.Namespace, c.Name, outcome)
	return r.report(ctx, original, c, obs, state, action, q, execErr)
}
