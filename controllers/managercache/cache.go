// Package managercache says what the manager's cache holds of each kind the controllers
// watch (every reconciler shares it): the namespaces, and each object trimmed to what the
// operator reads.
package managercache

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/intern"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/resources"
)

// Options is what the operator's cache holds: the given namespaces (none: every
// namespace), no object's managedFields (the operator never reads them, and at thousands of
// clusters they are tens of MiB: make bench-scale), of pods only what the operator reads
// (resources.PodForCache), and of the other kinds what trimForCache keeps.
func Options(namespaces ...string) cache.Options {
	opts := cache.Options{
		DefaultTransform: trimForCache,
		ByObject:         map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: resources.PodForCache}},
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, n := range namespaces {
			opts.DefaultNamespaces[n] = cache.Config{}
		}
	}
	return opts
}

// trimForCache is the cache's transform for every kind but pods. Each cached object is kept
// for as long as its cluster lives, so at thousands of clusters every field counts (make
// bench-scale, docs/measurements.md). It drops managedFields, and:
//   - of a member's PVC, of its spec the StorageClass and the storage it asks for, of its
//     status the phase and conditions (judgeVolume); the operator patches PVCs (a merge patch
//     of what it changes) and never updates one whole;
//   - of a Secret's metadata (the manager caches no Secret's data: secretMemo), all but what
//     the operator reads from it: the name and resourceVersion (secretMemo compares them) and
//     the owner references (which cluster a change wakes up), with the UID and the deletion
//     timestamp;
//   - of the metadata of the Services, the PodDisruptionBudget and the NetworkPolicy (the
//     manager caches their metadata alone: apply reads the rest from the API server when it
//     writes), the same and the hash annotation apply compares.
//
// What the kept metadata (and an EtcdCluster's conditions) repeat from object to object is
// shared (package intern), and the volumes of a cluster share one annotations map. Anything
// else (a tombstone, another kind) keeps all but its managedFields.
func trimForCache(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	o.SetManagedFields(nil)
	switch o := o.(type) {
	case *corev1.PersistentVolumeClaim:
		var req corev1.ResourceList
		if q, ok := o.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			req = corev1.ResourceList{corev1.ResourceStorage: q}
		}
		o.Spec = corev1.PersistentVolumeClaimSpec{StorageClassName: o.Spec.StorageClassName, Resources: corev1.VolumeResourceRequirements{Requests: req}}
		o.Status = corev1.PersistentVolumeClaimStatus{Phase: o.Status.Phase, Conditions: o.Status.Conditions}
	case *metav1.PartialObjectMetadata:
		switch o.Kind {
		case "Secret", "Service", "PodDisruptionBudget", "NetworkPolicy":
			m := o.ObjectMeta
			o.ObjectMeta = metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
				OwnerReferences: m.OwnerReferences, DeletionTimestamp: m.DeletionTimestamp}
			if h, ok := m.Annotations[names.AnnotationObjectHash]; ok && o.Kind != "Secret" {
				o.Annotations = map[string]string{names.AnnotationObjectHash: h}
			}
		}
	case *v1alpha1.EtcdCluster:
		intern.Conditions(o.Status.Conditions)
	}
	intern.Meta(o)
	if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok {
		pvc.Annotations = intern.SharedMap(pvc.Annotations) // a cluster's volumes carry its UID and cluster ID
	}
	return o, nil
}

// Metadata reads the metadata alone of the object of kind gvk at key through reader: from the
// manager's cache, the metadata informer of that kind (the manager caches the metadata alone
// of Secrets, Services, PodDisruptionBudgets and NetworkPolicies; reading the whole object
// from the cache would start a second, whole-object informer).
func Metadata(ctx context.Context, reader client.Reader, gvk schema.GroupVersionKind, key client.ObjectKey) (*metav1.PartialObjectMetadata, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m, reader.Get(ctx, key, m)
}

// SecretVersion is the resourceVersion of the Secret at key as reader shows it (the manager's
// Secret metadata informer, which holds no Secret's data).
func SecretVersion(ctx context.Context, reader client.Reader, key client.ObjectKey) (string, error) {
	m, err := Metadata(ctx, reader, corev1.SchemeGroupVersion.WithKind("Secret"), key)
	return m.ResourceVersion, err
}
