package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/resources"
)

// ensureServices creates the peer and client Services and the PDB, and updates one only when
// the hash of its desired content differs from the hash it carries.
func (r *Reconciler) ensureServices(ctx context.Context, c *v1alpha1.EtcdCluster) error {
	for _, svc := range []*corev1.Service{resources.PeerService(c), resources.ClientService(c)} {
		err := r.apply(ctx, svc, &corev1.Service{}, func(existing client.Object) {
			e := existing.(*corev1.Service)
			e.Spec.Selector, e.Spec.Ports, e.Spec.PublishNotReadyAddresses = svc.Spec.Selector, svc.Spec.Ports, svc.Spec.PublishNotReadyAddresses
		})
		if err != nil {
			return err
		}
	}
	pdb := resources.PDB(c)
	return r.apply(ctx, pdb, &policyv1.PodDisruptionBudget{}, func(existing client.Object) {
		existing.(*policyv1.PodDisruptionBudget).Spec = pdb.Spec
	})
}

// apply creates desired, or updates the existing object with update() when its hash is stale.
func (r *Reconciler) apply(ctx context.Context, desired, existing client.Object, update func(client.Object)) error {
	err := r.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	if apierrors.IsNotFound(err) {
		if err := r.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", desired, desired.GetName(), err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	want := desired.GetAnnotations()[names.AnnotationObjectHash]
	if existing.GetAnnotations()[names.AnnotationObjectHash] == want {
		return nil
	}
	update(existing)
	ann := existing.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[names.AnnotationObjectHash] = want
	existing.SetAnnotations(ann)
	if err := r.Update(ctx, existing); err != nil {
		return fmt.Errorf("updating %T %s: %w", existing, existing.GetName(), err)
	}
	return nil
}
