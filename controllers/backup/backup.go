// Package backup holds the EtcdBackup and EtcdBackupSchedule reconcilers: a backup is one Job
// that takes a snapshot of a cluster the install holds the claim of; a schedule creates
// backups, lets old ones go by its retention, and drills a restore of each new one.
package backup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/ownership"
	"github.com/quorate-dev/quorate/controllers/settle"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/resources"
	"github.com/quorate-dev/quorate/internal/storagepolicy"
	"github.com/quorate-dev/quorate/internal/uidpolicy"
)

// BackupReconciler takes EtcdBackups. Each backup is one Job (named after it) that runs
// quorate-backup save with the bucket's credentials; the Job reports its result as its pod's
// termination message, which becomes the backup's status. The operator never reads the
// credentials, and never holds the snapshot.
type BackupReconciler struct {
	client.Client
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	Images    resources.Images
	UIDs      *uidpolicy.Policy
	Ownership *ownership.Ownership
	// APIReader reads the claims (Leases), and a finished Job's pods, without caching them.
	APIReader client.Reader
	// StoragePolicy is the administrator's rule for storage locations.
	StoragePolicy storagepolicy.Policy
	// RefusalGrace is how long a backup waits for a missing ServiceAccount, or for an
	// admission denial of its Job to go away, before it fails (0: DefaultRefusalGrace).
	RefusalGrace time.Duration
}

// +kubebuilder:rbac:groups=etcd.quorate.dev,resources=etcdbackups,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=etcd.quorate.dev,resources=etcdbackups/status,verbs=get;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get

// Reconcile moves one EtcdBackup along: Pending until its cluster can be backed up, Running
// while its Job runs, then Completed or Failed for good.
func (r *BackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &v1alpha1.EtcdBackup{}
	if err := r.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.Status.Phase == v1alpha1.BackupCompleted {
		return ctrl.Result{}, r.restoreGauges(ctx, b)
	}
	if b.Status.Phase == v1alpha1.BackupFailed || !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	original := b.DeepCopy()
	res, err := r.step(ctx, b)
	if _, serr := settle.PatchStatus(ctx, r.Client, b, original); serr != nil {
		return settle.Result(ctx, ctrl.Result{}, errors.Join(err, serr))
	}
	return settle.Result(ctx, res, err)
}

// restoreGauges shows a completed backup in the last-backup gauges unless they show a newer
// one: the controller reads every backup when the operator starts, so the gauges (and the
// alerts on them) are true again after a restart or an upgrade. A backup of a cluster that is
// gone is not shown: its series went with the cluster.
func (r *BackupReconciler) restoreGauges(ctx context.Context, b *v1alpha1.EtcdBackup) error {
	if b.Status.CompletionTime == nil || !b.DeletionTimestamp.IsZero() {
		return nil
	}
	c := &v1alpha1.EtcdCluster{}
	err := r.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.ClusterName}, c)
	if apierrors.IsNotFound(err) || err == nil && (!c.DeletionTimestamp.IsZero() || c.CreationTimestamp.After(b.Status.CompletionTime.Time)) {
		// Gone, going, or a newer cluster of the same name: the backup is not of it.
		return nil
	}
	if err != nil {
		return err
	}
	metrics.RestoreLastBackup(b.Namespace, b.Spec.ClusterName, b.Status.Size, b.Status.CompletionTime.Time)
	return nil
}

func (r *BackupReconciler) step(ctx context.Context, b *v1alpha1.EtcdBackup) (ctrl.Result, error) {
	job := &batchv1.Job{}
	key := types.NamespacedName{Namespace: b.Namespace, Name: resources.BackupJobName(b.Name)}
	err := r.Get(ctx, key, job)
	switch {
	case apierrors.IsNotFound(err) && b.Status.Phase == v1alpha1.BackupRunning:
		return r.jobGone(ctx, b, key)
	case apierrors.IsNotFound(err):
		return r.start(ctx, b)
	case err != nil:
		return ctrl.Result{}, err
	}
	if !metav1.IsControlledBy(job, b) {
		r.setPhase(b, v1alpha1.BackupFailed, v1alpha1.ReasonBackupFailed, fmt.Sprintf("Job %s exists and is not this backup's: delete it, or name the backup differently", job.Name))
		return ctrl.Result{}, nil
	}
	done, failed := jobFinished(job)
	if !done {
		r.setPhase(b, v1alpha1.BackupRunning, v1alpha1.ReasonBackupRunning, "Job "+job.Name+" takes the snapshot")
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	result, rerr := finishedJobResult(ctx, r.Client, r.APIReader, job)
	switch {
	case !failed && rerr == nil && result.Kind == backup.ResultStored && result.Info != nil:
		b.Status.Member, b.Status.Location, b.Status.Key = result.Member, result.Location, result.Key
		i := result.Info
		b.Status.Revision, b.Status.Keys, b.Status.KeyspaceSHA256 = i.Revision, i.Keys, i.Hash
		b.Status.Size, b.Status.SHA256, b.Status.EtcdVersion, b.Status.ClusterID = i.Size, i.SHA256, i.Version, i.ClusterID
		msg := fmt.Sprintf("stored %s (%d bytes, revision %d, %d keys) from %s and verified it", result.Location, i.Size, i.Revision, i.Keys, result.Member)
		r.setPhase(b, v1alpha1.BackupCompleted, v1alpha1.ReasonBackupStored, msg)
		r.Recorder.Event(b, corev1.EventTypeNormal, v1alpha1.EventBackupCompleted, msg)
		metrics.RecordBackup(b.Namespace, b.Spec.ClusterName, true, i.Size, time.Now())
		r.retentionEvents(b, result)
	default:
		why, reason := "the Job failed without a result: see its pod's log", v1alpha1.ReasonBackupFailed
		if rerr == nil && result.Error != "" {
			why = result.Error
			if slices.Contains(v1alpha1.StoreReasons, result.Reason) {
				reason = result.Reason
			}
		} else if rerr != nil && !errors.Is(rerr, backup.ErrNoResult) {
			why = rerr.Error()
		} else if c := jobCondition(job); c != "" {
			why = c
		}
		return r.failFor(b, reason, why)
	}
	now := metav1.Now()
	b.Status.CompletionTime = &now
	return ctrl.Result{}, nil
}

// fail ends the backup as Failed for why: condition, Warning Event, metric, completion time.
func (r *BackupReconciler) fail(b *v1alpha1.EtcdBackup, why string) (ctrl.Result, error) {
	return r.failFor(b, v1alpha1.ReasonBackupFailed, why)
}

// failFor is fail with the condition's reason: a store's failure has its own (the Event's
// reason stays BackupFailed).
func (r *BackupReconciler) failFor(b *v1alpha1.EtcdBackup, reason, why string) (ctrl.Result, error) {
	r.setPhase(b, v1alpha1.BackupFailed, reason, why)
	r.Recorder.Event(b, corev1.EventTypeWarning, v1alpha1.EventBackupFailed, why)
	metrics.RecordBackup(b.Namespace, b.Spec.ClusterName, false, 0, time.Now())
	now := metav1.Now()
	b.Status.CompletionTime = &now
	return ctrl.Result{}, nil
}

// jobGone handles a running backup whose Job the cache does not hold: the cache may not have
// seen the Job created a moment ago (then the API server has it), or the Job is gone before its
// result was read: deleted, or removed a day after it finished (ttlSecondsAfterFinished) while
// the operator was down. A gone Job fails the backup; it is not taken again under its name and
// time.
func (r *BackupReconciler) jobGone(ctx context.Context, b *v1alpha1.EtcdBackup, key types.NamespacedName) (ctrl.Result, error) {
	if r.APIReader != nil {
		err := r.APIReader.Get(ctx, key, &batchv1.Job{})
		if err == nil {
			return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
		}
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
	}
	return r.fail(b, fmt.Sprintf("Job %s is gone before its result was read (deleted, or removed a day after it finished while the operator was down): what it stored is not verified; take a new backup", key.Name))
}

// start creates the backup's Job once the cluster can be backed up: it exists, is managed by
// this install, has a recorded cluster ID, and is Available.
func (r *BackupReconciler) start(ctx context.Context, b *v1alpha1.EtcdBackup) (ctrl.Result, error) {
	target, why, err := backupTarget(ctx, r.Client, r.APIReader, r.Ownership, b.Namespace, b.Spec.ClusterName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if why != "" {
		r.setPhase(b, v1alpha1.BackupPending, v1alpha1.ReasonWaitingForCluster, why)
		return ctrl.Result{RequeueAfter: 15 * time.Second}, nil
	}
	// The install that manages the cluster judges its backups by its own policy.
	if err := r.StoragePolicy.Check(b.Spec.Storage); err != nil {
		return r.failFor(b, v1alpha1.ReasonStorageNotAllowed, err.Error())
	}
	retain, err := r.scheduleRetention(ctx, b, target.ClusterID)
	if err != nil {
		return ctrl.Result{}, err
	}
	im := r.Images
	if im.UIDs, err = r.UIDs.Choice(ctx, b.Namespace); err != nil {
		return ctrl.Result{}, err
	}
	// A ServiceAccount applied with the backup (GitOps) may come a moment later: the backup
	// waits for it a while, then fails, as its Job could never create a pod.
	grace := time.Since(b.CreationTimestamp.Time) < cmp.Or(r.RefusalGrace, DefaultRefusalGrace)
	if why, err := r.identityMissing(ctx, b); err != nil || why != "" {
		if err != nil {
			return ctrl.Result{}, err
		}
		if grace {
			r.setPhase(b, v1alpha1.BackupPending, v1alpha1.ReasonIdentityNotFound, why)
			return ctrl.Result{RequeueAfter: 15 * time.Second}, nil
		}
		return r.failFor(b, v1alpha1.ReasonIdentityNotFound, why)
	}
	job := resources.BackupJob(b, target, retain, im)
	if err := r.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		// An invalid Job is final for this backup (its spec cannot change); an admission
		// denial once it persists (a policy engine may deny while it syncs); anything else
		// (RBAC being set up, a quota) is tried again.
		if apierrors.IsInvalid(err) || (admissionDenied(err) && !grace) {
			return r.failFor(b, v1alpha1.ReasonJobRefused, fmt.Sprintf("the API server refused the backup's Job %s: %v: correct what it names (the storage's identity, or an admission policy of the namespace), then create a new backup", job.Name, err))
		}
		return ctrl.Result{}, fmt.Errorf("creating Job %s: %w", job.Name, err)
	}
	now := metav1.Now()
	b.Status.StartTime = &now
	r.setPhase(b, v1alpha1.BackupRunning, v1alpha1.ReasonBackupRunning, "Job "+job.Name+" takes the snapshot")
	r.Recorder.Eventf(b, corev1.EventTypeNormal, v1alpha1.EventBackupStarted, "Job %s takes a snapshot of %s to %s", job.Name, b.Spec.ClusterName,
		backup.Location{Bucket: b.Spec.Storage.BucketURL, Key: resources.BackupKey(b)})
	return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
}

// DefaultRefusalGrace is how long a backup waits for a missing ServiceAccount, or for an
// admission denial to go away, before it fails.
const DefaultRefusalGrace = 2 * time.Minute

// admissionDenied is a Job creation an admission webhook or policy denied (not RBAC, a quota
// or a terminating namespace, which come and go).
func admissionDenied(err error) bool {
	msg := err.Error()
	return apierrors.IsForbidden(err) && (strings.Contains(msg, "denied the request") || strings.Contains(msg, "denied request"))
}

// identityMissing says why the backup cannot run when storage.identity names a ServiceAccount
// that does not exist: its Job could never create a pod, and the backup would wait for its
// deadline. Read uncached, as the operator does not watch ServiceAccounts; a reader that may
// not (an older role) lets the Job go ahead.
func (r *BackupReconciler) identityMissing(ctx context.Context, b *v1alpha1.EtcdBackup) (string, error) {
	id := b.Spec.Storage.Identity
	if id == nil || id.ServiceAccountName == "" || r.APIReader == nil {
		return "", nil
	}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: id.ServiceAccountName}, &corev1.ServiceAccount{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("storage.identity.serviceAccountName %q is not a ServiceAccount of namespace %s: create it (with the annotations your cloud's workload identity needs) or correct the name, then create a new backup", id.ServiceAccountName, b.Namespace), nil
	case apierrors.IsForbidden(err):
		return "", nil
	}
	return "", err
}

// retentionEvents tells what the retention of a stored backup did, and what of it failed.
func (r *BackupReconciler) retentionEvents(b *v1alpha1.EtcdBackup, result *backup.Result) {
	if n := max(result.ExpiredCount, len(result.Expired)); n > 0 {
		more := ""
		if n > len(result.Expired) {
			more = fmt.Sprintf(" and %d more (the Job's log names them)", n-len(result.Expired))
		}
		r.Recorder.Eventf(b, corev1.EventTypeNormal, v1alpha1.EventBackupsExpired, "retention deleted %d stored snapshots: %v%s", n, result.Expired, more)
	}
	if result.PrunedSegments > 0 {
		r.Recorder.Eventf(b, corev1.EventTypeNormal, v1alpha1.EventArchivePruned, "retention deleted %d archive segments that no stored snapshot of the cluster needs any more (the Job's log names their revisions)", result.PrunedSegments)
	}
	if result.RetentionError != "" {
		r.Recorder.Eventf(b, corev1.EventTypeWarning, v1alpha1.EventRetentionFailed, "the backup is stored and verified, but its retention did not finish; the next backup tries again: %s", result.RetentionError)
	}
}

// scheduleRetention is the retention of the schedule that created the backup, if any.
func (r *BackupReconciler) scheduleRetention(ctx context.Context, b *v1alpha1.EtcdBackup, clusterID string) (*resources.Retain, error) {
	name := b.Labels[names.LabelSchedule]
	if name == "" {
		return nil, nil
	}
	s := &v1alpha1.EtcdBackupSchedule{}
	err := r.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: name}, s)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	ret := resources.RetainOf(s)
	if ret.Archive != "" {
		if ret.Keep, err = r.archiveKeep(ctx, b, clusterID); err != nil {
			return nil, err
		}
	}
	return ret, nil
}

// archiveKeep is, per cluster ID, the oldest revision of the completed backups of b's cluster
// made by hand in the same bucket, under any prefix: a restore to a point of one of them
// replays the schedule's archive, so its retention keeps the segments they need, besides
// those of the snapshots it finds in its own prefix. While such a backup is not finished
// (its revision unknown yet), the cluster's current archive (clusterID) is not pruned. Read
// from the API server: a backup the cache has not seen complete must not be missed.
func (r *BackupReconciler) archiveKeep(ctx context.Context, b *v1alpha1.EtcdBackup, clusterID string) (map[string]int64, error) {
	reader := client.Reader(r.Client)
	if r.APIReader != nil {
		reader = r.APIReader
	}
	var list v1alpha1.EtcdBackupList
	if err := reader.List(ctx, &list, client.InNamespace(b.Namespace)); err != nil {
		return nil, err
	}
	keep := map[string]int64{}
	add := func(id string, rev int64) {
		if old, ok := keep[id]; !ok || rev < old {
			keep[id] = rev
		}
	}
	for _, o := range list.Items {
		if o.Spec.ClusterName != b.Spec.ClusterName || o.Spec.Storage.BucketURL != b.Spec.Storage.BucketURL || o.Labels[names.LabelSchedule] != "" || !o.DeletionTimestamp.IsZero() {
			continue
		}
		switch {
		case o.Status.Phase == v1alpha1.BackupCompleted && o.Status.ClusterID != "" && o.Status.Revision > 0:
			add(o.Status.ClusterID, o.Status.Revision)
		case o.Status.Phase != v1alpha1.BackupCompleted && o.Status.Phase != v1alpha1.BackupFailed && clusterID != "":
			add(clusterID, 0)
		}
	}
	return keep, nil
}

func (r *BackupReconciler) setPhase(b *v1alpha1.EtcdBackup, phase, reason, msg string) {
	b.Status.Phase = phase
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionBackupComplete,
		Status: conditionStatus(phase == v1alpha1.BackupCompleted), Reason: reason, Message: msg, ObservedGeneration: b.Generation})
}

func conditionStatus(ok bool) metav1.ConditionStatus {
	if ok {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// backupTarget is the cluster a Job works on, or why it cannot yet: it does not exist, another
// install holds its claim, it has no recorded cluster ID, or it is not Available.
func backupTarget(ctx context.Context, c client.Client, reader client.Reader, o *ownership.Ownership, namespace, cluster string) (resources.JobTarget, string, error) {
	ec := &v1alpha1.EtcdCluster{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: cluster}, ec); err != nil {
		if apierrors.IsNotFound(err) {
			return resources.JobTarget{}, fmt.Sprintf("EtcdCluster %s does not exist in %s", cluster, namespace), nil
		}
		return resources.JobTarget{}, "", err
	}
	if held, holder, err := o.Holds(ctx, reader, ec); err != nil {
		return resources.JobTarget{}, "", err
	} else if !held {
		return resources.JobTarget{}, fmt.Sprintf("EtcdCluster %s is managed by another Quorate install (%s), which takes its backups", cluster, holder), nil
	}
	if ec.Spec.Hibernate {
		return resources.JobTarget{}, fmt.Sprintf("EtcdCluster %s is hibernated (spec.hibernate): no member runs to take a snapshot from; the backup waits until the cluster is woken and Available", cluster), nil
	}
	available := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionAvailable)
	if ec.Status.ClusterID == "" || available == nil || available.Status != metav1.ConditionTrue {
		return resources.JobTarget{}, fmt.Sprintf("EtcdCluster %s is not Available yet", cluster), nil
	}
	t := resources.JobTarget{Cluster: ec, ClusterID: ec.Status.ClusterID}
	for _, m := range ec.Status.Members {
		if !m.Learner {
			t.Members = append(t.Members, m.Name)
		}
	}
	if ec.Spec.TLS.IsEnabled() {
		t.TLSSecret = names.OperatorSecret(ec.Name)
		if ec.Spec.TLS.UserProvided() {
			t.TLSSecret = ec.Spec.TLS.ClientSecretName
		}
	}
	return t, "", nil
}

// jobFinished reports whether a Job is done, and whether it failed.
func jobFinished(j *batchv1.Job) (done, failed bool) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, false
		case batchv1.JobFailed:
			return true, true
		}
	}
	return false, false
}

// jobCondition is the message of a failed Job's Failed condition (a deadline, say).
func jobCondition(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return fmt.Sprintf("Job %s failed: %s: %s", j.Name, c.Reason, c.Message)
		}
	}
	return ""
}

// finishedJobResult is the result of a finished Job. The Job and its pods come through
// different watches, so the cache can hold the finished Job before its pod's termination
// message: without a result in the cache, the pods are read from the API server (live) before
// the Job counts as having left none, which ends a backup or a drill for good.
func finishedJobResult(ctx context.Context, cache, live client.Reader, j *batchv1.Job) (*backup.Result, error) {
	res, err := jobResult(ctx, cache, j)
	if errors.Is(err, backup.ErrNoResult) && live != nil {
		return jobResult(ctx, live, j)
	}
	return res, err
}

// jobResult reads the result quorate-backup left in the termination message of the Job's
// newest pod. Only a pod the Job controls counts: anyone who may create pods in the namespace
// can give one the Job's label, and its termination message would otherwise forge a
// completed backup or a passed drill. (A controller reference can be written too, but who may
// create pods there may mount the cluster's root Secret already: docs/design.md, "Backups".)
func jobResult(ctx context.Context, c client.Reader, j *batchv1.Job) (*backup.Result, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels{batchv1.JobNameLabel: j.Name}); err != nil {
		return nil, err
	}
	var newest *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if !metav1.IsControlledBy(p, j) {
			continue
		}
		if newest == nil || p.CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = p
		}
	}
	if newest == nil {
		return nil, fmt.Errorf("%w: Job %s has no pod left", backup.ErrNoResult, j.Name)
	}
	for _, cs := range newest.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return backup.ParseResult(t.Message)
		}
	}
	return nil, fmt.Errorf("%w: pod %s has not ended", backup.ErrNoResult, newest.Name)
}

// pendingBackups are the backups of a cluster that have not started.
func (r *BackupReconciler) pendingBackups(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha1.EtcdBackupList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, b := range list.Items {
		if b.Spec.ClusterName == obj.GetName() && (b.Status.Phase == "" || b.Status.Phase == v1alpha1.BackupPending) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
		}
	}
	return out
}

// SetupWithManager registers the controller.
func (r *BackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.EtcdBackup{}).
		Owns(&batchv1.Job{}).
		// A backup waiting for its cluster goes on as soon as the cluster changes.
		Watches(&v1alpha1.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(r.pendingBackups)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Named("etcdbackup").
		Complete(r)
}
