package etcdcluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/testsupport/backupfixture"
)

// The pods that reach a store get what the storage names, and the operator's proxy
// environment: the backup Job's pod and a restoring member's fetch container get its CA bundle
// (storage.caBundle: the ConfigMap or Secret key as a read-only volume and --ca-bundle naming
// it) and the proxy variables; the Job's pod and the restoring member pods run as its identity
// (service account, labels under the operator's, annotations). A caBundle naming both a
// ConfigMap and a Secret, or neither, and identity labels under the operator's prefix are
// refused by the API. A store's failure reason becomes the backup's condition reason.
func TestStorePods(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	proxy := []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy.internal:3128"}, {Name: "NO_PROXY", Value: ".svc,10.0.0.0/8"}}
	startWith(t, ns, fake, "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) { r.Images.ProxyEnv = proxy })
	ctx := context.Background()

	for _, ca := range []v1alpha1.CABundleSource{
		{ConfigMapKeyRef: &v1alpha1.KeyRef{Name: "store-ca", Key: "ca.crt"}, SecretKeyRef: &v1alpha1.KeyRef{Name: "store-ca", Key: "ca.crt"}},
		{},
	} {
		st := backupfixture.S3
		st.CABundle = &ca
		err := k8s.Create(ctx, &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "refused", Namespace: ns}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: st}})
		want := []string{"spec.storage.caBundle: Invalid value: caBundle takes exactly one of configMapKeyRef and secretKeyRef"}
		if err == nil || !slices.Equal(causes(err), want) {
			t.Fatalf("caBundle %+v: %q, want %q", ca, causes(err), want)
		}
	}

	// Identity labels under the operator's reserved prefix are refused.
	refused := backupfixture.S3
	refused.Identity = &v1alpha1.StorageIdentity{Labels: map[string]v1alpha1.LabelValue{"etcd.quorate.dev/backup": "x"}}
	err := k8s.Create(ctx, &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "refused", Namespace: ns}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: refused}})
	if want := []string{"spec.storage.identity.labels: Invalid value: identity.labels cannot use the etcd.quorate.dev/ prefix, which the operator reserves for its own labels"}; err == nil || !slices.Equal(causes(err), want) {
		t.Fatalf("identity.labels with the operator's prefix: %q, want %q", causes(err), want)
	}
	// Keys that are not qualified names, which the API server would refuse on the Job's pod
	// (leaving the backup waiting for its deadline), are refused on the backup.
	for _, id := range []v1alpha1.StorageIdentity{
		{Labels: map[string]v1alpha1.LabelValue{"has space": "x"}},
		{Labels: map[string]v1alpha1.LabelValue{"example.com/" + strings.Repeat("n", 64): "x"}},
		{Annotations: map[string]string{"Example.com/x": "y"}},
	} {
		what := "labels"
		if id.Annotations != nil {
			what = "annotations"
		}
		bad := backupfixture.S3
		bad.Identity = &id
		err := k8s.Create(ctx, &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "refused", Namespace: ns}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: bad}})
		want := []string{"spec.storage.identity." + what + ": Invalid value: identity." + what + " keys must be qualified names, as Kubernetes requires of " + what +
			": an optional DNS prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"}
		if err == nil || !slices.Equal(causes(err), want) {
			t.Fatalf("identity %+v: %q, want %q", id, causes(err), want)
		}
	}

	st := backupfixture.S3
	st.CABundle = &v1alpha1.CABundleSource{ConfigMapKeyRef: &v1alpha1.KeyRef{Name: "store-ca", Key: "bundle.pem"}}
	// The operator's own labels win over the identity's.
	st.Identity = &v1alpha1.StorageIdentity{ServiceAccountName: "etcd-backup-writer",
		Labels:      map[string]v1alpha1.LabelValue{"azure.workload.identity/use": "true", names.LabelManagedBy: "someone"},
		Annotations: map[string]string{"azure.workload.identity/client-id": "0000-1111"}}
	if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "etcd-backup-writer", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: ns}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: st}}
	if err := k8s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	// An identity whose ServiceAccount does not exist: the backup fails at once, without a Job
	// (which could never create its pod and would wait for the deadline).
	nosa := st
	nosa.Identity = &v1alpha1.StorageIdentity{ServiceAccountName: "nobody"}
	if err := k8s.Create(ctx, &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "nosa", Namespace: ns}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: nosa}}); err != nil {
		t.Fatal(err)
	}
	bootstrap(t, ns, "demo", 3, fake)
	tmpl := waitJob(t, ns, "b1-backup").Spec.Template
	pod := tmpl.Spec
	for _, k := range []string{batchv1.ControllerUidLabel, batchv1.JobNameLabel, "controller-uid", "job-name"} {
		delete(tmpl.Labels, k) // the API server's
	}
	checkIdentity(t, "backup Job", tmpl.ObjectMeta, pod, map[string]string{names.LabelCluster: "demo", names.LabelManagedBy: names.ManagedBy, names.LabelBackup: "b1",
		"azure.workload.identity/use": "true"})
	wantVolume := corev1.Volume{Name: "store-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "store-ca"}, Items: []corev1.KeyToPath{{Key: "bundle.pem", Path: "ca.crt"}}, DefaultMode: ptr.To[int32](0o444), Optional: ptr.To(true)}}}
	wantMount := corev1.VolumeMount{Name: "store-ca", MountPath: "/etc/quorate/store-ca", ReadOnly: true}
	checkTrust(t, "backup Job", pod, pod.Containers[0], wantVolume, wantMount)
	checkProxy(t, "backup Job", pod, pod.Containers[0], proxy)
	eventually(t, timeout, "backup nosa failed", func() error {
		got := getBackup(t, ns, "nosa")
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionBackupComplete)
		want := metav1.Condition{Type: v1alpha1.ConditionBackupComplete, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonIdentityNotFound, ObservedGeneration: got.Generation,
			Message: `storage.identity.serviceAccountName "nobody" is not a ServiceAccount of namespace ` + ns + `: create it (with the annotations your cloud's workload identity needs) or correct the name, then create a new backup`}
		if c == nil {
			return fmt.Errorf("no condition: %+v", got.Status)
		}
		c.LastTransitionTime = metav1.Time{}
		if got.Status.Phase != v1alpha1.BackupFailed || *c != want {
			return fmt.Errorf("phase %s, condition %+v, want %+v", got.Status.Phase, *c, want)
		}
		return nil
	})
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nosa-backup"}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("the backup without its ServiceAccount has a Job: %v", err)
	}

	// The Job fails at the store: the backup's condition has the store's reason and message,
	// and the Warning Event the message. A reason that is not a store's is not taken.
	for _, tc := range []struct{ backup, reason, want string }{
		{"b1", v1alpha1.ReasonStoreCertificateUntrusted, v1alpha1.ReasonStoreCertificateUntrusted},
		{"b2", "Forged", v1alpha1.ReasonBackupFailed},
	} {
		if tc.backup != "b1" {
			if err := k8s.Create(ctx, &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: tc.backup, Namespace: ns}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: st}}); err != nil {
				t.Fatal(err)
			}
		}
		why := "reaching the bucket of s3://backups/etcd/x.db: the store's certificate is signed by an authority the pod does not trust: name its CA in storage.caBundle " +
			"(tls: failed to verify certificate: x509: certificate signed by unknown authority) " + tc.backup
		finishJob(t, waitJob(t, ns, tc.backup+"-backup"), backup.Result{Kind: backup.ResultFailed, Error: why, Reason: tc.reason}, true)
		eventually(t, timeout, "backup "+tc.backup+" failed", func() error {
			got := getBackup(t, ns, tc.backup)
			c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionBackupComplete)
			if c == nil {
				return fmt.Errorf("no condition: %+v", got.Status)
			}
			want := metav1.Condition{Type: v1alpha1.ConditionBackupComplete, Status: metav1.ConditionFalse, Reason: tc.want, Message: why, ObservedGeneration: got.Generation}
			c.LastTransitionTime = metav1.Time{}
			if got.Status.Phase != v1alpha1.BackupFailed || *c != want {
				return fmt.Errorf("phase %s, condition %+v, want %+v", got.Status.Phase, *c, want)
			}
			return nil
		})
		assertEvent(t, ns, v1alpha1.EventBackupFailed, why)
	}

	// A restore from a location, its CA in a Secret.
	c := newCluster(ns, "restored", 1)
	rst := backupfixture.S3
	rst.CABundle = &v1alpha1.CABundleSource{SecretKeyRef: &v1alpha1.KeyRef{Name: "store-ca-secret", Key: "ca.crt"}}
	c.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{Storage: &rst, Key: "etcd/x.db"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	member := &corev1.Pod{}
	eventually(t, timeout, "the restoring member's pod", func() error {
		return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "restored-0"}, member)
	})
	wantVolume = corev1.Volume{Name: "store-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: "store-ca-secret", Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}, DefaultMode: ptr.To[int32](0o440), Optional: ptr.To(true)}}}
	checkTrust(t, "restoring member", member.Spec, member.Spec.InitContainers[1], wantVolume, wantMount)
	checkProxy(t, "restoring member", member.Spec, member.Spec.InitContainers[1], proxy)
	if member.Spec.ServiceAccountName != "" || member.Labels["azure.workload.identity/use"] != "" {
		t.Errorf("a restore without an identity runs as %q, labels %v", member.Spec.ServiceAccountName, member.Labels)
	}

	// A restore from the backup (as a drill's is) runs its bootstrap members as its identity.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := getBackup(t, ns, "b2")
		got.Status = v1alpha1.EtcdBackupStatus{Phase: v1alpha1.BackupCompleted, Key: "etcd/" + ns + "/demo/b2.db", SHA256: strings.Repeat("cd", 32), Revision: 7}
		return k8s.Status().Update(ctx, got)
	}); err != nil {
		t.Fatal(err)
	}
	c = newCluster(ns, "fromb2", 1)
	c.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{BackupName: "b2"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, timeout, "the restoring member's pod", func() error {
		return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "fromb2-0"}, member)
	})
	wantLabels := maps.Clone(names.ServingSelector("fromb2"))
	wantLabels[names.LabelManagedBy], wantLabels[names.LabelMember], wantLabels["azure.workload.identity/use"] = names.ManagedBy, "fromb2-0", "true"
	checkIdentity(t, "member restoring a backup", member.ObjectMeta, member.Spec, wantLabels)
	wantVolume.Secret = nil
	wantVolume.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "store-ca"}, Items: []corev1.KeyToPath{{Key: "bundle.pem", Path: "ca.crt"}}, DefaultMode: ptr.To[int32](0o444), Optional: ptr.To(true)}
	checkTrust(t, "member restoring a backup", member.Spec, member.Spec.InitContainers[1], wantVolume, wantMount)
}

// checkIdentity fails t unless the pod runs as the identity of the tests' storage (no API
// token mounted), with labels (compared whole) and its annotation.
func checkIdentity(t *testing.T, what string, meta metav1.ObjectMeta, pod corev1.PodSpec, labels map[string]string) {
	t.Helper()
	if pod.ServiceAccountName != "etcd-backup-writer" || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("%s: service account %q, automount %v; want etcd-backup-writer, false", what, pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	if diff := cmp.Diff(labels, meta.Labels); diff != "" {
		t.Errorf("%s: labels (-want +got):\n%s", what, diff)
	}
	if got := meta.Annotations["azure.workload.identity/client-id"]; got != "0000-1111" {
		t.Errorf("%s: annotations %v", what, meta.Annotations)
	}
}

// checkProxy fails t unless ctr has the operator's proxy environment, and no other container
// has any of it (the members are reached directly).
func checkProxy(t *testing.T, what string, pod corev1.PodSpec, ctr corev1.Container, proxy []corev1.EnvVar) {
	t.Helper()
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		var got []corev1.EnvVar
		for _, e := range c.Env {
			if slices.ContainsFunc(proxy, func(p corev1.EnvVar) bool { return p.Name == e.Name }) {
				got = append(got, e)
			}
		}
		want := proxy
		if c.Name != ctr.Name {
			want = nil
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: container %s's proxy environment (-want +got):\n%s", what, c.Name, diff)
		}
	}
}

// checkTrust fails t unless the pod has the CA bundle's volume, and ctr mounts it and passes
// its file to quorate-backup; no other container mounts it.
func checkTrust(t *testing.T, what string, pod corev1.PodSpec, ctr corev1.Container, volume corev1.Volume, mount corev1.VolumeMount) {
	t.Helper()
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == volume.Name })
	if i < 0 {
		t.Fatalf("%s: no volume %s in %+v", what, volume.Name, pod.Volumes)
	}
	if diff := cmp.Diff(volume, pod.Volumes[i]); diff != "" {
		t.Errorf("%s: CA bundle volume (-want +got):\n%s", what, diff)
	}
	var mounts []corev1.VolumeMount
	for _, m := range ctr.VolumeMounts {
		if m.Name == mount.Name {
			mounts = append(mounts, m)
		}
	}
	if diff := cmp.Diff([]corev1.VolumeMount{mount}, mounts); diff != "" {
		t.Errorf("%s: CA bundle mount (-want +got):\n%s", what, diff)
	}
	var flags []string
	for _, a := range ctr.Command {
		if strings.HasPrefix(a, "--ca-bundle") {
			flags = append(flags, a)
		}
	}
	if want := []string{"--ca-bundle=/etc/quorate/store-ca/ca.crt"}; !slices.Equal(flags, want) {
		t.Errorf("%s: %s's flags %q, want %q", what, ctr.Name, flags, want)
	}
	for _, other := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		if other.Name != ctr.Name && slices.ContainsFunc(other.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == mount.Name }) {
			t.Errorf("%s: container %s mounts the CA bundle too", what, other.Name)
		}
	}
}
