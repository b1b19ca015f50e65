package backup

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
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
		{"TZ=UTC", `spec.schedule "TZ=UTC" names a time zone, which is not supported: schedules run in UTC; remove the TZ= prefix` + advice},
		{"0 * * *", `spec.schedule "0 * * *" does not parse (expected exactly 5 fields, found 4: [0 * * *])` + advice},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", Generation: 2},
				Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: "demo", Schedule: tc.schedule, Storage: backupfixture.S3}}
			r := &ScheduleReconciler{Client: fake.NewClientBuilder().Build(), Recorder: record.NewFakeRecorder(10)}
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
	// The operator's floor can be lowered (--min-backup-interval).
	r := &ScheduleReconciler{MinInterval: time.Second}
	if got := r.minInterval(); got != time.Second {
		t.Fatalf("minInterval = %s", got)
	}
}
