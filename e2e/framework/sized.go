package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SizedStorage gives the run a StorageClass of its own whose volumes hold size bytes and no
// more, as a cloud disk or a CSI volume of that size does (the local cluster's local-path
// volumes are directories of one large disk): count PersistentVolumes, each a file system of
// that size on node 1, bound by the PVCs of the class as they come. It returns the class's
// name; the run's teardown removes the class, the volumes and their file systems.
func (r *Run) SizedStorage(ctx context.Context, count int, size resource.Quantity) (string, error) {
	if err := r.requireNode(); err != nil {
		return "", err
	}
	name := "sized-" + r.Namespace
	r.OnCleanup(func(ctx context.Context) error {
		for i := range count {
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i)}}
			if err := r.Suite.Client.Delete(ctx, pv); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		if err := r.Suite.Client.Delete(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreNotFound(err) != nil {
			return err
		}
		return r.Suite.Node.RemoveSizedVolumes(r.Namespace)
	})
	vols, err := r.Suite.Node.SizedVolumes(r.Namespace, count, size.Value())
	if err != nil {
		return "", err
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "kubernetes.io/no-provisioner",
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimRetain),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	if err := r.Suite.Client.Create(ctx, sc); err != nil {
		return "", fmt.Errorf("creating StorageClass %s: %w", name, err)
	}
	for i, v := range vols {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              name,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: v.Path}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{v.Node}}},
				}}}},
			}}
		if err := r.Suite.Client.Create(ctx, pv); err != nil {
			return "", fmt.Errorf("creating PersistentVolume %s: %w", pv.Name, err)
		}
	}
	r.Event("action", "storage", fmt.Sprintf("StorageClass %s: %d volumes of %s each (tmpfs on node %s)", name, count, size.String(), vols[0].Node))
	return name, nil
}
