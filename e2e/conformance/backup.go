package conformance

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/backup/blobstore"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/resources"
)

// Backup scenarios (suite=backup): snapshots to a real S3 store on the cluster (versitygw,
// --install-s3) while the cluster is under load, restored and proved.

// BackupRestore, under load: a one-off backup, stored and verified; a new 3-member cluster
// restored from it, whose keyspace at the backup's revision is the one the backup recorded,
// under a new cluster ID; a schedule whose retention keeps two snapshots, leaves those of a
// second schedule whose name extends its own alone, and whose restore drill passes; and backups that cannot succeed (wrong keys, no such bucket, an endpoint that
// does not exist, a full disk) fail with an error that says why, leaving nothing stored.
func BackupRestore() framework.Scenario {
	var b *v1alpha1.EtcdBackup
	return framework.Scenario{Name: "backup-restore", Labels: map[string]string{label.Suite: label.SuiteBackup}, Replicas: 3, Class: framework.Planned,
		Needs: []framework.Prerequisite{framework.ObjectStore},
		Steps: append(backupAndRestore(&b, false), []framework.Step{
			{Name: "a restore that asks for another SHA-256 is refused, and starts nothing", Do: func(ctx context.Context, r *framework.Run) error {
				return wrongHashRefused(ctx, r, b)
			}},
			{Name: "scheduled backups with retention and a restore drill", Do: scheduleAndDrill},
			{Name: "backups that cannot succeed fail and say why", Do: badBackups},
		}...)}
}

// backupAndRestore are the steps that back the cluster up to the S3 store as b1 (*b) and
// restore it into the new EtcdCluster restored, whose keyspace must be the one recorded; the
// restored cluster is deleted after, unless keep.
func backupAndRestore(b **v1alpha1.EtcdBackup, keep bool) []framework.Step {
	return []framework.Step{
		{Name: "use the S3 store", Do: func(ctx context.Context, r *framework.Run) error {
			return r.UseS3(ctx)
		}},
		{Name: "back up to b1", Do: func(ctx context.Context, r *framework.Run) (err error) {
			r.Phase("backing up")
			*b, err = completedBackup(ctx, r, "b1", r.S3Storage("backups"))
			return err
		}},
		{Name: "restore b1 into a new cluster and verify its keyspace", Do: func(ctx context.Context, r *framework.Run) error {
			return restoreAndVerify(ctx, r, *b, v1alpha1.RestoreSource{BackupName: (*b).Name}, keep)
		}},
	}
}

// completedBackup backs the cluster up as name to storage; the backup must complete.
func completedBackup(ctx context.Context, r *framework.Run, name string, storage v1alpha1.BackupStorage) (*v1alpha1.EtcdBackup, error) {
	b, err := r.Backup(ctx, name, storage)
	if err != nil {
		return nil, err
	}
	if b.Status.Phase != v1alpha1.BackupCompleted {
		return nil, fmt.Errorf("EtcdBackup %s %s: %s", b.Name, b.Status.Phase, backupMessage(b))
	}
	return b, nil
}

// wrongHashRefused restores b's object with spec.bootstrap.fromBackup.sha256 naming another
// snapshot: the fetch must refuse it (blobstore.ErrHashMismatch, with both hashes), the
// bootstrap must stop saying so, and no member may start. The cluster is deleted after.
func wrongHashRefused(ctx context.Context, r *framework.Run, b *v1alpha1.EtcdBackup) error {
	src, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	other := fmt.Sprintf("%x", sha256.Sum256([]byte("another snapshot")))
	st := r.S3Storage("backups")
	name := "wrong-sha"
	c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace},
		Spec: v1alpha1.EtcdClusterSpec{Replicas: 1, Version: src.Spec.Version, Storage: v1alpha1.StorageSpec{Size: resource.MustParse("256Mi")},
			VolumeRetention: "Delete", Bootstrap: &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{Storage: &st, Key: b.Status.Key, SHA256: other}}}}
	r.Suite.Opts.Shape.Apply(&c.Spec)
	r.Phase("restoring " + b.Name + " asking for SHA-256 " + other[:12] + "…")
	if err := r.Suite.Client.Create(ctx, c); err != nil {
		return err
	}
	// Gone before the next step, so that its pod does not crash-loop beside it.
	defer func() {
		ctx := context.WithoutCancel(ctx)
		if err := r.Suite.Client.Delete(ctx, c); err != nil && !apierrors.IsNotFound(err) {
			r.T.Logf("deleting EtcdCluster %s: %v", name, err)
			return
		}
		if err := r.WaitFor(ctx, "EtcdCluster "+name+" to be gone", 3*time.Minute, func() error {
			err := r.Suite.Client.Get(ctx, client.ObjectKeyFromObject(c), &v1alpha1.EtcdCluster{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%v)", err)
		}); err != nil {
			r.T.Logf("%v", err)
		}
	}()
	refusal := fmt.Sprintf("%s: its SHA-256 is %s, the restore asks for %s", blobstore.ErrHashMismatch, b.Status.SHA256, other)
	var last string
	err = r.WaitFor(ctx, "the restore to refuse the snapshot", 5*time.Minute, func() error {
		got := &v1alpha1.EtcdCluster{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: name}, got); err != nil {
			return err
		}
		if got.Status.ClusterID != "" || got.Status.ReadyMembers > 0 {
			return fmt.Errorf("%w: EtcdCluster %s started (cluster ID %q, %d ready) from a snapshot whose SHA-256 is not the one asked for", framework.ErrStop, name, got.Status.ClusterID, got.Status.ReadyMembers)
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
		if cond == nil {
			return fmt.Errorf("no Progressing condition yet")
		}
		last = cond.Reason + ": " + cond.Message
		if cond.Reason != v1alpha1.ReasonBootstrapping || !strings.Contains(cond.Message, "does not start") || !strings.Contains(cond.Message, refusal) {
			return fmt.Errorf("condition Progressing is %s", last)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w (want Progressing %s saying %q)", err, v1alpha1.ReasonBootstrapping, refusal)
	}
	r.T.Logf("refused: %s", last)
	return nil
}

func backupMessage(b *v1alpha1.EtcdBackup) string {
	if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionBackupComplete); c != nil {
		return c.Message
	}
	return ""
}

// restoreAndVerify creates a 3-member cluster from the backup b, named by from (the
// EtcdBackup's name, or its storage and key), and compares its keyspace at the backup's
// revision with the backup's record.
func restoreAndVerify(ctx context.Context, r *framework.Run, b *v1alpha1.EtcdBackup, from v1alpha1.RestoreSource, keep bool) error {
	src, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	r.Phase("restoring " + b.Name + " into EtcdCluster restored")
	restored := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "restored", Namespace: r.Namespace},
		Spec: v1alpha1.EtcdClusterSpec{Replicas: 3, Version: src.Spec.Version, Storage: v1alpha1.StorageSpec{Size: resource.MustParse("256Mi")},
			VolumeRetention: "Delete", Bootstrap: &v1alpha1.BootstrapSpec{FromBackup: &from}}}
	r.Suite.Opts.Shape.Apply(&restored.Spec)
	what := "EtcdBackup " + b.Name
	if from.BackupName == "" {
		what = fmt.Sprintf("the snapshot of EtcdBackup %s at %s", b.Name, backup.Location{Bucket: from.Storage.BucketURL, Key: from.Key})
	}
	start := time.Now()
	end := r.Fault("restore", "EtcdCluster restored created from "+what)
	if err := r.Suite.Client.Create(ctx, restored); err != nil {
		return err
	}
	if err := r.WaitClusterSettled(ctx, "restored", 3, 5*time.Minute); err != nil {
		return err
	}
	end()
	got := &v1alpha1.EtcdCluster{}
	if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: "restored"}, got); err != nil {
		return err
	}
	if got.Status.ClusterID == "" || got.Status.ClusterID == src.Status.ClusterID {
		return fmt.Errorf("the restored cluster's ID is %q, the source's %q: a restore makes a new cluster", got.Status.ClusterID, src.Status.ClusterID)
	}
	tls := names.OperatorSecret("restored")
	res, err := r.RunTool(ctx, "verify-restored", []string{"verify",
		"--endpoint=" + names.ClientURL("restored", r.Namespace, "restored-0", true),
		fmt.Sprintf("--revision=%d", b.Status.Revision), fmt.Sprintf("--keys=%d", b.Status.Keys), "--keyspace-sha256=" + b.Status.KeyspaceSHA256,
		"--tls-dir=/tls", "--server-name=" + names.ClientHost("restored", r.Namespace)}, "",
		[]corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: tls}}}},
		[]corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}})
	if err != nil {
		return err
	}
	if res.Kind != backup.ResultVerified || !res.Matches {
		return fmt.Errorf("the restored cluster does not hold the backup's keyspace: %s %s", res.Message, res.Error)
	}
	r.Event("note", "restore-verified", fmt.Sprintf("restored in %s, cluster ID %s (source %s): %s", time.Since(start).Round(time.Second), got.Status.ClusterID, src.Status.ClusterID, res.Message))
	if keep {
		return nil
	}
	// The restored cluster goes (its volumes with it); the source keeps serving.
	return r.Suite.Client.Delete(ctx, got)
}

// scheduleAndDrill runs a schedule every 20 s keeping 2 snapshots, with restore drills, until
// it has taken three backups and a drill has passed; the bucket then holds exactly the two
// snapshots retention keeps. A second schedule whose name extends the first's shares its key
// prefix (".../every20s-"): every snapshot of it is still stored after the first's retention.
func scheduleAndDrill(ctx context.Context, r *framework.Run) error {
	r.Phase("scheduled backups with retention and a restore drill")
	s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "every20s", Namespace: r.Namespace},
		Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: r.Cluster, Schedule: "@every 20s", Storage: r.S3Storage("backups"),
			Retention: v1alpha1.BackupRetention{MaxCount: 2}, Drill: v1alpha1.RestoreDrill{Enabled: true}}}
	long := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: s.Name + "-long", Namespace: r.Namespace},
		Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: r.Cluster, Schedule: "@every 20s", Storage: r.S3Storage("backups"),
			Retention: v1alpha1.BackupRetention{MaxCount: 10}}}
	created, err := runSchedules(ctx, r, s, long)
	if err != nil {
		return err
	}
	if err := checkRetention(ctx, r, s, created); err != nil {
		return err
	}
	return checkAllStored(ctx, r, long, s)
}

// runSchedules creates both schedules, waits for three backups of s and a passed drill, and two
// backups of long, then suspends both; it returns how many backups of s completed.
func runSchedules(ctx context.Context, r *framework.Run, s, long *v1alpha1.EtcdBackupSchedule) (int, error) {
	for _, sch := range []*v1alpha1.EtcdBackupSchedule{s, long} {
		if err := r.Suite.Client.Create(ctx, sch); err != nil {
			return 0, err
		}
	}
	created, longCreated := map[string]bool{}, map[string]bool{}
	err := r.WaitFor(ctx, "three scheduled backups, a passed drill, and two of the second schedule", 8*time.Minute, func() error {
		for sch, done := range map[string]map[string]bool{s.Name: created, long.Name: longCreated} {
			if err := completedBackups(ctx, r, sch, done); err != nil {
				return err
			}
		}
		if err := r.Suite.Client.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return err
		}
		d := s.Status.LastDrill
		if d != nil && !d.Passed {
			return fmt.Errorf("%w: the restore drill of %s failed: %s", framework.ErrStop, d.Backup, d.Message)
		}
		if len(created) < 3 || d == nil || len(longCreated) < 2 {
			return fmt.Errorf("%d scheduled backups completed, %d of %s, last drill %+v", len(created), len(longCreated), long.Name, d)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	r.Event("note", "drill", fmt.Sprintf("restore drill of %s: %s", s.Status.LastDrill.Backup, s.Status.LastDrill.Message))
	for _, sch := range []*v1alpha1.EtcdBackupSchedule{s, long} {
		patch := client.MergeFrom(sch.DeepCopy())
		sch.Spec.Suspend = true
		if err := r.Suite.Client.Patch(ctx, sch, patch); err != nil {
			return 0, err
		}
	}
	return len(created), nil
}

// checkRetention: the EtcdBackups of s and its stored snapshots agree, two of each. They are
// compared until they agree: a backup that started before the schedule was suspended may still
// be finishing, and its Job applies retention to the bucket before the operator marks it
// Completed and deletes the EtcdBackup of the snapshot retention removed, so for a moment the
// two differ by one backup. A retention that never converges fails with the last difference.
func checkRetention(ctx context.Context, r *framework.Run, s *v1alpha1.EtcdBackupSchedule, created int) error {
	var kept []string
	err := r.WaitFor(ctx, "retention to leave two backups, stored and recorded alike", 2*time.Minute, func() error {
		var err error
		if kept, err = completedKeys(ctx, r, s.Name); err != nil {
			return err
		}
		if len(kept) != 2 {
			return fmt.Errorf("%d completed backups kept", len(kept))
		}
		stored, err := scheduleObjects(ctx, r, s)
		if err != nil {
			return err
		}
		if !slices.Equal(stored, kept) {
			return fmt.Errorf("the bucket holds %v of the schedule, the kept backups %v (%d completed in all)", stored, kept, created)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.Event("note", "retention", fmt.Sprintf("%d scheduled backups completed; kept and stored: %v", created, kept))
	return nil
}

// checkAllStored: every completed backup of long is still stored, although the retention of
// other, whose key prefix covers long's, ran after each of its backups.
// Compared until they agree, as in checkRetention: a backup of long that was finishing when the
// schedules were suspended is stored before its EtcdBackup is Completed.
func checkAllStored(ctx context.Context, r *framework.Run, long, other *v1alpha1.EtcdBackupSchedule) error {
	var kept []string
	err := r.WaitFor(ctx, "schedule "+long.Name+"'s completed backups to be stored", 2*time.Minute, func() error {
		var err error
		if kept, err = completedKeys(ctx, r, long.Name); err != nil {
			return err
		}
		stored, err := scheduleObjects(ctx, r, long)
		if err != nil {
			return err
		}
		if len(kept) < 2 || !slices.Equal(stored, kept) {
			return fmt.Errorf("the bucket holds %v of schedule %s, its completed backups %v: another schedule's retention deleted its snapshots", stored, long.Name, kept)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.Event("note", "retention", fmt.Sprintf("schedule %s's %d snapshots all kept beside %s's retention", long.Name, len(kept), other.Name))
	return nil
}

// completedKeys are the object keys of a schedule's completed EtcdBackups not being deleted,
// sorted.
func completedKeys(ctx context.Context, r *framework.Run, schedule string) ([]string, error) {
	var list v1alpha1.EtcdBackupList
	if err := r.Suite.Client.List(ctx, &list, client.InNamespace(r.Namespace), client.MatchingLabels{names.LabelSchedule: schedule}); err != nil {
		return nil, err
	}
	var keys []string
	for _, b := range list.Items {
		if b.DeletionTimestamp.IsZero() && b.Status.Phase == v1alpha1.BackupCompleted {
			keys = append(keys, b.Status.Key)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// completedBackups adds the completed EtcdBackups of a schedule to done; a failed one stops the
// wait.
func completedBackups(ctx context.Context, r *framework.Run, schedule string, done map[string]bool) error {
	var list v1alpha1.EtcdBackupList
	if err := r.Suite.Client.List(ctx, &list, client.InNamespace(r.Namespace), client.MatchingLabels{names.LabelSchedule: schedule}); err != nil {
		return err
	}
	for _, b := range list.Items {
		if b.Status.Phase == v1alpha1.BackupFailed {
			return fmt.Errorf("%w: scheduled EtcdBackup %s failed: %s", framework.ErrStop, b.Name, backupMessage(&b))
		}
		if b.Status.Phase == v1alpha1.BackupCompleted {
			done[b.Name] = true
		}
	}
	return nil
}

// scheduleObjects lists the snapshots of a schedule in the bucket, sorted: the objects under its
// key prefix that are its own (backup.OfSchedule), not those of a schedule whose name extends it.
func scheduleObjects(ctx context.Context, r *framework.Run, s *v1alpha1.EtcdBackupSchedule) ([]string, error) {
	prefix := resources.ScheduleKeyPrefix(s)
	listed, err := r.RunS3Tool(ctx, "list-"+s.Name, []string{"list", "--prefix=" + prefix}, "backups")
	if err != nil {
		return nil, err
	}
	var own []string
	for _, k := range listed.Objects {
		if backup.OfSchedule(prefix, k) {
			own = append(own, k)
		}
	}
	slices.Sort(own)
	return own, nil
}

// badBackups: each fails, says why, and stores nothing.
func badBackups(ctx context.Context, r *framework.Run) error {
	r.Phase("backups that cannot succeed")
	wrong := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-wrong", Namespace: r.Namespace},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": "nobody", "AWS_SECRET_ACCESS_KEY": "not-the-secret"}}
	if err := r.Suite.Client.Create(ctx, wrong); err != nil {
		return err
	}
	cases := []struct {
		name    string
		storage v1alpha1.BackupStorage
		want    string
	}{
		{"bad-keys", v1alpha1.BackupStorage{BucketURL: framework.BucketURL("backups"), CredentialsSecret: "s3-wrong"}, "refused the credentials"},
		{"no-bucket", framework.Storage("no-such-bucket"), "does not exist"},
		{"no-endpoint", v1alpha1.BackupStorage{BucketURL: "s3://backups?endpoint=http://nothing-here.quorate-s3.svc:7070&region=us-east-1&use_path_style=true",
			CredentialsSecret: framework.S3Credentials}, "the storage's endpoint does not answer"},
		{"full-disk", framework.Storage("tiny"), "the storage is out of space"},
	}
	for _, c := range cases {
		b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: r.Namespace}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: r.Cluster, Storage: c.storage}}
		if err := r.Suite.Client.Create(ctx, b); err != nil {
			return err
		}
	}
	var problems []string
	for _, c := range cases {
		b, err := r.WaitBackup(ctx, c.name)
		if err != nil {
			return err
		}
		msg := backupMessage(b)
		if b.Status.Phase != v1alpha1.BackupFailed || !strings.Contains(msg, c.want) || strings.Contains(msg, "not-the-secret") {
			problems = append(problems, fmt.Sprintf("%s: %s, %q (want Failed saying %q)", c.name, b.Status.Phase, msg, c.want))
		}
	}
	// Nothing half-written in the full bucket.
	listed, err := r.RunTool(ctx, "list-tiny", []string{"list", "--bucket=" + framework.BucketURL("tiny")}, framework.S3Credentials, nil, nil)
	if err != nil {
		return err
	}
	if len(listed.Objects) != 0 {
		problems = append(problems, fmt.Sprintf("the full bucket holds %v after the failed backup", listed.Objects))
	}
	if len(problems) > 0 {
		return fmt.Errorf("bad backups: %s", strings.Join(problems, "; "))
	}
	return nil
}

// BackupScenarios are the backup scenarios.
func BackupScenarios() []framework.Scenario {
	return []framework.Scenario{BackupRestore(), BackupRestoreTLS(), BackupRestoreGCS(), BackupRestoreAzure(), RestoredMemberWiped(), ArchiveFollowsWrites(), ArchiveFollowsItsCABundle(), RestoreToAPoint(), ArchiveRetention(), ClusterLost()}
}
