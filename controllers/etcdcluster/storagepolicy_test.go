package etcdcluster

import (
	"context"
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/storagepolicy"
	"github.com/quorate-dev/quorate/internal/testsupport/backupfixture"
)

// Under an administrator's storage policy, a backup to a location it does not name fails at
// once without a Job, as does one that would use the pods' ambient identity; a schedule to
// such a location takes no backup; a cluster restored from it waits, saying why. A backup to
// an allowed location with credentials runs.
func TestStoragePolicy(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	policy := storagepolicy.Policy{Allowed: []string{backupfixture.S3.BucketURL}}
	startWith(t, ns, fake, "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) { r.StoragePolicy = policy })
	ctx := context.Background()
	bootstrap(t, ns, "demo", 3, fake)

	elsewhere := backupfixture.S3
	elsewhere.BucketURL = "s3://backups?endpoint=http://169.254.169.254&region=us-east-1&use_path_style=true"
	ambient := backupfixture.S3
	ambient.CredentialsSecret = ""
	notAllowed := fmt.Sprintf("storage.bucketURL %q is not a location the operator's storage policy allows (--allowed-storage): use one of %s, or ask the operator's administrator to allow it",
		elsewhere.BucketURL, backupfixture.S3.BucketURL)
	noAmbient := "the storage names neither credentialsSecret nor identity.serviceAccountName, and the operator's storage policy does not let its pods use their ambient identity (--allow-ambient-storage-identity): name the credentials Secret or the service account (other than default) to reach the bucket as"
	for name, tc := range map[string]struct {
		st   v1alpha1.BackupStorage
		want string
	}{"elsewhere": {elsewhere, notAllowed}, "ambient": {ambient, noAmbient}} {
		if err := k8s.Create(ctx, &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: tc.st}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, timeout, "backup "+name+" refused", func() error {
			got := getBackup(t, ns, name)
			c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionBackupComplete)
			if c == nil {
				return fmt.Errorf("no condition: %+v", got.Status)
			}
			want := metav1.Condition{Type: v1alpha1.ConditionBackupComplete, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonStorageNotAllowed, Message: tc.want, ObservedGeneration: got.Generation}
			c.LastTransitionTime = metav1.Time{}
			if got.Status.Phase != v1alpha1.BackupFailed || *c != want {
				return fmt.Errorf("phase %s, condition %+v, want %+v", got.Status.Phase, *c, want)
			}
			return nil
		})
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-backup"}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
			t.Errorf("the refused backup %s has a Job: %v", name, err)
		}
	}
	// An allowed location with credentials: the Job is created.
	if err := k8s.Create(ctx, &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "allowed", Namespace: ns}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: backupfixture.S3}}); err != nil {
		t.Fatal(err)
	}
	waitJob(t, ns, "allowed-backup")

	// A schedule to a location outside the policy takes no backup.
	sched := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: "demo", Schedule: "@every 1s", Storage: elsewhere}}
	if err := k8s.Create(ctx, sched); err != nil {
		t.Fatal(err)
	}
	eventually(t, timeout, "schedule refused", func() error {
		got := &v1alpha1.EtcdBackupSchedule{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nightly"}, got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionScheduleReady)
		if c == nil || c.Reason != v1alpha1.ReasonStorageNotAllowed || c.Message != notAllowed+"; the schedule takes no backup meanwhile" || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	var backups v1alpha1.EtcdBackupList
	if err := k8s.List(ctx, &backups); err != nil {
		t.Fatal(err)
	}
	for _, b := range backups.Items {
		if b.Namespace == ns && b.Labels[names.LabelSchedule] == "nightly" {
			t.Errorf("the refused schedule created backup %s", b.Name)
		}
	}

	// A cluster restored from a location outside the policy waits, saying why.
	c := newCluster(ns, "restored", 3)
	c.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{Storage: &elsewhere, Key: "etcd/x.db"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, ns, "restored", metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonStorageNotAllowed,
		Message: "spec.bootstrap.fromBackup.storage: " + notAllowed + "; the cluster starts once the storage is allowed"})

	// An allowed location, but another namespace's snapshot: it waits too.
	theirs := newCluster(ns, "theirs", 3)
	allowed := backupfixture.S3
	key := allowed.Prefix + "victim/demo/nightly.db"
	theirs.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{Storage: &allowed, Key: key}}
	if err := k8s.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, ns, "theirs", metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonStorageNotAllowed,
		Message: "spec.bootstrap.fromBackup.key: " + fmt.Sprintf("key %q is not a snapshot of this namespace ([PREFIX/]%s/<cluster>/<backup>.db), and under the operator's storage policy a cluster restores only its namespace's own snapshots", key, ns) +
			": nothing is started; spec.bootstrap cannot change, so delete this EtcdCluster and create it from a snapshot of this namespace"})
}
