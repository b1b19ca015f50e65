package backup

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/testsupport/backupfixture"
)

// After a restart (or an upgrade) the operator's gauges are empty; the backup and schedule
// reconcilers read them back from status, so QuorateBackupTooOld and QuorateRestoreDrillFailed
// are true at once, not only after the next backup. The newest completed backup wins whatever
// order the backups are read in; a backup of a cluster that is gone shows nothing; a failed
// backup changes nothing.
func TestGaugesSurviveARestart(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	completed := func(name, cluster string, at time.Time, size int64) *v1alpha1.EtcdBackup {
		when := metav1.NewTime(at)
		return &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gauges"},
			Spec:   v1alpha1.EtcdBackupSpec{ClusterName: cluster, Storage: backupfixture.S3},
			Status: v1alpha1.EtcdBackupStatus{Phase: v1alpha1.BackupCompleted, CompletionTime: &when, Size: size}}
	}
	older := completed("nightly-1", "demo", t0, 100)
	newer := completed("nightly-2", "demo", t0.Add(24*time.Hour), 200)
	orphan := completed("old-1", "gone", t0, 300)
	failed := older.DeepCopy()
	failed.Name, failed.Status.Phase, failed.Status.CompletionTime = "nightly-3", v1alpha1.BackupFailed, &metav1.Time{Time: t0.Add(48 * time.Hour)}
	demo := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "gauges"}}
	drill := metav1.NewTime(t0.Add(25 * time.Hour))
	sched := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "gauges"},
		Spec:   v1alpha1.EtcdBackupScheduleSpec{ClusterName: "demo", Schedule: "@daily", Storage: backupfixture.S3},
		Status: v1alpha1.EtcdBackupScheduleStatus{LastDrill: &v1alpha1.DrillResult{Backup: "nightly-2", Passed: false, Time: drill}}}
	objs := []client.Object{older, newer, orphan, failed, demo, sched}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).WithStatusSubresource(objs...).Build()
	t.Cleanup(func() { metrics.ForgetCluster("gauges", "demo"); metrics.ForgetCluster("gauges", "gone") })

	for _, order := range [][]*v1alpha1.EtcdBackup{{older, newer, orphan, failed}, {failed, newer, orphan, older}} {
		metrics.ResetForTest() // the operator restarts
		br := &BackupReconciler{Client: c, APIReader: c, Recorder: record.NewFakeRecorder(10)}
		for _, b := range order {
			if _, err := br.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "gauges", Name: b.Name}}); err != nil {
				t.Fatal(err)
			}
		}
		sr := &ScheduleReconciler{Client: c, APIReader: c, Recorder: record.NewFakeRecorder(10), MinInterval: DefaultMinInterval,
			Now: func() time.Time { return t0.Add(26 * time.Hour) }}
		if _, err := sr.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "gauges", Name: "nightly"}}); err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{
			"last backup":      testutil.ToFloat64(metrics.LastBackup.WithLabelValues("gauges", "demo")),
			"last backup size": testutil.ToFloat64(metrics.LastBackupSize.WithLabelValues("gauges", "demo")),
			"drill passed":     testutil.ToFloat64(metrics.DrillPassed.WithLabelValues("gauges", "nightly", "demo")),
			"last drill":       testutil.ToFloat64(metrics.LastDrill.WithLabelValues("gauges", "nightly", "demo")),
			"series of gone":   float64(testutil.CollectAndCount(metrics.LastBackup)),
		}
		want := map[string]float64{
			"last backup":      float64(newer.Status.CompletionTime.Unix()),
			"last backup size": 200,
			"drill passed":     0,
			"last drill":       float64(drill.Unix()),
			"series of gone":   1, // demo's only
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("order %s…: %s = %v, want %v", order[0].Name, k, got[k], w)
			}
		}
	}

	// A backup that completes after the restart always shows, even if a clock says otherwise.
	metrics.RecordBackup("gauges", "demo", true, 5, t0.Add(time.Hour))
	if got := testutil.ToFloat64(metrics.LastBackup.WithLabelValues("gauges", "demo")); got != float64(t0.Add(time.Hour).Unix()) {
		t.Errorf("a new backup's time was not shown: %v", got)
	}
}
