// Package settle ends the passes of every reconciler alike: the status write that is refused
// when the object changed since it was read, and the errors that only say a pass acted on an
// out-of-date view (a conflict, a namespace being deleted), which are retried without backoff.
package settle

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// staleRetry is how soon a pass whose view went out of date (a write refused for a conflict)
// runs again: the cache has usually caught up by then.
const staleRetry = time.Second

// Log messages of the passes whose view went out of date; tests compare them whole.
const (
	msgConflict            = "an object changed after this pass read it; reading again"
	msgNamespaceTerminated = "the namespace is being deleted; nothing more is created in it"
)

// Result ends a pass. Two errors only say that the pass acted on a view that went out of date,
// and are not failures: they are logged at info level and retried without backoff, or not at
// all, instead of going to controller-runtime as errors (a logged stack trace and backoff).
//   - A conflict (the object, or one the pass wrote, changed since it was read): the next pass,
//     in staleRetry, reads it again.
//   - A create refused because the namespace is being deleted: the namespace's deletion removes
//     the object reconciled too, which ends its passes.
//
// Every other error is returned as it is.
func Result(ctx context.Context, res ctrl.Result, err error) (ctrl.Result, error) {
	if err == nil {
		return res, nil
	}
	log := logf.FromContext(ctx)
	switch {
	case apierrors.IsConflict(err):
		log.Info(msgConflict, "error", err.Error())
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		log.Info(msgNamespaceTerminated, "error", err.Error())
		return ctrl.Result{}, nil
	}
	return res, err
}

// PatchStatus writes obj's status over original's, refused if obj changed since original was
// read. An object deleted since then has no status left to write: that is no error, and gone
// says so.
func PatchStatus(ctx context.Context, c client.Client, obj, original client.Object) (gone bool, err error) {
	err = c.Status().Patch(ctx, obj, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}
