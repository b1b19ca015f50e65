package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/internal/diskcheck"
)

func TestDiskCheckPod(t *testing.T) {
	got, err := diskCheckPod("ns", DiskCheckOptions{StorageClass: "fast", Image: "reg/quorate/operator:1", Size: "2Gi", Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "quorate-disk-check-", Labels: map[string]string{LabelDiskCheck: "fast"}},
		Spec: corev1.PodSpec{
			RestartPolicy:         corev1.RestartPolicyNever,
			ActiveDeadlineSeconds: ptr.To(int64(360)),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)), FSGroup: ptr.To(int64(65532)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "disk-check", Image: "reg/quorate/operator:1", Command: []string{"/quorate-backup", "disk-check", "--dir=/data"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("fast"),
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
				}},
			}}}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod (-want +got):\n%s", diff)
	}
	// The default StorageClass: no class named, and labels the API server accepts.
	def, err := diskCheckPod("ns", DiskCheckOptions{Image: "reg/quorate/operator:1", Size: "2Gi", Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if def.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Spec.StorageClassName != nil {
		t.Errorf("the default class's volume names a class: %v", *def.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Spec.StorageClassName)
	}
	if errs := validation.ValidateLabels(def.Labels, field.NewPath("metadata", "labels")); len(errs) > 0 {
		t.Errorf("the default class's pod has labels the API server refuses: %v", errs.ToAggregate())
	}
}

// The disk check waits for its pod, judges the log's result and deletes the pod.
func TestDiskCheck(t *testing.T) {
	reads := 0
	operator := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "quorate-system", Name: "op", Labels: OperatorSelector},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "reg/quorate/operator:1"}}}}
	env, base, out, errOut := testEnv(t, []client.Object{operator}, interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			obj.SetName(obj.GetGenerateName() + "x1")
			return cl.Create(ctx, obj, opts...)
		},
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := cl.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			p := obj.(*corev1.Pod)
			reads++
			switch reads {
			case 1:
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "waiting for the volume to bind"}}
			case 2:
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "disk-check", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			default:
				p.Status.Phase = corev1.PodSucceeded
			}
			return nil
		},
	})
	var logged string
	env.PodLogs = func(_ context.Context, ns, pod, container string) ([]byte, error) {
		logged = ns + "/" + pod + "/" + container
		r := diskcheck.Result{Syncs: 10000, BlockSize: 2300, P50: time.Millisecond, P99: 4 * time.Millisecond, Max: 9 * time.Millisecond, SyncsPerSec: 700, ThroughputBytesPerSec: 100 << 20}
		return []byte(r.Encode() + "\n"), nil
	}
	if err := env.DiskCheck(context.Background(), DiskCheckOptions{StorageClass: "fast", OperatorNamespace: "quorate-system", Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if logged != "ns/quorate-disk-check-x1/disk-check" {
		t.Errorf("read the log of %s", logged)
	}
	if err := base.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "quorate-disk-check-x1"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod is still there: %v", err)
	}
	wantErr := "pod ns/quorate-disk-check-x1 measures a 1Gi volume of StorageClass fast\n" +
		"  waiting for a node and the volume: waiting for the volume to bind\n" +
		"  measuring (about a minute)\n" +
		"  measured\n"
	if diff := cmp.Diff(wantErr, errOut.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	want := "StorageClass fast: 10000 writes of 2300 bytes, each made durable with fdatasync\n" +
		"  ok: fdatasync p99 4ms (p50 1ms, max 9ms) is within etcd's 10ms\n" +
		"  ok: 700 durable writes a second, enough for a heavily loaded cluster (500)\n" +
		"  sequential write throughput 100.0 MiB/s (snapshots and defragmentation copy the database at this rate)\n" +
		"the StorageClass meets etcd's disk guidance\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
