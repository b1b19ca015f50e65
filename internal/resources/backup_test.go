package resources

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/names"
)

// Every Job the operator runs makes one attempt, within an hour, and is removed with its pod a
// day after it finished, so finished Jobs do not pile up in the namespace.
func TestJobsExpire(t *testing.T) {
	c := cluster()
	target := JobTarget{Cluster: c, Members: []string{"demo-0"}, ClusterID: "abc"}
	b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly-20261128-010000", Namespace: "ns", UID: "b-uid",
		Labels: map[string]string{names.LabelSchedule: "nightly"}},
		Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: v1alpha1.BackupStorage{BucketURL: "s3://b"}}}
	for name, j := range map[string]*batchv1.Job{
		"backup": BackupJob(b, target, &Retain{Prefix: "ns/demo/nightly-", Retention: backup.Retention{Count: 2}}, images),
		"verify": VerifyJob("v", metav1.OwnerReference{}, target, 10, 3, "h", images),
	} {
		if got := j.Spec.TTLSecondsAfterFinished; got == nil || *got != 86400 {
			t.Errorf("%s Job: ttlSecondsAfterFinished %v, want 86400", name, got)
		}
		if name == "backup" && !slices.Contains(j.Spec.Template.Spec.Containers[0].Command, "--schedule=nightly") {
			t.Errorf("the backup Job does not name its schedule, whose objects alone its retention may delete: %q", j.Spec.Template.Spec.Containers[0].Command)
		}
		if got := j.Spec.BackoffLimit; got == nil || *got != 0 {
			t.Errorf("%s Job: backoffLimit %v, want 0", name, got)
		}
	}
}

// The operator's proxy variables, and only those, in a fixed order; empty ones are left out.
func TestProxyEnvFrom(t *testing.T) {
	got, withCredentials := ProxyEnvFrom([]string{"PATH=/bin", "no_proxy=localhost", "HTTPS_PROXY=http://proxy:3128", "HTTP_PROXY=", "NO_PROXY=.svc,.cluster.local",
		"GOPROXY=https://proxy.golang.org", "http_proxy=http://user:secret@proxy:3128"})
	want := []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}, {Name: "NO_PROXY", Value: ".svc,.cluster.local"}, {Name: "no_proxy", Value: "localhost"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ProxyEnvFrom = %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(withCredentials, []string{"http_proxy"}) {
		t.Fatalf("proxies left out for their credentials: %v, want [http_proxy]", withCredentials)
	}
}

// A schedule's retention reaches its backup Job whole: the generations only when set, and the
// archive's prefix when the schedule archives.
func TestBackupJobRetention(t *testing.T) {
	c := cluster()
	target := JobTarget{Cluster: c, Members: []string{"demo-0"}, ClusterID: "abc"}
	s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns"},
		Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: "demo", Storage: v1alpha1.BackupStorage{BucketURL: "s3://b", Prefix: "etcd/"},
			Retention: v1alpha1.BackupRetention{MaxCount: 3, Hourly: 24, Daily: 7, Weekly: 4, MaxAge: &metav1.Duration{Duration: 720 * time.Hour}},
			Archive:   &v1alpha1.ArchiveSpec{Enabled: true}}}
	b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly-20261128-010000", Namespace: "ns", Labels: map[string]string{names.LabelSchedule: "nightly"}},
		Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: s.Spec.Storage}}
	want := []string{"--retain-prefix=etcd/ns/demo/nightly-", "--retain-count=3", "--retain-max-age=720h0m0s", "--schedule=nightly",
		"--retain-hourly=24", "--retain-daily=7", "--retain-weekly=4", "--retain-archive=etcd/ns/demo/archive/nightly", "--retain-archive-keep=a1:250,b2:90"}
	for _, tc := range []struct {
		name    string
		archive bool
		want    []string
	}{{"archiving", true, want}, {"not archiving", false, want[:len(want)-2]}} {
		if !tc.archive {
			s.Spec.Archive = nil
		}
		retain := RetainOf(s)
		if tc.archive {
			retain.Keep = map[string]int64{"b2": 90, "a1": 250}
		}
		cmd := BackupJob(b, target, retain, images).Spec.Template.Spec.Containers[0].Command
		i := slices.Index(cmd, want[0])
		if i < 0 || !reflect.DeepEqual(cmd[i:i+len(tc.want)], tc.want) || (i+len(tc.want) < len(cmd) && strings.HasPrefix(cmd[i+len(tc.want)], "--retain")) {
			t.Errorf("%s: the Job's command %q does not carry the retention %q", tc.name, cmd, tc.want)
		}
	}
}
