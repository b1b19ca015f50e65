package managercache

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

func TestTrimForCache(t *testing.T) {
	now := metav1.Now()
	full := metav1.ObjectMeta{
		Name: "demo-ca", Namespace: "db", UID: "u-1", ResourceVersion: "42", Generation: 3, CreationTimestamp: now, DeletionTimestamp: &now,
		Labels:          map[string]string{"etcd.quorate.dev/cluster": "demo"},
		Annotations:     map[string]string{"etcd.quorate.dev/object-hash": "abc"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "etcd.quorate.dev/v1alpha1", Kind: "EtcdCluster", Name: "demo", UID: "c-1", Controller: ptr.To(true)}},
		Finalizers:      []string{"f"},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "quorate-operator"}},
	}
	withoutManaged := *full.DeepCopy()
	withoutManaged.ManagedFields = nil
	meta := func(kind string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}, ObjectMeta: *full.DeepCopy()}
	}
	appliedMeta := func(kind string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind},
			ObjectMeta: metav1.ObjectMeta{Name: "demo-ca", Namespace: "db", UID: "u-1", ResourceVersion: "42", DeletionTimestamp: &now,
				Annotations: full.Annotations, OwnerReferences: full.OwnerReferences}}
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "db/demo-ca", Obj: meta("Secret")}

	for _, tc := range []struct {
		name    string
		in, out any
	}{
		{"a Secret's metadata keeps what the operator reads", meta("Secret"), &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "demo-ca", Namespace: "db", UID: "u-1", ResourceVersion: "42", DeletionTimestamp: &now,
				OwnerReferences: full.OwnerReferences},
		}},
		{"another kind's metadata is whole but for managedFields", meta("ConfigMap"),
			&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: withoutManaged}},
		{"a Service's metadata keeps what apply reads", meta("Service"), appliedMeta("Service")},
		{"a PDB's metadata keeps what apply reads", meta("PodDisruptionBudget"), appliedMeta("PodDisruptionBudget")},
		{"a NetworkPolicy's metadata keeps what apply reads", meta("NetworkPolicy"), appliedMeta("NetworkPolicy")},
		{"without a hash annotation, none is kept", func() any { m := meta("Service"); m.Annotations = map[string]string{"other": "x"}; return m }(),
			func() any { m := appliedMeta("Service"); m.Annotations = nil; return m }()},
		{"a PVC keeps what judgeVolume reads", &corev1.PersistentVolumeClaim{ObjectMeta: *full.DeepCopy(),
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("local"), VolumeName: "pv-1", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("1")},
					Limits: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				Conditions: []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}},
		}, &corev1.PersistentVolumeClaim{ObjectMeta: withoutManaged,
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("local"),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
				Conditions: []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}},
		}},
		{"a PVC without a storage request keeps none", &corev1.PersistentVolumeClaim{ObjectMeta: *full.DeepCopy(), Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}},
			&corev1.PersistentVolumeClaim{ObjectMeta: withoutManaged}},
		{"an EtcdCluster is whole but for managedFields", &v1alpha1.EtcdCluster{ObjectMeta: *full.DeepCopy(), Spec: v1alpha1.EtcdClusterSpec{Replicas: 3}},
			&v1alpha1.EtcdCluster{ObjectMeta: withoutManaged, Spec: v1alpha1.EtcdClusterSpec{Replicas: 3}}},
		{"a tombstone passes unchanged", tombstone, tombstone},
	} {
		got, err := trimForCache(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d := cmp.Diff(tc.out, got); d != "" {
			t.Errorf("%s: trimForCache (-want +got):\n%s", tc.name, d)
		}
	}

	// A cluster's volumes carry equal annotations (its UID, cluster ID and bootstrap size):
	// their cached copies share one map.
	var cached []map[string]string
	for _, m := range []string{"demo-0", "demo-1"} {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: m, Namespace: "db",
			Annotations: map[string]string{names.AnnotationOwnerUID: "u-1", names.AnnotationClusterID: "c1a55"}}}
		got, err := trimForCache(pvc)
		if err != nil {
			t.Fatal(err)
		}
		cached = append(cached, got.(*corev1.PersistentVolumeClaim).Annotations)
	}
	if len(cached[0]) != 2 || reflect.ValueOf(cached[0]).UnsafePointer() != reflect.ValueOf(cached[1]).UnsafePointer() {
		t.Errorf("the cached volumes of two members hold two maps of annotations %v and %v, not one", cached[0], cached[1])
	}
}
