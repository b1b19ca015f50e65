package plugin

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func cluster(name string) *v1alpha1.EtcdCluster {
	return &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 4},
		Spec:       v1alpha1.EtcdClusterSpec{Replicas: 3, Version: "3.6.16", Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}},
		Status: v1alpha1.EtcdClusterStatus{
			ObservedGeneration: 4,
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonSettled, Message: "nothing to do", ObservedGeneration: 4},
			},
		},
	}
}

// testEnv is an Env on a fake API server whose calls funcs may intercept (to play the
// operator); it returns the fake itself for checks, and the output streams.
func testEnv(t *testing.T, objs []client.Object, funcs interceptor.Funcs) (*Env, client.Client, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	base := fake.NewClientBuilder().WithScheme(Scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.EtcdCluster{}, &v1alpha1.EtcdBackup{}, &v1alpha1.EtcdBackupSchedule{}).Build()
	cl := interceptor.NewClient(base, funcs)
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &Env{Client: cl, Namespace: "ns", Out: out, Err: errOut, Now: func() time.Time { return now }, Poll: time.Millisecond}, base, out, errOut
}

func TestPatches(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{string(pausePatch(true)), `{"spec":{"paused":true}}`},
		{string(pausePatch(false)), `{"spec":{"paused":false}}`},
		{string(renewPatch("renew-20261128-120000")), `{"spec":{"tls":{"renewCertificates":"renew-20261128-120000"}}}`},
		{Token("renew", now), "renew-20261128-120000"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}

// The operator's answer to a patch, played by an interceptor: on the plugin's third read
// after its patch, the status changes as act says.
func actAfterPatch(act func(c *v1alpha1.EtcdCluster)) interceptor.Funcs {
	patched, reads := false, 0
	return interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patched = true
			return cl.Patch(ctx, obj, patch, opts...)
		},
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if c, ok := obj.(*v1alpha1.EtcdCluster); ok && patched {
				reads++
				if reads == 3 {
					if err := cl.Get(ctx, key, c); err != nil {
						return err
					}
					act(c)
					if err := cl.Status().Update(ctx, c); err != nil {
						return err
					}
				}
			}
			return cl.Get(ctx, key, obj, opts...)
		},
	}
}

func TestPauseWaitsForTheOperator(t *testing.T) {
	env, base, out, errOut := testEnv(t, []client.Object{cluster("a")}, actAfterPatch(func(c *v1alpha1.EtcdCluster) {
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonPaused, Message: "spec.paused is true", ObservedGeneration: 4})
	}))
	if err := env.SetPaused(context.Background(), "a", true, time.Minute); err != nil {
		t.Fatal(err)
	}
	c := &v1alpha1.EtcdCluster{}
	if err := base.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "a"}, c); err != nil {
		t.Fatal(err)
	}
	if !c.Spec.Paused {
		t.Error("spec.paused was not set")
	}
	wantErr := "pausing ns/a (spec.paused=true, generation 4)\n" +
		"  Progressing=False Settled: nothing to do\n" +
		"  Progressing=False Paused: spec.paused is true\n"
	if diff := cmp.Diff(wantErr, errOut.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("a is paused: the operator makes no changes to it until `kubectl quorate resume a`\n", out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestResumeTimesOutWhileStillPaused(t *testing.T) {
	c := cluster("a")
	c.Spec.Paused = true
	c.Status.Conditions[0].Reason, c.Status.Conditions[0].Message = v1alpha1.ReasonPaused, "spec.paused is true"
	env, _, _, _ := testEnv(t, []client.Object{c}, interceptor.Funcs{})
	err := env.SetPaused(context.Background(), "a", false, 20*time.Millisecond)
	want := "resuming a: not done after 20ms (last: Progressing=False Paused: spec.paused is true); the request stays in place and the operator keeps working on it: look again with `kubectl quorate status`, or wait longer with --timeout"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestPauseState(t *testing.T) {
	c := cluster("a")
	for _, tc := range []struct {
		name     string
		mutate   func(c *v1alpha1.EtcdCluster)
		gen      int64
		paused   bool
		done     bool
		progress string
	}{
		{"old generation", func(c *v1alpha1.EtcdCluster) {}, 5, true, false, "waiting for the operator to observe generation 5 (status describes 4)"},
		{"not yet paused", func(c *v1alpha1.EtcdCluster) {}, 4, true, false, "Progressing=False Settled: nothing to do"},
		{"resumed", func(c *v1alpha1.EtcdCluster) {}, 4, false, true, "Progressing=False Settled: nothing to do"},
		{"paused", func(c *v1alpha1.EtcdCluster) { c.Status.Conditions[0].Reason = v1alpha1.ReasonPaused }, 4, true, true, "Progressing=False Paused: nothing to do"},
		{"condition of an old generation", func(c *v1alpha1.EtcdCluster) {
			c.Status.Conditions[0].Reason, c.Status.Conditions[0].ObservedGeneration = v1alpha1.ReasonPaused, 3
		}, 4, true, false, "waiting for the operator to observe generation 4 (status describes 4)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := c.DeepCopy()
			tc.mutate(x)
			done, progress := pauseState(x, tc.gen, tc.paused)
			if done != tc.done || progress != tc.progress {
				t.Errorf("got %t %q, want %t %q", done, progress, tc.done, tc.progress)
			}
		})
	}
}

func TestRenewCertificatesWaitsForTheToken(t *testing.T) {
	fe := &v1alpha1.CertificateExpiry{Secret: "a-ca", Time: metav1.NewTime(now.Add(90 * 24 * time.Hour))}
	env, base, out, errOut := testEnv(t, []client.Object{cluster("a")}, actAfterPatch(func(c *v1alpha1.EtcdCluster) {
		c.Status.TLS = &v1alpha1.TLSStatus{RenewedToken: c.Spec.TLS.RenewCertificates, FirstExpiry: fe}
	}))
	if err := env.RenewCertificates(context.Background(), "a", "", time.Minute); err != nil {
		t.Fatal(err)
	}
	c := &v1alpha1.EtcdCluster{}
	if err := base.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "a"}, c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.TLS.RenewCertificates != "renew-20261128-120000" {
		t.Errorf("spec.tls.renewCertificates = %q", c.Spec.TLS.RenewCertificates)
	}
	wantErr := "asked for a renewal of ns/a's certificates (spec.tls.renewCertificates=renew-20261128-120000)\n" +
		"  waiting for the operator to renew the certificates (status.tls.renewedToken)\n" +
		"  every generated leaf certificate was renewed; the first to expire now is a-ca at 2027-02-26T12:00:00Z\n"
	if diff := cmp.Diff(wantErr, errOut.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("every generated leaf certificate was renewed; the first to expire now is a-ca at 2027-02-26T12:00:00Z\n", out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestRenewCertificatesRefusesOwnCertificates(t *testing.T) {
	c := cluster("a")
	c.Spec.TLS.ServerSecretName, c.Spec.TLS.PeerSecretName, c.Spec.TLS.ClientSecretName = "s", "p", "c"
	env, _, _, _ := testEnv(t, []client.Object{c}, interceptor.Funcs{})
	if err := env.RenewCertificates(context.Background(), "a", "", time.Minute); !errors.Is(err, errCustomCerts) {
		t.Errorf("got %v, want %v", err, errCustomCerts)
	}
}

func schedule(name, cluster string) *v1alpha1.EtcdBackupSchedule {
	return &v1alpha1.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: cluster, Schedule: "@daily",
			Storage: v1alpha1.BackupStorage{BucketURL: "s3://" + name + "?region=eu", CredentialsSecret: name + "-creds"}},
	}
}

func TestBackupStorage(t *testing.T) {
	scheds := []v1alpha1.EtcdBackupSchedule{*schedule("z", "a"), *schedule("other", "b"), *schedule("m", "a")}
	got, from, err := backupStorage("a", BackupOptions{}, scheds)
	if err != nil || from != "m" || got != scheds[2].Spec.Storage {
		t.Errorf("got %+v from %q (%v), want the storage of schedule m", got, from, err)
	}
	got, from, err = backupStorage("a", BackupOptions{To: "gs://b", Prefix: "p/", CredentialsSecret: "s"}, scheds)
	if want := (v1alpha1.BackupStorage{BucketURL: "gs://b", Prefix: "p/", CredentialsSecret: "s"}); err != nil || from != "" || got != want {
		t.Errorf("got %+v from %q (%v), want %+v", got, from, err, want)
	}
	_, _, err = backupStorage("c", BackupOptions{}, scheds)
	if want := "cluster c has no EtcdBackupSchedule to take the storage from: name a bucket with --to (and --credentials-secret)"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// The backup command creates an EtcdBackup and follows its phase; the "operator" here moves
// it to Running and then to the given end.
func backupOperator(end func(b *v1alpha1.EtcdBackup)) interceptor.Funcs {
	reads := 0
	return interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if b, ok := obj.(*v1alpha1.EtcdBackup); ok && b.GenerateName != "" {
				b.Name = b.GenerateName + "x1"
			}
			return cl.Create(ctx, obj, opts...)
		},
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if b, ok := obj.(*v1alpha1.EtcdBackup); ok {
				reads++
				if err := cl.Get(ctx, key, b); err != nil {
					return err
				}
				switch reads {
				case 2:
					b.Status.Phase = v1alpha1.BackupRunning
					meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionBackupComplete, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonBackupRunning, Message: "the backup Job runs"})
				case 4:
					end(b)
				default:
					return nil
				}
				return cl.Status().Update(ctx, b)
			}
			return cl.Get(ctx, key, obj, opts...)
		},
	}
}

func TestBackupWaitsUntilStored(t *testing.T) {
	env, base, out, errOut := testEnv(t, []client.Object{cluster("a"), schedule("daily", "a")}, backupOperator(func(b *v1alpha1.EtcdBackup) {
		b.Status.Phase, b.Status.Revision, b.Status.Keys, b.Status.Size, b.Status.SHA256, b.Status.Location = v1alpha1.BackupCompleted, 42, 7, 4096, "ab12", "s3://daily/ns/a/a-x1.db"
	}))
	if err := env.Backup(context.Background(), "a", BackupOptions{Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	b := &v1alpha1.EtcdBackup{}
	if err := base.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "a-x1"}, b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v1alpha1.EtcdBackupSpec{ClusterName: "a", Storage: schedule("daily", "a").Spec.Storage}, b.Spec); diff != "" {
		t.Errorf("backup spec (-want +got):\n%s", diff)
	}
	wantErr := "created EtcdBackup ns/a-x1 into s3://daily?region=eu (the storage of EtcdBackupSchedule daily)\n" +
		"  Pending\n" +
		"  Running (BackupRunning: the backup Job runs)\n" +
		"  Completed: revision 42, 7 keys, 4096 bytes, sha256 ab12, at s3://daily/ns/a/a-x1.db\n"
	if diff := cmp.Diff(wantErr, errOut.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("backup a-x1: Completed: revision 42, 7 keys, 4096 bytes, sha256 ab12, at s3://daily/ns/a/a-x1.db\n", out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestBackupFailureNamesTheReason(t *testing.T) {
	env, _, _, _ := testEnv(t, []client.Object{cluster("a")}, backupOperator(func(b *v1alpha1.EtcdBackup) {
		b.Status.Phase = v1alpha1.BackupFailed
		meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionBackupComplete, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonBackupFailed, Message: "bucket gs://b: access denied"})
	}))
	err := env.Backup(context.Background(), "a", BackupOptions{To: "gs://b", Timeout: time.Minute})
	if want := "backup a-x1 failed: BackupFailed: bucket gs://b: access denied"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestRestoredCluster(t *testing.T) {
	src := cluster("a")
	src.Spec.Etcd.QuotaBackendBytes = 1 << 30
	src.Spec.TLS.RenewCertificates = "old-token"
	src.Spec.Users = []v1alpha1.UserSpec{{Name: "app"}}
	src.Spec.Paused = true
	src.Spec.Maintenance.DefragNow = "d1"
	src.Spec.Maintenance.MoveLeader = &v1alpha1.MoveLeaderSpec{Token: "m1", To: "a-2"}
	b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-x1"}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "a"},
		Status: v1alpha1.EtcdBackupStatus{Phase: v1alpha1.BackupCompleted, EtcdVersion: "3.6.15"}}
	got, err := restoredCluster(b, src, RestoreOptions{Into: "b", Replicas: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}, Spec: v1alpha1.EtcdClusterSpec{
		Replicas: 5, Version: "3.6.16", Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}, Etcd: v1alpha1.EtcdOptions{QuotaBackendBytes: 1 << 30},
		Bootstrap: &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{BackupName: "a-x1"}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restored cluster (-want +got):\n%s", diff)
	}
	// Without the source cluster the backup's version is used and the size must be given.
	if _, err := restoredCluster(b, nil, RestoreOptions{Into: "b"}); err == nil || err.Error() != "cluster a, which backup a-x1 was taken of, is gone: give the new cluster's volume size with --storage-size" {
		t.Errorf("got %v", err)
	}
	got, err = restoredCluster(b, nil, RestoreOptions{Into: "b", StorageSize: "2Gi"})
	if err != nil || got.Spec.Version != "3.6.15" || got.Spec.Storage.Size.String() != "2Gi" {
		t.Errorf("got %+v, %v", got, err)
	}
}

func TestParseArgs(t *testing.T) {
	var o opts
	fs := flagSet(&o, io.Discard)
	pos, rest, err := parseArgs(fs, []string{"a", "-n", "prod", "--member", "a-1", "--", "get", "--prefix", "/x", "-w", "json"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a"}, pos); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]string{"get", "--prefix", "/x", "-w", "json"}, rest); diff != "" {
		t.Error(diff)
	}
	if o.kube.Namespace != "prod" || o.member != "a-1" {
		t.Errorf("flags: %+v", o)
	}
	_, _, err = parseArgs(flagSet(&o, io.Discard), []string{"a", "--nope"})
	if err == nil || err.Error() != "flag provided but not defined: -nope" {
		t.Errorf("got %v", err)
	}
	if err := Run(context.Background(), []string{"status", "-h"}, io.Discard, io.Discard, nil); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("got %v, want flag.ErrHelp", err)
	}
}

func TestEtcdctlArgs(t *testing.T) {
	got := etcdctlArgs("https://127.0.0.1:5000", "/tmp/d", Credentials{From: "a-operator-tls"}, []string{"member", "list"})
	want := []string{"--endpoints=https://127.0.0.1:5000", "--cacert=/tmp/d/ca.crt", "--cert=/tmp/d/tls.crt", "--key=/tmp/d/tls.key", "member", "list"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
	got = etcdctlArgs("http://127.0.0.1:5000", "/tmp/d", Credentials{PlaintextNoSecrets: true}, []string{"endpoint", "status"})
	if diff := cmp.Diff([]string{"--endpoints=http://127.0.0.1:5000", "endpoint", "status"}, got); diff != "" {
		t.Error(diff)
	}
}

func TestPickMember(t *testing.T) {
	c := cluster("a")
	c.Status.Members = []v1alpha1.MemberStatus{{Name: "a-0", Healthy: true, IsLeader: true}, {Name: "a-1"}, {Name: "a-2", Healthy: true}}
	for _, tc := range []struct{ want, got string }{{"", "a-2"}, {"a-1", "a-1"}} {
		m, err := pickMember(c, tc.want)
		if err != nil || m != tc.got {
			t.Errorf("pickMember(%q) = %s, %v; want %s", tc.want, m, err, tc.got)
		}
	}
	c.Status.Members[2].Healthy = false
	if m, _ := pickMember(c, ""); m != "a-0" {
		t.Errorf("with only the leader healthy: %s, want a-0", m)
	}
	if _, err := pickMember(c, "a-9"); err == nil || err.Error() != "cluster a has no member a-9" {
		t.Errorf("got %v", err)
	}
}

// fakeEtcd answers Status for each member from a table.
type fakeEtcd map[string]etcd.Status

func (f fakeEtcd) Open(_ context.Context, _ *v1alpha1.EtcdCluster, member string) (MemberConn, error) {
	s, ok := f[member]
	if !ok {
		return nil, errors.New("port-forward: pod " + member + " is not running")
	}
	return fakeConn{s: s}, nil
}

type fakeConn struct{ s etcd.Status }

func (f fakeConn) Endpoint() string                              { return "https://127.0.0.1:1" }
func (f fakeConn) Credentials() Credentials                      { return Credentials{} }
func (f fakeConn) Status(context.Context) (etcd.Status, error)   { return f.s, nil }
func (f fakeConn) Alarms(context.Context) ([]etcd.Alarm, error)  { return nil, nil }
func (f fakeConn) HashKV(context.Context) (uint32, int64, error) { return 7, f.s.Revision, nil }
func (f fakeConn) Close() error                                  { return nil }
func (f fakeConn) MemberList(context.Context) (uint64, []etcd.Member, error) {
	return 0xc1, []etcd.Member{{ID: f.s.MemberID, Name: "a-0"}}, nil
}

func statusFixture(t *testing.T) []client.Object {
	t.Helper()
	c := cluster("a")
	c.Status.ClusterID, c.Status.Leader, c.Status.CurrentVersion, c.Status.ReadyMembers, c.Status.Operator = "c1", "a-0", "3.6.16", 2, "quorate-system/quorate-abc"
	c.Status.Alarms = []string{"NOSPACE"}
	c.Status.Members = []v1alpha1.MemberStatus{
		{Name: "a-0", ID: "a0", Healthy: true, IsLeader: true, Version: "3.6.16", DBSize: 2 << 20},
		{Name: "a-1", ID: "a1", Healthy: false, Version: "3.6.16", DBSize: 1 << 20},
	}
	c.Status.Conditions = []metav1.Condition{
		{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonQuorumHealthy, Message: "2 of 3 healthy", LastTransitionTime: metav1.NewTime(now.Add(-3 * time.Hour))},
		{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonMemberUnhealthy, Message: "unhealthy members: a-1", LastTransitionTime: metav1.NewTime(now.Add(-10 * time.Minute))},
	}
	ca, err := pki.NewCA("a-ca", now.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Sign(pki.Request{CommonName: names.OperatorCN, Usage: pki.ClientOnly, Validity: 10 * 24 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name, node string, restarts int32) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: names.MemberLabels("a", name)},
			Spec:   corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "etcd", RestartCount: restarts}}}}
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-0", Labels: names.MemberLabels("a", "a-0")},
		Spec:   corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"},
		Status: corev1.PersistentVolumeClaimStatus{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
	backup := func(name string, created time.Time, phase string) *v1alpha1.EtcdBackup {
		return &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(created)},
			Spec:   v1alpha1.EtcdBackupSpec{ClusterName: "a"},
			Status: v1alpha1.EtcdBackupStatus{Phase: phase, Revision: 99, Size: 3 << 20, CompletionTime: ptr.To(metav1.NewTime(created.Add(time.Minute)))}}
	}
	s := schedule("daily", "a")
	s.Status.LastDrill = &v1alpha1.DrillResult{Backup: "a-old", Passed: true, Message: "7 keys, keyspace hash matches", Time: metav1.NewTime(now.Add(-5 * time.Hour))}
	return []client.Object{c, pod("a-0", "node-1", 0), pod("a-1", "node-2", 3), pvc,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-ca"}, Data: map[string][]byte{pki.KeyCACert: ca.CertPEM, pki.KeyCAKey: ca.KeyPEM}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-operator-tls"}, Data: map[string][]byte{pki.KeyCert: leaf.CertPEM, pki.KeyKey: leaf.KeyPEM, pki.KeyCACert: ca.CertPEM}},
		backup("a-old", now.Add(-6*time.Hour), v1alpha1.BackupCompleted), backup("a-new", now.Add(-2*time.Hour), v1alpha1.BackupCompleted),
		backup("b-new", now.Add(-time.Hour), v1alpha1.BackupFailed), s}
}

func TestGatherStatus(t *testing.T) {
	objs := statusFixture(t)
	objs[len(objs)-2].(*v1alpha1.EtcdBackup).Spec.ClusterName = "b"
	env, _, _, _ := testEnv(t, objs, interceptor.Funcs{})
	env.Etcd = fakeEtcd{"a-0": {Revision: 1234, DBSize: 3 << 20, DBSizeInUse: 1 << 20, Version: "3.6.16"}}
	st, err := env.GatherStatus(context.Background(), "a", true)
	if err != nil {
		t.Fatal(err)
	}
	caNotAfter := now.Add(-24 * time.Hour).Add(pki.CAValidity).UTC()
	want := &Status{Name: "a", Namespace: "ns", ClusterID: "c1", Leader: "a-0", Version: "3.6.16", Replicas: 3, Ready: 2, ClaimedBy: "quorate-system/quorate-abc",
		Members: []MemberRow{
			{Name: "a-0", ID: "a0", Role: RoleLeader, Healthy: true, Revision: 1234, DBSize: 3 << 20, DBSizeInUse: 1 << 20, Version: "3.6.16", Pod: "a-0 (Running)", Node: "node-1", Volume: "pv-1 1Gi"},
			{Name: "a-1", ID: "a1", Role: RoleFollower, DBSize: 1 << 20, Version: "3.6.16", Pod: "a-1 (Running)", Node: "node-2", Restarts: 3},
		},
		Alarms:     []string{"NOSPACE"},
		Conditions: []ConditionRow{{"Available", "True", "QuorumHealthy", "2 of 3 healthy", metav1.NewTime(now.Add(-3 * time.Hour))}, {"Degraded", "True", "MemberUnhealthy", "unhealthy members: a-1", metav1.NewTime(now.Add(-10 * time.Minute))}},
		Certificates: []CertRow{
			{Name: "a-ca", Key: "ca.crt", Subject: "a-ca", NotAfter: caNotAfter},
			{Name: "a-operator-tls", Key: "tls.crt", Subject: "quorate-operator", NotAfter: now.Add(10 * 24 * time.Hour)},
			{Name: "a-operator-tls", Key: "ca.crt", Subject: "a-ca", NotAfter: caNotAfter},
		},
		LastBackup: &BackupRow{Name: "a-new", Phase: "Completed", Time: ptr.To(metav1.NewTime(now.Add(-2*time.Hour + time.Minute))), Revision: 99, Size: 3 << 20},
		LastDrill:  &DrillRow{Schedule: "daily", Backup: "a-old", Passed: true, Message: "7 keys, keyspace hash matches", Time: metav1.NewTime(now.Add(-5 * time.Hour))},
		Problems: []string{
			"etcd status of a-1: port-forward: pod a-1 is not running",
			`certificates: reading Secret a.peer-ca: secrets "a.peer-ca" not found`,
		},
	}
	// Times lose their sub-second part and location through the fake API server.
	if diff := cmp.Diff(want, st, cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) }), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func renderFixture() *Status {
	return &Status{Name: "a", Namespace: "ns", ClusterID: "c1", Leader: "a-0", Version: "3.6.16", Replicas: 3, Ready: 2, ClaimedBy: "quorate-system/quorate-abc",
		Members: []MemberRow{
			{Name: "a-0", ID: "a0", Role: RoleLeader, Healthy: true, Revision: 1234, DBSize: 3 << 20, DBSizeInUse: 1 << 20, Version: "3.6.16", Pod: "a-0 (Running)", Node: "node-1", Volume: "pv-1 1Gi"},
			{Name: "a-1", ID: "a1", Role: RoleFollower, DBSize: 1 << 20, Version: "3.6.16", Pod: "a-1 (Running)", Node: "node-2", Restarts: 3},
		},
		Alarms:       []string{"NOSPACE"},
		Conditions:   []ConditionRow{{"Available", "True", "QuorumHealthy", "2 of 3 healthy", metav1.NewTime(now.Add(-3 * time.Hour))}, {"Degraded", "True", "MemberUnhealthy", "unhealthy members: a-1", metav1.NewTime(now.Add(-10 * time.Minute))}},
		Certificates: []CertRow{{Name: "a-ca", Key: "ca.crt", Subject: "a-ca", NotAfter: now.Add(3000 * 24 * time.Hour)}, {Name: "a-operator-tls", Key: "tls.crt", Subject: "quorate-operator", NotAfter: now.Add(10 * 24 * time.Hour)}},
		LastBackup:   &BackupRow{Name: "a-new", Phase: "Completed", Time: ptr.To(metav1.NewTime(now.Add(-2 * time.Hour))), Revision: 99, Size: 3 << 20},
		LastDrill:    &DrillRow{Schedule: "daily", Backup: "a-old", Passed: true, Message: "7 keys, keyspace hash matches", Time: metav1.NewTime(now.Add(-5 * time.Hour))},
		Problems:     []string{"etcd status of a-1: port-forward: pod a-1 is not running"},
	}
}

func TestRenderStatus(t *testing.T) {
	var buf bytes.Buffer
	if err := RenderStatus(&buf, renderFixture(), now, false); err != nil {
		t.Fatal(err)
	}
	want := `Cluster:     ns/a
Cluster ID:  c1
Version:     3.6.16
Ready:       2/3
Leader:      a-0
Claimed by:  quorate-system/quorate-abc
Alarms:      NOSPACE

Members:
  NAME  ID  ROLE      HEALTH     REVISION  DB SIZE  DB IN USE  VERSION  POD            NODE    VOLUME    RESTARTS
  a-0   a0  leader    healthy    1234      3.0 MiB  1.0 MiB    3.6.16   a-0 (Running)  node-1  pv-1 1Gi  0
  a-1   a1  follower  unhealthy  -         1.0 MiB  -          3.6.16   a-1 (Running)  node-2  -         3

Conditions:
  TYPE       STATUS  REASON           SINCE    MESSAGE
  Available  True    QuorumHealthy    3h ago   2 of 3 healthy
  Degraded   True    MemberUnhealthy  10m ago  unhealthy members: a-1

Certificates:
  SECRET          KEY      SUBJECT           EXPIRES
  a-operator-tls  tls.crt  quorate-operator  2026-12-08T12:00:00Z (in 10d)
  a-ca            ca.crt   a-ca              2035-02-14T12:00:00Z (in 3000d)

Last backup:  a-new Completed, 2h ago, revision 99, 3.0 MiB
Last drill:   passed of a-old (schedule daily), 5h ago: 7 keys, keyspace hash matches

Not shown:
  etcd status of a-1: port-forward: pod a-1 is not running
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
}

func TestRenderStatusColours(t *testing.T) {
	st := &Status{Name: "a", Namespace: "ns", Replicas: 1, Ready: 1, Members: []MemberRow{{Name: "a-0", Role: RoleLeader, Healthy: false}}}
	var buf bytes.Buffer
	if err := RenderStatus(&buf, st, now, true); err != nil {
		t.Fatal(err)
	}
	want := "Cluster:     ns/a\nCluster ID:  -\nVersion:     -\nReady:       \x1b[32m1/1\x1b[0m\nLeader:      -\nClaimed by:  -\nAlarms:      \x1b[32mnone\x1b[0m\n\n" +
		"Members:\n  NAME  ID  ROLE    HEALTH              REVISION  DB SIZE  DB IN USE  VERSION  POD  NODE  VOLUME  RESTARTS\n" +
		"  a-0   -   leader  \x1b[31munhealthy\x1b[0m  -         -        -          -        -    -     -       0\n\n" +
		"Conditions:\n  TYPE  STATUS  REASON  SINCE  MESSAGE\n\n" +
		"Last backup:  \x1b[33mnone\x1b[0m\nLast drill:   none\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
}

func TestRenderStatusJSON(t *testing.T) {
	st := &Status{Name: "a", Namespace: "ns", Replicas: 1, Ready: 1, Paused: true,
		Members:      []MemberRow{{Name: "a-0", ID: "a0", Role: RoleLeader, Healthy: true, Revision: 5}},
		Certificates: []CertRow{{Name: "a-ca", Key: "ca.crt", Subject: "a-ca", NotAfter: now}}}
	var buf bytes.Buffer
	if err := RenderStatusJSON(&buf, st); err != nil {
		t.Fatal(err)
	}
	want := `{
  "name": "a",
  "namespace": "ns",
  "replicas": 1,
  "readyMembers": 1,
  "paused": true,
  "members": [
    {
      "name": "a-0",
      "id": "a0",
      "role": "leader",
      "healthy": true,
      "revision": 5,
      "restarts": 0
    }
  ],
  "certificates": [
    {
      "secret": "a-ca",
      "key": "ca.crt",
      "subject": "a-ca",
      "notAfter": "2026-11-28T12:00:00Z"
    }
  ]
}
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("json (-want +got):\n%s", diff)
	}
}

func TestScrub(t *testing.T) {
	key := []byte("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIOaXbX1yT0pq3nqzYxyzAAAAAAAAAAAA\n-----END EC PRIVATE KEY-----\n")
	pieces := scrubPieces([][]byte{key, []byte("hunter2hunter2"), []byte("short")})
	in := "log: key " + string(key) + " env AWS_SECRET_ACCESS_KEY=hunter2hunter2 and b64 aHVudGVyMmh1bnRlcjI= and line MHcCAQEEIOaXbX1yT0pq3nqzYxyzAAAAAAAAAAAA short"
	got := string(scrub([]byte(in), pieces))
	want := "log: key [REDACTED]\n env AWS_SECRET_ACCESS_KEY=[REDACTED] and b64 [REDACTED] and line [REDACTED] short"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := redactBucketURL("s3://u:p@bucket?region=eu&X-Amz-Signature=abc&endpoint=http://minio:9000"); got != "s3://bucket?X-Amz-Signature=%5BREDACTED%5D&endpoint=http%3A%2F%2Fminio%3A9000&region=eu" {
		t.Errorf("redactBucketURL: %s", got)
	}
}

// A secret value that an encoder escapes (a tab) is scrubbed before encoding: the escaped form
// would not match it afterwards.
func TestBundleScrubsBeforeEncoding(t *testing.T) {
	b := newBundle()
	b.learnSecret(&corev1.Secret{Data: map[string][]byte{"k": []byte("tab\tseparated-secret")}})
	b.addYAML("x.yaml", map[string]any{"message": "leak tab\tseparated-secret here", "revision": int64(1) << 60})
	b.addJSON("x.json", []string{"tab\tseparated-secret"})
	b.add("x.log", []byte("log tab\tseparated-secret\n"))
	var buf bytes.Buffer
	if err := b.write(&buf, now); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		got[f.Name] = string(data)
	}
	want := map[string]string{
		"x.yaml": "message: leak [REDACTED] here\nrevision: 1152921504606846976\n",
		"x.json": "[\n  \"[REDACTED]\"\n]\n",
		"x.log":  "log [REDACTED]\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

// --to-revision: a backup is restored only when it holds the revision asked for; otherwise the
// refusal names the backup that does, or the revisions the cluster's backups hold. Nothing is
// created either way.
func TestRestoreToRevision(t *testing.T) {
	backup := func(name, cluster string, rev int64, phase string) *v1alpha1.EtcdBackup {
		return &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: cluster},
			Status: v1alpha1.EtcdBackupStatus{Phase: phase, Revision: rev}}
	}
	objs := []client.Object{
		backup("a-1", "a", 100, v1alpha1.BackupCompleted), backup("a-2", "a", 250, v1alpha1.BackupCompleted),
		backup("a-3", "a", 300, v1alpha1.BackupFailed), backup("b-1", "b", 120, v1alpha1.BackupCompleted),
	}
	for _, tc := range []struct {
		backup string
		rev    int64
		want   string
	}{
		{"a-1", 250, "EtcdBackup a-1 holds revision 100, not 250; EtcdBackup a-2 holds revision 250: restore that one (kubectl quorate restore a-2 --into ...)"},
		{"a-2", 120, "no completed backup of cluster a holds revision 120: backups are snapshots, each of one revision, and a revision between two of them cannot be restored; the revisions held: 100 (a-1), 250 (a-2)"},
	} {
		env, base, _, _ := testEnv(t, objs, interceptor.Funcs{})
		err := env.Restore(context.Background(), tc.backup, RestoreOptions{Into: "new", ToRevision: tc.rev, StorageSize: "1Gi", Timeout: time.Second})
		if err == nil || err.Error() != tc.want {
			t.Errorf("restore %s --to-revision %d: %v\nwant %s", tc.backup, tc.rev, err, tc.want)
		}
		var clusters v1alpha1.EtcdClusterList
		if err := base.List(context.Background(), &clusters); err != nil || len(clusters.Items) != 0 {
			t.Errorf("restore %s --to-revision %d created %d clusters (%v)", tc.backup, tc.rev, len(clusters.Items), err)
		}
	}
}

// --to-revision equal to the backup's revision restores it as without the flag.
func TestRestoreToTheBackupsRevision(t *testing.T) {
	b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-1"}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "a"},
		Status: v1alpha1.EtcdBackupStatus{Phase: v1alpha1.BackupCompleted, Revision: 100, EtcdVersion: "3.6.16"}}
	env, base, _, _ := testEnv(t, []client.Object{b}, interceptor.Funcs{})
	// The wait times out (no operator here): what matters is the cluster created.
	err := env.Restore(context.Background(), "a-1", RestoreOptions{Into: "new", ToRevision: 100, StorageSize: "1Gi", Timeout: 100 * time.Millisecond})
	t.Logf("restore: %v", err)
	var clusters v1alpha1.EtcdClusterList
	if err := base.List(context.Background(), &clusters); err != nil {
		t.Fatal(err)
	}
	if len(clusters.Items) != 1 || clusters.Items[0].Spec.Bootstrap == nil || clusters.Items[0].Spec.Bootstrap.FromBackup == nil || clusters.Items[0].Spec.Bootstrap.FromBackup.BackupName != "a-1" {
		t.Fatalf("clusters created: %+v, want one restored from a-1", clusters.Items)
	}
}
