package backup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/ownership"
	"github.com/quorate-dev/quorate/controllers/settle"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/cronspec"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/resources"
	"github.com/quorate-dev/quorate/internal/storagepolicy"
	"github.com/quorate-dev/quorate/internal/uidpolicy"
)

// ScheduleReconciler runs EtcdBackupSchedules: it creates an EtcdBackup at each scheduled
// time (one at a time), deletes the backups its retention lets go (the backup Jobs delete
// their objects), and, with drills on, restores each new backup into a scratch EtcdCluster,
// compares its keyspace with the backup's record, and removes the scratch cluster.
type ScheduleReconciler struct {
	client.Client
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	Images    resources.Images
	UIDs      *uidpolicy.Policy
	Ownership *ownership.Ownership
	APIReader client.Reader
	// Now is the clock (tests set it).
	Now func() time.Time
	// StoragePolicy is the administrator's rule for storage locations.
	StoragePolicy storagepolicy.Policy
	// DrillDeadline bounds how long a drill's cluster may take to become Available.
	DrillDeadline time.Duration
	// MinInterval is the shortest time allowed between two runs of a schedule (0: no
	// minimum); a schedule that runs more often is refused (InvalidSchedule).
	MinInterval time.Duration
	// ReadArchive reads an archiver's report (tests set it; nil: over HTTP).
	ReadArchive ReadArchive
}

// DefaultMinInterval is the shortest time allowed between two runs of a schedule, unless the
// operator is told otherwise (--min-backup-interval): each run takes a whole snapshot.
const DefaultMinInterval = 15 * time.Second

// +kubebuilder:rbac:groups=etcd.quorate.dev,resources=etcdbackupschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.quorate.dev,resources=etcdbackupschedules/status,verbs=get;patch
// +kubebuilder:rbac:groups=etcd.quorate.dev,resources=etcdclusters,verbs=create;delete

// DrillCluster is the name of a schedule's scratch cluster.
func DrillCluster(schedule string) string { return schedule + "-drill" }

func drillJob(schedule string) string { return schedule + "-drill-verify" }

// Reconcile is one pass over a schedule.
func (r *ScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// The schedule is read from the API server, not the cache: a pass that started from a copy
	// older than the last status write (a drill just ended and its cluster deleted) would start
	// that drill again. Schedules are few; one read per pass.
	s := &v1alpha1.EtcdBackupSchedule{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, s); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.ForgetSchedule(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !s.DeletionTimestamp.IsZero() {
		metrics.ForgetSchedule(req.Namespace, req.Name)
		return ctrl.Result{}, nil
	}
	if d := s.Status.LastDrill; d != nil && r.clusterExists(ctx, s.Namespace, s.Spec.ClusterName) {
		// The last drill's outcome, from status: the drill gauges are true after a restart
		// (not for a cluster that is gone: its series went with it).
		metrics.RecordDrill(s.Namespace, s.Name, s.Spec.ClusterName, d.Passed, d.Time.Time)
	}
	original := s.DeepCopy()
	res, err := r.pass(ctx, s)
	if _, serr := settle.PatchStatus(ctx, r.Client, s, original); serr != nil {
		return settle.Result(ctx, ctrl.Result{}, errors.Join(err, serr))
	}
	return settle.Result(ctx, res, err)
}

// clusterExists says whether the cache holds the EtcdCluster, and it is not being deleted.
func (r *ScheduleReconciler) clusterExists(ctx context.Context, namespace, name string) bool {
	c := &v1alpha1.EtcdCluster{}
	return r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, c) == nil && c.DeletionTimestamp.IsZero()
}

func (r *ScheduleReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *ScheduleReconciler) pass(ctx context.Context, s *v1alpha1.EtcdBackupSchedule) (ctrl.Result, error) {
	sched, err := cronspec.Parse(s.Spec.Schedule, r.MinInterval)
	if err != nil {
		why := fmt.Sprintf("spec.schedule %q %v: use five cron fields such as \"0 */6 * * *\", or @hourly, @daily, @every 30m", s.Spec.Schedule, err)
		r.condition(s, v1alpha1.ConditionScheduleReady, false, v1alpha1.ReasonInvalidSchedule, why)
		if s.Status.Drilling != "" {
			// A drill under way ends, and its scratch cluster goes: nothing drives it on.
			return ctrl.Result{}, r.endDrill(ctx, s, false, "the drill was stopped: "+why)
		}
		return ctrl.Result{}, nil
	}
	src := &v1alpha1.EtcdCluster{}
	switch err := r.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Spec.ClusterName}, src); {
	case err == nil:
		held, _, err := r.Ownership.Holds(ctx, r.APIReader, src)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !held {
			// The install that manages the cluster runs its schedules.
			return ctrl.Result{RequeueAfter: time.Minute}, nil
		}
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	// The install that manages the cluster judges its schedules by its own policy.
	if err := r.StoragePolicy.Check(s.Spec.Storage); err != nil {
		why := err.Error() + "; the schedule takes no backup meanwhile"
		r.condition(s, v1alpha1.ConditionScheduleReady, false, v1alpha1.ReasonStorageNotAllowed, why)
		if err := r.archiveNotAllowed(ctx, s, err); err != nil {
			return ctrl.Result{}, err
		}
		if s.Status.Drilling != "" {
			return ctrl.Result{}, r.endDrill(ctx, s, false, "the drill was stopped: "+why)
		}
		return ctrl.Result{}, nil
	}
	var list v1alpha1.EtcdBackupList
	if err := r.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels{names.LabelSchedule: s.Name}); err != nil {
		return ctrl.Result{}, err
	}
	backups := list.Items
	sort.Slice(backups, func(i, j int) bool { return backups[i].CreationTimestamp.Before(&backups[j].CreationTimestamp) })
	now := r.now()
	next := r.nextRun(s, sched, now)

	running := false
	for _, b := range backups {
		if b.Status.Phase != v1alpha1.BackupCompleted && b.Status.Phase != v1alpha1.BackupFailed {
			running = true
		}
	}
	if !s.Spec.Suspend && !running && !next.After(now) {
		if err := r.createBackup(ctx, s, next); err != nil {
			return ctrl.Result{}, err
		}
		next = sched.Next(now)
	}
	if err := r.expire(ctx, s, backups, now); err != nil {
		return ctrl.Result{}, err
	}
	r.reportLast(s, backups)
	wait := next.Sub(now)
	if s.Spec.Suspend {
		wait = time.Hour
	}
	if wait, err = r.archive(ctx, s, wait); err != nil {
		return ctrl.Result{}, err
	}
	if s.Spec.Drill.Enabled {
		drilling, err := r.drill(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		if drilling {
			wait = min(wait, 10*time.Second)
		}
	}
	return ctrl.Result{RequeueAfter: max(wait, time.Second)}, nil
}

// nextRun is the first scheduled time after the last one the schedule ran (its creation when
// it never ran). A schedule that missed several runs (the operator was down) runs once.
func (r *ScheduleReconciler) nextRun(s *v1alpha1.EtcdBackupSchedule, sched cron.Schedule, now time.Time) time.Time {
	from := s.CreationTimestamp.Time
	if s.Status.LastScheduleTime != nil {
		from = s.Status.LastScheduleTime.Time
	}
	next := sched.Next(from)
	for {
		after := sched.Next(next)
		if after.After(now) {
			return next
		}
		next = after
	}
}

// createBackup creates the EtcdBackup of the run scheduled at t; its name is derived from t,
// so a pass that runs again after a crash finds it instead of taking a second one.
func (r *ScheduleReconciler) createBackup(ctx context.Context, s *v1alpha1.EtcdBackupSchedule, t time.Time) error {
	name := fmt.Sprintf("%s-%s", s.Name, t.UTC().Format(backup.ScheduleTimeFormat))
	b := &v1alpha1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace,
			Labels:          map[string]string{names.LabelSchedule: s.Name, names.LabelCluster: s.Spec.ClusterName},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(s, v1alpha1.GroupVersion.WithKind("EtcdBackupSchedule"))}},
		Spec: v1alpha1.EtcdBackupSpec{ClusterName: s.Spec.ClusterName, Storage: s.Spec.Storage},
	}
	if err := r.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		if apierrors.IsInvalid(err) {
			// A schedule stored before a validation rule it breaks: its backups are refused.
			r.condition(s, v1alpha1.ConditionScheduleReady, false, v1alpha1.ReasonInvalidSchedule,
				fmt.Sprintf("the API server refuses this schedule's EtcdBackup %s: %v: correct the schedule's spec", name, err))
		}
		return fmt.Errorf("creating EtcdBackup %s: %w", name, err)
	}
	s.Status.LastScheduleTime = &metav1.Time{Time: t}
	s.Status.LastBackup = name
	return nil
}

// expire deletes the completed backups the retention lets go (the newest is always kept), and
// failed backups older than the newest completed one but the last three.
func (r *ScheduleReconciler) expire(ctx context.Context, s *v1alpha1.EtcdBackupSchedule, backups []v1alpha1.EtcdBackup, now time.Time) error {
	completed := map[string]time.Time{}
	var failed []string
	for _, b := range backups {
		switch b.Status.Phase {
		case v1alpha1.BackupCompleted:
			// The time the schedule named it by, as the Job's retention of the stored
			// snapshots takes it: both keep the same backups.
			at, ok := backup.ScheduledTime(b.Name)
			if !ok {
				at = b.CreationTimestamp.Time
			}
			completed[b.Name] = at
		case v1alpha1.BackupFailed:
			failed = append(failed, b.Name)
		}
	}
	ret := resources.RetainOf(s).Retention
	expired := ret.Expired(completed, now)
	if len(failed) > 3 {
		expired = append(expired, failed[:len(failed)-3]...)
	}
	for _, name := range expired {
		if name == s.Status.Drilling {
			continue // the drill restores it now
		}
		b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace}}
		if err := r.Delete(ctx, b, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting expired EtcdBackup %s: %w", name, err)
		}
	}
	if len(expired) > 0 {
		r.Recorder.Eventf(s, corev1.EventTypeNormal, v1alpha1.EventBackupsExpired, "retention (%v) deleted EtcdBackups %v; their Jobs delete the stored snapshots",
			ret, expired)
	}
	return nil
}

// reportLast sets Ready from the newest finished backup.
func (r *ScheduleReconciler) reportLast(s *v1alpha1.EtcdBackupSchedule, backups []v1alpha1.EtcdBackup) {
	for i := len(backups) - 1; i >= 0; i-- {
		b := backups[i]
		switch b.Status.Phase {
		case v1alpha1.BackupCompleted:
			s.Status.LastCompletedBackup = b.Name
			r.condition(s, v1alpha1.ConditionScheduleReady, true, v1alpha1.ReasonLastBackupCompleted,
				fmt.Sprintf("EtcdBackup %s completed: %s", b.Name, b.Status.Location))
			return
		case v1alpha1.BackupFailed:
			msg := "EtcdBackup " + b.Name + " failed"
			if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionBackupComplete); c != nil {
				msg += ": " + c.Message
			}
			r.condition(s, v1alpha1.ConditionScheduleReady, false, v1alpha1.ReasonLastBackupFailed, msg)
			return
		}
	}
	if meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionScheduleReady) == nil || s.Status.LastCompletedBackup == "" {
		r.condition(s, v1alpha1.ConditionScheduleReady, false, v1alpha1.ReasonNoBackupYet, "no backup of this schedule has completed yet")
	}
}

func (r *ScheduleReconciler) condition(s *v1alpha1.EtcdBackupSchedule, t string, ok bool, reason, msg string) {
	meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: t, Status: conditionStatus(ok), Reason: reason, Message: msg, ObservedGeneration: s.Generation})
}

// drill restores the newest completed backup into the schedule's scratch cluster, once per
// backup, and compares the keyspace. It reports whether a drill is under way.
func (r *ScheduleReconciler) drill(ctx context.Context, s *v1alpha1.EtcdBackupSchedule) (bool, error) {
	if s.Status.Drilling == "" {
		last := s.Status.LastCompletedBackup
		if last == "" || (s.Status.LastDrill != nil && s.Status.LastDrill.Backup == last) {
			return false, nil
		}
		return true, r.startDrill(ctx, s, last)
	}
	b := &v1alpha1.EtcdBackup{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Status.Drilling}, b); err != nil {
		if apierrors.IsNotFound(err) {
			return false, r.endDrill(ctx, s, false, "the backup was deleted during the drill")
		}
		return true, err
	}
	dc := &v1alpha1.EtcdCluster{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: DrillCluster(s.Name)}, dc); err != nil {
		if apierrors.IsNotFound(err) {
			return true, r.startDrill(ctx, s, s.Status.Drilling)
		}
		return true, err
	}
	if !metav1.IsControlledBy(dc, s) {
		return false, r.endDrill(ctx, s, false, fmt.Sprintf("EtcdCluster %s exists and is not this schedule's: a drill restores only into a cluster of that name that it creates, and it leaves this one alone; rename that cluster or the schedule", dc.Name))
	}
	available := meta.FindStatusCondition(dc.Status.Conditions, v1alpha1.ConditionAvailable)
	if available == nil || available.Status != metav1.ConditionTrue || dc.Status.ClusterID == "" {
		if r.now().Sub(dc.CreationTimestamp.Time) > r.drillDeadline() {
			why := fmt.Sprintf("the restored cluster %s did not become Available within %s", dc.Name, r.drillDeadline())
			for _, t := range []string{v1alpha1.ConditionDegraded, v1alpha1.ConditionProgressing} {
				if c := meta.FindStatusCondition(dc.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
					why += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
					break
				}
			}
			return false, r.endDrill(ctx, s, false, why)
		}
		return true, nil
	}
	job := &batchv1.Job{}
	err := r.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: drillJob(s.Name)}, job)
	if apierrors.IsNotFound(err) {
		target := resources.JobTarget{Cluster: dc, ClusterID: dc.Status.ClusterID, Members: []string{names.Member(dc.Name, 0)}, TLSSecret: names.OperatorSecret(dc.Name)}
		if len(dc.Status.Members) > 0 {
			target.Members = []string{dc.Status.Members[0].Name}
		}
		owner := *metav1.NewControllerRef(s, v1alpha1.GroupVersion.WithKind("EtcdBackupSchedule"))
		im := r.Images
		if im.UIDs, err = r.UIDs.Choice(ctx, s.Namespace); err != nil {
			return true, err
		}
		j := resources.VerifyJob(drillJob(s.Name), owner, target, b.Status.Revision, b.Status.Keys, b.Status.KeyspaceSHA256, im)
		if err := r.Create(ctx, j); err != nil && !apierrors.IsAlreadyExists(err) {
			return true, fmt.Errorf("creating the drill's Job: %w", err)
		}
		return true, nil
	}
	if err != nil {
		return true, err
	}
	if !metav1.IsControlledBy(job, s) {
		return false, r.endDrill(ctx, s, false, fmt.Sprintf("Job %s exists and is not this schedule's: a drill reads its result only from a Job it creates, and it leaves this one alone; delete or rename it", job.Name))
	}
	done, _ := jobFinished(job)
	if !done {
		return true, nil
	}
	res, err := finishedJobResult(ctx, r.Client, r.APIReader, job)
	switch {
	case err == nil && res.Kind == backup.ResultVerified:
		return false, r.endDrill(ctx, s, res.Matches, res.Message)
	case err == nil:
		return false, r.endDrill(ctx, s, false, "comparing the restored cluster failed: "+res.Error)
	default:
		return false, r.endDrill(ctx, s, false, "the drill's Job ended without a result: "+err.Error())
	}
}

func (r *ScheduleReconciler) drillDeadline() time.Duration {
	if r.DrillDeadline > 0 {
		return r.DrillDeadline
	}
	return 10 * time.Minute
}

// startDrill creates the scratch cluster restoring the backup: one member of the source's
// version and volume size, deleted with its volume when the drill ends.
func (r *ScheduleReconciler) startDrill(ctx context.Context, s *v1alpha1.EtcdBackupSchedule, backupName string) error {
	src := &v1alpha1.EtcdCluster{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Spec.ClusterName}, src); err != nil {
		return fmt.Errorf("reading the source cluster for the drill: %w", err)
	}
	dc := &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: DrillCluster(s.Name), Namespace: s.Namespace,
			Labels:          map[string]string{names.LabelSchedule: s.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(s, v1alpha1.GroupVersion.WithKind("EtcdBackupSchedule"))}},
		Spec: v1alpha1.EtcdClusterSpec{
			Replicas: 1, Version: src.Spec.Version, Image: src.Spec.Image,
			Storage:         v1alpha1.StorageSpec{Size: drillSize(src), StorageClassName: s.Spec.Drill.StorageClassName},
			Etcd:            v1alpha1.EtcdOptions{QuotaBackendBytes: src.Spec.Etcd.QuotaBackendBytes},
			VolumeRetention: "Delete",
			Bootstrap:       &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{BackupName: backupName}},
		},
	}
	if err := r.Create(ctx, dc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the drill's cluster %s: %w", dc.Name, err)
	}
	if s.Status.Drilling != backupName {
		r.Recorder.Eventf(s, corev1.EventTypeNormal, v1alpha1.EventDrillStarted, "restoring EtcdBackup %s into EtcdCluster %s", backupName, dc.Name)
	}
	s.Status.Drilling = backupName
	r.condition(s, v1alpha1.ConditionRestoreVerified, false, v1alpha1.ReasonDrilling, fmt.Sprintf("restoring EtcdBackup %s into EtcdCluster %s", backupName, dc.Name))
	return nil
}

// drillSize is the drill's volume: the source's, or more where the source's quota does not fit
// in it beside etcd's log (a cluster created before the API refused that), so that the API takes
// the drill's cluster with the source's quota.
func drillSize(src *v1alpha1.EtcdCluster) resource.Quantity {
	size := src.Spec.Storage.Size.DeepCopy()
	if q := src.Spec.Etcd.QuotaBackendBytes; q > 0 && size.Value() < q+v1alpha1.WALReserve {
		size = *resource.NewQuantity(q+v1alpha1.WALReserve, resource.BinarySI)
	}
	return size
}

// endDrill records the drill's outcome and removes its Job and scratch cluster: only those the
// schedule controls, each by its UID, so that an object of the same name someone else made (or
// made again since the schedule's was read) is never deleted.
func (r *ScheduleReconciler) endDrill(ctx context.Context, s *v1alpha1.EtcdBackupSchedule, passed bool, msg string) error {
	for _, obj := range []client.Object{&batchv1.Job{}, &v1alpha1.EtcdCluster{}} {
		name := drillJob(s.Name)
		if _, ok := obj.(*v1alpha1.EtcdCluster); ok {
			name = DrillCluster(s.Name)
		}
		if err := r.deleteControlled(ctx, s, obj, name); err != nil {
			return fmt.Errorf("removing the drill's %s: %w", name, err)
		}
	}
	now := metav1.NewTime(r.now())
	s.Status.LastDrill = &v1alpha1.DrillResult{Backup: s.Status.Drilling, Passed: passed, Message: msg, Time: now}
	s.Status.Drilling = ""
	metrics.RecordDrill(s.Namespace, s.Name, s.Spec.ClusterName, passed, now.Time)
	if passed {
		r.condition(s, v1alpha1.ConditionRestoreVerified, true, v1alpha1.ReasonDrillPassed, "EtcdBackup "+s.Status.LastDrill.Backup+" restored: "+msg)
		r.Recorder.Eventf(s, corev1.EventTypeNormal, v1alpha1.EventDrillPassed, "EtcdBackup %s restored: %s", s.Status.LastDrill.Backup, msg)
		return nil
	}
	r.condition(s, v1alpha1.ConditionRestoreVerified, false, v1alpha1.ReasonDrillFailed, "EtcdBackup "+s.Status.LastDrill.Backup+": "+msg)
	r.Recorder.Eventf(s, corev1.EventTypeWarning, v1alpha1.EventDrillFailed, "EtcdBackup %s: %s", s.Status.LastDrill.Backup, msg)
	return nil
}

// deleteControlled deletes the object of that name into obj if s controls it, with its UID as
// a precondition; an object s does not control, or none, is left as it is.
func (r *ScheduleReconciler) deleteControlled(ctx context.Context, s *v1alpha1.EtcdBackupSchedule, obj client.Object, name string) error {
	if err := r.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: name}, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(obj, s) || !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	uid := obj.GetUID()
	err := r.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
	return client.IgnoreNotFound(err)
}

// SetupWithManager registers the controller.
func (r *ScheduleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.EtcdBackupSchedule{}).
		Owns(&v1alpha1.EtcdBackup{}).
		Owns(&v1alpha1.EtcdCluster{}).
		Owns(&batchv1.Job{}).
		Named("etcdbackupschedule").
		// An archiver that does not answer holds its schedule's pass for the report's timeout:
		// other schedules go on meanwhile.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}
