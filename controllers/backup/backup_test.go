package backup

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/testsupport/backupfixture"
)

// The cache can hold a finished Job before its pod's termination message (they come through
// different watches): the backup takes the result from the API server, and does not fail for
// want of one. A Job whose pod has really left nothing still fails the backup.
func TestBackupResultPastAStaleCache(t *testing.T) {
	ctx := context.Background()
	b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "ns", UID: types.UID("b1-uid")},
		Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: backupfixture.S3}}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "b1-backup", Namespace: "ns", UID: types.UID("job-uid"), OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "EtcdBackup", Name: "b1", UID: b.UID, Controller: ptr.To(true)}}},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}},
	}
	pod := func(terminated *corev1.ContainerStateTerminated) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b1-backup-x1", Namespace: "ns", Labels: map[string]string{batchv1.JobNameLabel: job.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}}}
		st := corev1.ContainerStatus{Name: "quorate-backup", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
		if terminated != nil {
			st.State = corev1.ContainerState{Terminated: terminated}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
		return p
	}
	// forged is p under another name, newer, and controlled by nothing.
	forged := func(p *corev1.Pod) *corev1.Pod {
		p.Name, p.OwnerReferences, p.CreationTimestamp = "b1-backup-forged", nil, metav1.Now()
		return p
	}
	res := backupfixture.Stored("b1-0", "etcd/ns/demo/b1.db", 77)
	// The cache: the Job finished, its pod still running.
	cache := fake.NewClientBuilder().WithObjects(job.DeepCopy(), pod(nil)).WithStatusSubresource(&batchv1.Job{}).Build()

	for _, tc := range []struct {
		name      string
		live      client.Reader
		wantPhase string
		wantWhy   string
	}{
		{"the API server has the result", fake.NewClientBuilder().WithObjects(job.DeepCopy(), pod(&corev1.ContainerStateTerminated{Message: res.Encode()})).Build(),
			v1alpha1.BackupCompleted, "stored s3://backups/etcd/ns/demo/b1.db (8224 bytes, revision 77, 42 keys) from b1-0 and verified it"},
		{"the pod left no result", fake.NewClientBuilder().WithObjects(job.DeepCopy(), pod(&corev1.ContainerStateTerminated{ExitCode: 137})).Build(),
			v1alpha1.BackupFailed, "the Job failed without a result: see its pod's log"},
		// A pod with the Job's label that the Job does not control (anyone who may create pods
		// can make one) forges nothing: its result is not read.
		{"a forged pod's result", fake.NewClientBuilder().WithObjects(job.DeepCopy(), pod(&corev1.ContainerStateTerminated{ExitCode: 137}), forged(pod(&corev1.ContainerStateTerminated{Message: res.Encode()}))).Build(),
			v1alpha1.BackupFailed, "the Job failed without a result: see its pod's log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &BackupReconciler{Client: cache, APIReader: tc.live, Recorder: record.NewFakeRecorder(10)}
			got := b.DeepCopy()
			if _, err := r.step(ctx, got); err != nil {
				t.Fatal(err)
			}
			c := got.Status.Conditions
			if got.Status.Phase != tc.wantPhase || len(c) != 1 || c[0].Message != tc.wantWhy {
				t.Fatalf("phase %q, conditions %s; want %q with %q", got.Status.Phase, fmt.Sprint(c), tc.wantPhase, tc.wantWhy)
			}
		})
	}
}

// A running backup whose Job is gone (deleted, or removed by its TTL while the operator was
// down) fails saying so, and is not taken again; one whose Job the cache has not seen yet but
// the API server has waits.
func TestBackupWhoseJobIsGone(t *testing.T) {
	ctx := context.Background()
	running := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "ns", UID: types.UID("b1-uid")},
		Spec:   v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: backupfixture.S3},
		Status: v1alpha1.EtcdBackupStatus{Phase: v1alpha1.BackupRunning}}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "b1-backup", Namespace: "ns"}}
	empty := fake.NewClientBuilder().Build()

	r := &BackupReconciler{Client: empty, APIReader: fake.NewClientBuilder().WithObjects(job).Build(), Recorder: record.NewFakeRecorder(10)}
	b := running.DeepCopy()
	res, err := r.step(ctx, b)
	if err != nil || res.RequeueAfter != 5*time.Second || b.Status.Phase != v1alpha1.BackupRunning {
		t.Fatalf("Job not yet cached: step = %+v, %v, phase %q; want a wait, still Running", res, err, b.Status.Phase)
	}

	r = &BackupReconciler{Client: empty, APIReader: empty, Recorder: record.NewFakeRecorder(10)}
	b = running.DeepCopy()
	if _, err := r.step(ctx, b); err != nil {
		t.Fatal(err)
	}
	want := "Job b1-backup is gone before its result was read (deleted, or removed a day after it finished while the operator was down): what it stored is not verified; take a new backup"
	c := b.Status.Conditions
	if b.Status.Phase != v1alpha1.BackupFailed || len(c) != 1 || c[0].Message != want || c[0].Reason != v1alpha1.ReasonBackupFailed {
		t.Fatalf("phase %q, conditions %+v; want Failed with %q", b.Status.Phase, c, want)
	}
	var jobs batchv1.JobList
	if err := empty.List(ctx, &jobs); err != nil || len(jobs.Items) != 0 {
		t.Fatalf("Jobs %v (%v): the backup must not be taken again", jobs.Items, err)
	}
}

// A schedule that archives tells its backup Job the oldest revision, per cluster ID, of the
// completed backups of the cluster made by hand in the same bucket, under any prefix, whose
// restores to a point its archive serves; not its own backups nor other schedules' (they
// replay their own archives), not other clusters', other buckets', deleted ones. One not
// finished yet keeps the current cluster's archive whole.
func TestScheduleRetentionKeepsOtherBackupsSegments(t *testing.T) {
	st := v1alpha1.BackupStorage{BucketURL: "s3://b", Prefix: "etcd/"}
	s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns"},
		Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: "demo", Storage: st, Retention: v1alpha1.BackupRetention{MaxCount: 2}, Archive: &v1alpha1.ArchiveSpec{Enabled: true}}}
	backupOf := func(name, cluster, schedule, bucket, phase, id string, rev int64) *v1alpha1.EtcdBackup {
		b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{}},
			Spec:   v1alpha1.EtcdBackupSpec{ClusterName: cluster, Storage: v1alpha1.BackupStorage{BucketURL: bucket, Prefix: "manual/"}},
			Status: v1alpha1.EtcdBackupStatus{Phase: phase, ClusterID: id, Revision: rev}}
		if schedule != "" {
			b.Labels[names.LabelSchedule] = schedule
		}
		return b
	}
	objs := []client.Object{s,
		backupOf("nightly-20261128-010000", "demo", "nightly", "s3://b", v1alpha1.BackupCompleted, "a1", 100), // its own
		backupOf("by-hand", "demo", "", "s3://b", v1alpha1.BackupCompleted, "a1", 300),
		backupOf("by-hand-older", "demo", "", "s3://b", v1alpha1.BackupCompleted, "a1", 250),
		backupOf("hourly-20261128-010000", "demo", "hourly", "s3://b", v1alpha1.BackupCompleted, "b2", 90),
		backupOf("elsewhere", "demo", "", "s3://other", v1alpha1.BackupCompleted, "a1", 1),
		backupOf("other-cluster", "other", "", "s3://b", v1alpha1.BackupCompleted, "a1", 2),
		backupOf("failed", "demo", "", "s3://b", v1alpha1.BackupFailed, "a1", 3),
		backupOf("no-cluster-id", "demo", "", "s3://b", v1alpha1.BackupCompleted, "", 4),
	}
	deleted := backupOf("deleted", "demo", "", "s3://b", v1alpha1.BackupCompleted, "a1", 5)
	deleted.DeletionTimestamp, deleted.Finalizers = &metav1.Time{Time: time.Now()}, []string{"x"}
	objs = append(objs, deleted)
	b := backupOf("nightly-20261128-020000", "demo", "nightly", "s3://b", "", "", 0)
	b.Spec.Storage = st
	for _, tc := range []struct {
		name string
		more []client.Object
		want map[string]int64
	}{
		{"every backup finished", nil, map[string]int64{"a1": 250}},
		{"a backup made by hand running", []client.Object{backupOf("running", "demo", "", "s3://b", v1alpha1.BackupRunning, "", 0)}, map[string]int64{"a1": 250, "c0": 0}},
	} {
		// The cache is empty: the backups are read from the API server.
		api := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(append(slices.Clone(objs), tc.more...)...).Build()
		r := &BackupReconciler{Client: fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(s).Build(), APIReader: api}
		got, err := r.scheduleRetention(context.Background(), b, "c0")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Keep, tc.want) || got.Archive != "etcd/ns/demo/archive/nightly" {
			t.Errorf("%s: retention %+v, want the archive etcd/ns/demo/archive/nightly and keep %v", tc.name, got, tc.want)
		}
	}
}
