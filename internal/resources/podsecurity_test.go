package resources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

// Member pods, backup Jobs and drill Jobs ask for user, group and fsGroup 65532 unless the
// platform chooses them; then they ask for none, and still refuse to run as root.
func TestPodSecurityContextFollowsTheUIDChoice(t *testing.T) {
	fixed := &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	platform := &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	c := cluster()
	target := JobTarget{Cluster: c, Members: []string{"demo-0"}, ClusterID: "abc"}
	b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
		Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: v1alpha1.BackupStorage{BucketURL: "s3://b"}}}
	for _, tc := range []struct {
		choice UIDChoice
		want   *corev1.PodSecurityContext
	}{{"", fixed}, {UIDFixed, fixed}, {UIDPlatform, platform}} {
		im := images
		im.UIDs = tc.choice
		pod, err := Pod(c, MemberPod{Member: "demo-0"}, im)
		if err != nil {
			t.Fatal(err)
		}
		for name, got := range map[string]*corev1.PodSecurityContext{
			"member pod": pod.Spec.SecurityContext,
			"backup Job": BackupJob(b, target, nil, im).Spec.Template.Spec.SecurityContext,
			"drill Job":  VerifyJob("v", metav1.OwnerReference{}, target, 10, 3, "h", im).Spec.Template.Spec.SecurityContext,
		} {
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("UIDs %q, %s: security context (-want +got):\n%s", tc.choice, name, diff)
			}
		}
		// The choice is not in the spec hash: a running member is not replaced for it.
		if got, want := pod.Annotations[names.AnnotationSpecHash], MemberSpecHash(c, images); got != want {
			t.Errorf("UIDs %q: spec hash %s, want %s (that of the default choice)", tc.choice, got, want)
		}
	}
}
