package etcdcluster

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
	"github.com/quorate-dev/quorate/internal/uidpolicy"
)

// TestMemberPodUserFollowsTheNamespace: with --pod-security-context=auto, a member pod in a
// namespace that carries OpenShift's UID range asks for no user, group or fsGroup (restricted-v2
// assigns them and rejects 65532); in any other namespace it asks for 65532.
func TestMemberPodUserFollowsTheNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        *corev1.PodSecurityContext
	}{
		{"openshift", map[string]string{uidpolicy.AnnotationUIDRange: "1000650000/10000", uidpolicy.AnnotationSupplementalGroup: "1000650000/10000"},
			&corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: seccomp}},
		{"plain", nil,
			&corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532), SeccompProfile: seccomp}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			if tc.annotations != nil {
				n := &corev1.Namespace{}
				if err := k8s.Get(ctx, types.NamespacedName{Name: ns}, n); err != nil {
					t.Fatal(err)
				}
				patch := client.MergeFrom(n.DeepCopy())
				n.Annotations = tc.annotations
				if err := k8s.Patch(ctx, n, patch); err != nil {
					t.Fatal(err)
				}
			}
			startWith(t, ns, etcd.NewFake("3.6.16"), "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) {
				r.UIDs = &uidpolicy.Policy{Mode: uidpolicy.Auto, Reader: r.APIReader}
			})
			if err := k8s.Create(ctx, newCluster(ns, "uids", 1)); err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{}
			eventually(t, timeout, "the member pod", func() error {
				return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.Member("uids", 0)}, pod)
			})
			if diff := cmp.Diff(tc.want, pod.Spec.SecurityContext); diff != "" {
				t.Errorf("member pod security context (-want +got):\n%s", diff)
			}
		})
	}
}

// The user a volume's pods run as is decided once, when the PVC is created, and recorded on
// it: a namespace that gains OpenShift's range annotation later does not change it for a
// running member's next pod (its files stay readable), and a PVC made by an earlier release
// (no record) keeps 65532.
func TestMemberPodUserFollowsTheVolume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startWith(t, ns, fake, "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) {
		r.UIDs = &uidpolicy.Policy{Mode: uidpolicy.Auto, Reader: r.APIReader}
	})
	kubelet(t, ns)
	bootstrap(t, ns, "vol", 1, fake)
	member := names.Member("vol", 0)
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: member}, pvc); err != nil {
		t.Fatal(err)
	}
	if got := pvc.Annotations[names.AnnotationPodUser]; got != string(resources.UIDFixed) {
		t.Fatalf("the PVC records %q, want %q", got, resources.UIDFixed)
	}
	n := &corev1.Namespace{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Annotations = map[string]string{uidpolicy.AnnotationUIDRange: "1000650000/10000"}
	if err := k8s.Patch(ctx, n, patch); err != nil {
		t.Fatal(err)
	}
	old := &corev1.Pod{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: member}, old); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	eventually(t, timeout, "the member's next pod", func() error {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: member}, pod); err != nil {
			return err
		}
		if pod.UID == old.UID {
			return errors.New("the old pod")
		}
		return nil
	})
	if sc := pod.Spec.SecurityContext; sc.RunAsUser == nil || *sc.RunAsUser != resources.PodUID || sc.FSGroup == nil || *sc.FSGroup != resources.PodUID {
		t.Errorf("the member's next pod runs as %v (fsGroup %v), want %d as its volume records", sc.RunAsUser, sc.FSGroup, resources.PodUID)
	}
}
