package backup

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/testsupport/backupfixture"
)

// A schedule that cannot be run stops at once with ScheduleReady=False/InvalidSchedule saying
// why and what to write instead; none is acted on, and none panics the parser (a bare "TZ="
// prefix did, on every reconcile).
func TestScheduleRefusedBeforeAnyRun(t *testing.T) {
	const advice = `: use five cron fields such as "0 */6 * * *", or @hourly, @daily, @every 30m`
	for _, tc := range []struct{ schedule, want string }{
		{"@every 1s", `spec.schedule "@every 1s" has runs 1s apart, closer than the shortest interval allowed (15s)` + advice},
		{"TZ=UTC", `spec.schedule "TZ=UTC" names a time zone and no times: write the five cron fields after it, such as "CRON_TZ=Europe/Berlin 0 3 * * *"` + advice},
		{"0 * * *", `spec.schedule "0 * * *" does not parse (expected exactly 5 fields, found 4: [0 * * *])` + advice},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", Generation: 2},
				Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: "demo", Schedule: tc.schedule, Storage: backupfixture.S3}}
			r := &ScheduleReconciler{Client: fake.NewClientBuilder().Build(), Recorder: record.NewFakeRecorder(10), MinInterval: DefaultMinInterval}
			res, err := r.pass(context.Background(), s)
			if err != nil || res.RequeueAfter != 0 {
				t.Fatalf("pass = %+v, %v: want no requeue, no error", res, err)
			}
			want := []metav1.Condition{{Type: v1alpha1.ConditionScheduleReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInvalidSchedule, Message: tc.want, ObservedGeneration: 2}}
			got := s.Status.Conditions
			for i := range got {
				got[i].LastTransitionTime = metav1.Time{}
			}
			if len(got) != 1 || got[0] != want[0] {
				t.Fatalf("conditions\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// A schedule found invalid while its drill is under way (it was valid when the drill began, and
// an operator upgrade or a spec change made it invalid) ends the drill and removes its scratch
// cluster, instead of leaving both behind with nothing to drive them.
func TestInvalidScheduleEndsItsDrill(t *testing.T) {
	ctx := context.Background()
	s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", UID: types.UID("s-uid")},
		Spec:   v1alpha1.EtcdBackupScheduleSpec{ClusterName: "demo", Schedule: "@every 1s", Storage: backupfixture.S3, Drill: v1alpha1.RestoreDrill{Enabled: true}},
		Status: v1alpha1.EtcdBackupScheduleStatus{Drilling: "nightly-1", LastCompletedBackup: "nightly-1"}}
	scratch := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: DrillCluster("nightly"), Namespace: "ns", UID: types.UID("d-uid"),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(s, v1alpha1.GroupVersion.WithKind("EtcdBackupSchedule"))}}}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(scratch).Build()
	r := &ScheduleReconciler{Client: c, Recorder: record.NewFakeRecorder(10), MinInterval: DefaultMinInterval, Now: func() time.Time { return time.Unix(1000, 0) }}
	if _, err := r.pass(ctx, s); err != nil {
		t.Fatal(err)
	}
	want := &v1alpha1.DrillResult{Backup: "nightly-1", Passed: false, Time: metav1.NewTime(time.Unix(1000, 0)),
		Message: `the drill was stopped: spec.schedule "@every 1s" has runs 1s apart, closer than the shortest interval allowed (15s): use five cron fields such as "0 */6 * * *", or @hourly, @daily, @every 30m`}
	if got := s.Status.LastDrill; got == nil || *got != *want || s.Status.Drilling != "" {
		t.Fatalf("last drill %+v, drilling %q; want %+v", got, s.Status.Drilling, want)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(scratch), &v1alpha1.EtcdCluster{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the drill's scratch cluster: %v, want it deleted", err)
	}
}

// A drill restores only into a cluster it creates: an EtcdCluster named <schedule>-drill that
// the schedule does not control ends the drill as failed, saying so, and is left running (it
// was deleted at the drill's end).
func TestDrillLeavesAForeignClusterAlone(t *testing.T) {
	ctx := context.Background()
	s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", UID: types.UID("s-uid")},
		Spec:   v1alpha1.EtcdBackupScheduleSpec{ClusterName: "demo", Schedule: "@daily", Storage: backupfixture.S3, Drill: v1alpha1.RestoreDrill{Enabled: true}},
		Status: v1alpha1.EtcdBackupScheduleStatus{Drilling: "nightly-1", LastCompletedBackup: "nightly-1"}}
	b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly-1", Namespace: "ns"}}
	foreign := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: DrillCluster("nightly"), Namespace: "ns", UID: types.UID("f-uid")}}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(b, foreign).Build()
	r := &ScheduleReconciler{Client: c, Recorder: record.NewFakeRecorder(10), Now: func() time.Time { return time.Unix(1000, 0) }}
	drilling, err := r.drill(ctx, s)
	if err != nil || drilling {
		t.Fatalf("drill = %v, %v: want the drill ended", drilling, err)
	}
	want := &v1alpha1.DrillResult{Backup: "nightly-1", Passed: false, Time: metav1.NewTime(time.Unix(1000, 0)),
		Message: "EtcdCluster nightly-drill exists and is not this schedule's: a drill restores only into a cluster of that name that it creates, and it leaves this one alone; rename that cluster or the schedule"}
	if got := s.Status.LastDrill; got == nil || *got != *want || s.Status.Drilling != "" {
		t.Fatalf("last drill %+v, drilling %q; want %+v", got, s.Status.Drilling, want)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), &v1alpha1.EtcdCluster{}); err != nil {
		t.Fatalf("the foreign cluster: %v", err)
	}
}

// scheme knows Kubernetes' kinds and the API's.
func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// A drill restores into a volume that holds the source's quota beside etcd's log, so that the
// API takes its cluster even for a source created before such quotas were refused.
func TestDrillSize(t *testing.T) {
	for _, tc := range []struct {
		size  string
		quota int64
		want  string
	}{
		{"1Gi", 0, "1Gi"},
		{"1Gi", 512 << 20, "1Gi"},
		{"1Gi", 2 << 30, "2176Mi"}, // the old default quota on the sample's volume
	} {
		src := &v1alpha1.EtcdCluster{Spec: v1alpha1.EtcdClusterSpec{Storage: v1alpha1.StorageSpec{Size: resource.MustParse(tc.size)},
			Etcd: v1alpha1.EtcdOptions{QuotaBackendBytes: tc.quota}}}
		if got := drillSize(src); got.Cmp(resource.MustParse(tc.want)) != 0 {
			t.Errorf("drillSize(%s, quota %d) = %s, want %s", tc.size, tc.quota, got.String(), tc.want)
		}
	}
}
