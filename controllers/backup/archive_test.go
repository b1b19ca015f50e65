package backup

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/hash"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/resources"
	"github.com/quorate-dev/quorate/internal/testsupport/backupfixture"
)

func archivedCluster(id string) *v1alpha1.EtcdCluster {
	return &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"},
		Status: v1alpha1.EtcdClusterStatus{ClusterID: id, Members: []v1alpha1.MemberStatus{{Name: "demo-0"}},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "Quorum"}}}}
}

func archiverPod(phase corev1.PodPhase, ip string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nightly-archiver-x", Namespace: "ns", Labels: resources.ArchiverLabels("demo", "nightly"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "nightly-archiver-7d9", UID: "rs-uid", Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Phase: phase, PodIP: ip}}
}

func conditionOf(s *v1alpha1.EtcdBackupSchedule, t string) metav1.Condition {
	for _, c := range s.Status.Conditions {
		if c.Type == t {
			c.LastTransitionTime = metav1.Time{}
			return c
		}
	}
	return metav1.Condition{}
}

// The schedule's archiver: created once the cluster is Available, its report read into status
// and the Archiving condition, updated when the cluster ID changes (a restore), and deleted
// when the archive is turned off, status.archive kept.
func TestScheduleRunsItsArchiver(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(5000, 0)
	s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", UID: types.UID("s-uid"), Generation: 3},
		Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: "demo", Schedule: "@daily", Storage: backupfixture.S3,
			Archive: &v1alpha1.ArchiveSpec{Enabled: true, MaxLag: &metav1.Duration{Duration: time.Second}}}}
	ec := archivedCluster("")
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(ec).Build()
	var report archive.Report
	var reportErr error
	var asked []string
	r := &ScheduleReconciler{Client: c, APIReader: c, Recorder: record.NewFakeRecorder(10), Now: func() time.Time { return now },
		ReadArchive: func(_ context.Context, addr string) (archive.Report, error) {
			asked = append(asked, addr)
			return report, reportErr
		}}
	key := types.NamespacedName{Namespace: "ns", Name: "nightly-archiver"}

	// No cluster ID yet: nothing runs, and the condition says why.
	if wait, err := r.archiveStep(ctx, s); err != nil || wait != archiveEvery {
		t.Fatalf("archive = %s, %v", wait, err)
	}
	want := metav1.Condition{Type: v1alpha1.ConditionArchiving, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonArchiveWaiting,
		Message: "EtcdCluster demo is not Available yet; the archive starts once it is", ObservedGeneration: 3}
	if got := conditionOf(s, v1alpha1.ConditionArchiving); got != want {
		t.Fatalf("condition\n got %+v\nwant %+v", got, want)
	}
	if err := c.Get(ctx, key, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the archiver's Deployment: %v, want none before the cluster is Available", err)
	}

	// Available: the Deployment runs quorate-backup archive through the client Service.
	ec.Status.ClusterID = "c1a55"
	if err := c.Update(ctx, ec); err != nil {
		t.Fatal(err)
	}
	if _, err := r.archiveStep(ctx, s); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{resources.BackupBinary, "archive", "--endpoints=client=https://demo-client.ns.svc:2379", "--cluster-id=c1a55",
		"--bucket=" + backupfixture.S3.BucketURL, "--prefix=etcd/ns/demo/archive/nightly", "--max-lag=1s", "--listen=:8080",
		"--tls-dir=/etc/quorate/tls", "--server-name=demo-client.ns.svc"}
	if got := d.Spec.Template.Spec.Containers[0].Command; fmt.Sprint(got) != fmt.Sprint(wantArgs) {
		t.Fatalf("archiver command\n got %q\nwant %q", got, wantArgs)
	}
	if !metav1.IsControlledBy(d, s) || d.Spec.Template.Labels[names.LabelBackup] == "" {
		t.Fatalf("the Deployment is not the schedule's, or its pod cannot reach the members under a NetworkPolicy: %+v", d.ObjectMeta)
	}
	want = metav1.Condition{Type: v1alpha1.ConditionArchiving, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonArchiveStarting,
		Message: "the archiver's pod does not exist yet", ObservedGeneration: 3}
	if got := conditionOf(s, v1alpha1.ConditionArchiving); got != want {
		t.Fatalf("condition\n got %+v\nwant %+v", got, want)
	}

	// The pod runs and reports: status.archive and Archiving=True.
	if err := c.Create(ctx, archiverPod(corev1.PodRunning, "10.0.0.7")); err != nil {
		t.Fatal(err)
	}
	report = archive.Report{ClusterID: "c1a55", LastRevision: 90, LastTime: time.Unix(4990, 0), Lag: 300 * time.Millisecond, Ranges: [][2]int64{{10, 50}, {61, 90}}}
	if _, err := r.archiveStep(ctx, s); err != nil {
		t.Fatal(err)
	}
	wantStatus := v1alpha1.ArchiveStatus{Location: "s3://backups/etcd/ns/demo/archive/nightly", ClusterID: "c1a55", LastRevision: 90,
		LastTime: &metav1.Time{Time: time.Unix(4990, 0)}, Lag: &metav1.Duration{Duration: 300 * time.Millisecond}, Ranges: []string{"10-50", "61-90"}, ObservedTime: &metav1.Time{Time: now}}
	if got := s.Status.Archive; got == nil || fmt.Sprint(*got) != fmt.Sprint(wantStatus) {
		t.Fatalf("status.archive\n got %+v\nwant %+v", got, wantStatus)
	}
	want = metav1.Condition{Type: v1alpha1.ConditionArchiving, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonArchiveCurrent,
		Message: "every change older than 11s is stored (status.archive has the newest revision)", ObservedGeneration: 3}
	if got := conditionOf(s, v1alpha1.ConditionArchiving); got != want || fmt.Sprint(asked) != "[10.0.0.7:8080]" {
		t.Fatalf("condition\n got %+v\nwant %+v (asked %v)", got, want, asked)
	}

	// Behind: the condition carries the archiver's error.
	report.Lag, report.Error = 40*time.Second, "writing segment x: the store refused"
	if _, err := r.archiveStep(ctx, s); err != nil {
		t.Fatal(err)
	}
	want = metav1.Condition{Type: v1alpha1.ConditionArchiving, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonArchiveBehind,
		Message: "changes of the cluster have waited 40s unstored (bound 11s); the archiver's last error: writing segment x: the store refused", ObservedGeneration: 3}
	if got := conditionOf(s, v1alpha1.ConditionArchiving); got != want {
		t.Fatalf("condition\n got %+v\nwant %+v", got, want)
	}

	// Not begun (its first reading of the archive fails): the condition carries why, and
	// status.archive stays as it was.
	report = archive.Report{ClusterID: "c1a55", Starting: "listing the archive's segments: listing s3://backups/x: the store's certificate is signed by an authority the pod does not trust"}
	before := *s.Status.Archive
	if _, err := r.archiveStep(ctx, s); err != nil {
		t.Fatal(err)
	}
	want = metav1.Condition{Type: v1alpha1.ConditionArchiving, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonArchiveStarting,
		Message: "the archiver's pod nightly-archiver-x has not begun archiving: " + report.Starting, ObservedGeneration: 3}
	if got := conditionOf(s, v1alpha1.ConditionArchiving); got != want || fmt.Sprint(*s.Status.Archive) != fmt.Sprint(before) {
		t.Fatalf("condition\n got %+v\nwant %+v\nstatus.archive %+v, was %+v", got, want, *s.Status.Archive, before)
	}

	// Not answering: the condition says where to look.
	reportErr = errors.New("connection refused")
	if _, err := r.archiveStep(ctx, s); err != nil {
		t.Fatal(err)
	}
	want = metav1.Condition{Type: v1alpha1.ConditionArchiving, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonArchiveStarting,
		Message: "the archiver's pod nightly-archiver-x does not answer on port 8080 (connection refused): a NetworkPolicy of the namespace may keep the operator out", ObservedGeneration: 3}
	if got := conditionOf(s, v1alpha1.ConditionArchiving); got != want {
		t.Fatalf("condition\n got %+v\nwant %+v", got, want)
	}

	// A restore gave the cluster a new ID: the archiver is updated to archive it.
	ec.Status.ClusterID = "d00d"
	if err := c.Update(ctx, ec); err != nil {
		t.Fatal(err)
	}
	if _, err := r.archiveStep(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Spec.Containers[0].Command[3]; got != "--cluster-id=d00d" {
		t.Fatalf("after a new cluster ID the archiver runs with %s", got)
	}

	// Off: the Deployment goes, status.archive stays, the condition goes.
	s.Spec.Archive.Enabled = false
	if wait, err := r.archiveStep(ctx, s); err != nil || wait != 0 {
		t.Fatalf("archive = %s, %v", wait, err)
	}
	if err := c.Get(ctx, key, d); !apierrors.IsNotFound(err) {
		t.Fatalf("the archiver's Deployment: %v, want it deleted", err)
	}
	if s.Status.Archive == nil || conditionOf(s, v1alpha1.ConditionArchiving).Type != "" {
		t.Fatalf("after turning the archive off: status.archive %+v, conditions %+v", s.Status.Archive, s.Status.Conditions)
	}
}

// A Deployment of the archiver's name that the schedule does not own is left alone, and the
// condition names it.
func TestArchiverLeavesAForeignDeploymentAlone(t *testing.T) {
	ctx := context.Background()
	s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", UID: types.UID("s-uid")},
		Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: "demo", Schedule: "@daily", Storage: backupfixture.S3, Archive: &v1alpha1.ArchiveSpec{Enabled: true}}}
	foreign := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "nightly-archiver", Namespace: "ns", Labels: map[string]string{"app": "mine"}}}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(archivedCluster("c1a55"), foreign).Build()
	r := &ScheduleReconciler{Client: c, APIReader: c, Recorder: record.NewFakeRecorder(10)}
	if _, err := r.archiveStep(ctx, s); err != nil {
		t.Fatal(err)
	}
	want := metav1.Condition{Type: v1alpha1.ConditionArchiving, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonArchiveWaiting,
		Message: "a Deployment nightly-archiver that this schedule does not own is in the way of its archiver: rename or delete it"}
	got := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil || got.Labels["app"] != "mine" {
		t.Fatalf("the foreign Deployment: %v, %+v", err, got.Labels)
	}
	if c := conditionOf(s, v1alpha1.ConditionArchiving); c != want {
		t.Fatalf("condition\n got %+v\nwant %+v", c, want)
	}
	s.Spec.Archive = nil
	if _, err := r.archiveStep(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil {
		t.Fatalf("turning the archive off deleted a Deployment the schedule does not own: %v", err)
	}
}

// The archiver reads its storage's Secrets once, when it starts: a change of what it reads
// (the credentials Secret's data, the CA bundle's key) rolls it (its pod template's annotation
// changes), and a Secret created after the archiver does too. A Secret deleted does not, and
// neither does an edit of a Secret's labels or of a key of the CA's Secret it does not read:
// that only patches the Deployment's record of the versions read, leaving the rest as it is.
func TestArchiverRollsWhenItsStoreSecretsChange(t *testing.T) {
	ctx := context.Background()
	storage := backupfixture.S3
	storage.CABundle = &v1alpha1.CABundleSource{SecretKeyRef: &v1alpha1.KeyRef{Name: "store-ca", Key: "ca.crt"}}
	s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", UID: types.UID("s-uid")},
		Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: "demo", Schedule: "@daily", Storage: storage, Archive: &v1alpha1.ArchiveSpec{Enabled: true}}}
	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-keys", Namespace: "ns", UID: "keys-1"}, Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("old")}}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(archivedCluster("c1a55"), keys).Build()
	// Reads of a Secret's data are counted: one whose version is the one hashed is not read.
	reads := 0
	apiReader := interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				reads++
			}
			return cl.Get(ctx, key, obj, opts...)
		}})
	r := &ScheduleReconciler{Client: c, APIReader: apiReader, Recorder: record.NewFakeRecorder(10)}
	key := types.NamespacedName{Namespace: "ns", Name: "nightly-archiver"}
	type applied struct{ hashes, versions, template string }
	deployment := func() *appsv1.Deployment {
		t.Helper()
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, key, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	apply := func() applied {
		t.Helper()
		if _, err := r.archiveStep(ctx, s); err != nil {
			t.Fatal(err)
		}
		d := deployment()
		return applied{d.Spec.Template.Annotations[names.AnnotationStoreSecrets], d.Annotations[names.AnnotationStoreSecretVersions], hash.Of(d.Spec.Template)}
	}
	secret := func(name string) *corev1.Secret {
		t.Helper()
		got := &corev1.Secret{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: name}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	update := func(sec *corev1.Secret) {
		t.Helper()
		if err := c.Update(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	version := func(name string) string { return secret(name).ResourceVersion }

	first := apply()
	if want := "s3-keys=" + secretHash(secret("s3-keys"), "") + ",store-ca="; first.hashes != want {
		t.Fatalf("template annotation %q, want %q (the CA's Secret does not exist yet)", first.hashes, want)
	}
	if want := "s3-keys=" + version("s3-keys") + ",store-ca="; first.versions != want {
		t.Fatalf("versions annotation %q, want %q", first.versions, want)
	}
	if again := apply(); again != first {
		t.Fatalf("nothing changed, yet the archiver went from %+v to %+v", first, again)
	}
	// A label edit changes the Secret's version, not its data: the archiver keeps running,
	// and what was set on its Deployment by others stays.
	d := deployment()
	d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = "2026-11-30T20:00:00Z"
	if err := c.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	restarted := hash.Of(deployment().Spec.Template)
	edited := secret("s3-keys")
	edited.Labels = map[string]string{"team": "storage"}
	update(edited)
	relabelled := apply()
	if relabelled.template != restarted || relabelled.hashes != first.hashes {
		t.Fatalf("a label edit of the credentials changed the archiver's template: %+v, then %+v", first, relabelled)
	}
	if want := "s3-keys=" + version("s3-keys") + ",store-ca="; relabelled.versions != want || relabelled.versions == first.versions {
		t.Fatalf("after a label edit: versions annotation %q, want %q", relabelled.versions, want)
	}
	reads = 0
	if again := apply(); again != relabelled || reads != 1 {
		// The CA's Secret, still missing, is looked for; the credentials are not read again.
		t.Fatalf("after the label edit was recorded, the archiver went from %+v to %+v, reading %d Secrets (want 1: the missing CA's)", relabelled, again, reads)
	}
	// New data rolls it.
	rotated := secret("s3-keys")
	rotated.Data = map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("rotated")}
	update(rotated)
	after := apply()
	if want := "s3-keys=" + secretHash(secret("s3-keys"), "") + ",store-ca="; after.hashes != want || after.template == relabelled.template {
		t.Fatalf("after the credentials changed: template annotation %q, want %q, and a new template", after.hashes, want)
	}
	// The CA's Secret appears: only its key counts.
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "store-ca", Namespace: "ns", UID: "ca-1"},
		Data: map[string][]byte{"ca.crt": []byte("ca"), "tls.crt": []byte("cert")}}); err != nil {
		t.Fatal(err)
	}
	withCA := apply()
	if want := "s3-keys=" + secretHash(secret("s3-keys"), "") + ",store-ca=" + secretHash(secret("store-ca"), "ca.crt"); withCA.hashes != want {
		t.Fatalf("after the CA's Secret appeared: template annotation %q, want %q", withCA.hashes, want)
	}
	if want := "s3-keys=" + version("s3-keys") + ",store-ca=" + version("store-ca"); withCA.versions != want {
		t.Fatalf("after the CA's Secret appeared: versions annotation %q, want %q", withCA.versions, want)
	}
	renewed := secret("store-ca")
	renewed.Data["tls.crt"] = []byte("renewed")
	update(renewed)
	if got := apply(); got.template != withCA.template || got.versions == withCA.versions {
		t.Fatalf("a renewal that kept ca.crt: %+v, then %+v (want the same template, the new version recorded)", withCA, got)
	}
	newCA := secret("store-ca")
	newCA.Data["ca.crt"] = []byte("another ca")
	update(newCA)
	rolledCA := apply()
	if rolledCA.template == withCA.template {
		t.Fatalf("a new ca.crt did not roll the archiver: %+v", rolledCA)
	}
	// A Secret deleted does not restart the archiver that runs; created again (a new UID),
	// even with the same data, it does.
	if err := c.Delete(ctx, secret("s3-keys")); err != nil {
		t.Fatal(err)
	}
	if got := apply(); got != rolledCA {
		t.Fatalf("after the credentials Secret was deleted: %+v, want %+v kept", got, rolledCA)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-keys", Namespace: "ns", UID: "keys-2"}, Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("rotated")}}); err != nil {
		t.Fatal(err)
	}
	if got, want := apply().hashes, "s3-keys="+secretHash(secret("s3-keys"), "")+",store-ca="+secretHash(secret("store-ca"), "ca.crt"); got != want || got == rolledCA.hashes {
		t.Fatalf("after the credentials Secret came back: template annotation %q, want %q", got, want)
	}
}

// A Secret's hash is keyed with its UID and covers only what the archiver reads.
func TestSecretHash(t *testing.T) {
	sec := func(uid types.UID, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{UID: uid}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	base := secretHash(sec("u1", map[string]string{"k": "v"}), "")
	if secretHash(sec("u1", map[string]string{"k": "v"}), "") != base {
		t.Error("the same Secret hashes differently")
	}
	if secretHash(sec("u2", map[string]string{"k": "v"}), "") == base {
		t.Error("another UID hashes the same: the hash is not keyed with it")
	}
	if secretHash(sec("u1", map[string]string{"k": "w"}), "") == base {
		t.Error("other data hashes the same")
	}
	if secretHash(sec("u1", map[string]string{"ca.crt": "x", "other": "y"}), "ca.crt") != secretHash(sec("u1", map[string]string{"ca.crt": "x"}), "ca.crt") {
		t.Error("a key the archiver does not read changed the CA's hash")
	}
	if secretHash(sec("u1", map[string]string{"ca.crt": "x"}), "ca.crt") == secretHash(sec("u1", map[string]string{"ca.crt": "z"}), "ca.crt") {
		t.Error("another ca.crt hashes the same")
	}
}

// The operator reads a report served with 200, and one served with 503 that says why the
// archiver has not begun; any other answer is an error.
func TestReadArchiveHTTP(t *testing.T) {
	for _, tc := range []struct {
		name    string
		code    int
		body    string
		want    archive.Report
		wantErr string
	}{
		{"begun", http.StatusOK, `{"clusterID":"c1a55","lastRevision":90}`, archive.Report{ClusterID: "c1a55", LastRevision: 90}, ""},
		{"not begun", http.StatusServiceUnavailable, `{"clusterID":"c1a55","starting":"listing the archive's segments: AccessDenied"}`,
			archive.Report{ClusterID: "c1a55", Starting: "listing the archive's segments: AccessDenied"}, ""},
		{"unavailable without a reason", http.StatusServiceUnavailable, `{"clusterID":"c1a55","lastRevision":90}`, archive.Report{}, "/status answered 503 Service Unavailable"},
		{"another answer", http.StatusNotFound, `not found`, archive.Report{}, "/status answered 404 Not Found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.code)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			got, err := readArchiveHTTP(context.Background(), strings.TrimPrefix(srv.URL, "http://"))
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || gotErr != tc.wantErr {
				t.Fatalf("readArchiveHTTP = %+v, %q; want %+v, %q", got, gotErr, tc.want, tc.wantErr)
			}
		})
	}
}
