package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/managercache"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
)

// ensureServices creates the peer and client Services, and updates one only when the hash of
// its desired content differs from the hash it carries.
func (r *Reconciler) ensureServices(ctx context.Context, c *v1alpha1.EtcdCluster) error {
	labelled, err := r.labelServing(ctx, c)
	if err != nil {
		// The client Service keeps selecting every member: members are then stopped
		// without leaving it first (the planner is told through the pods' labels).
		log.FromContext(ctx).Error(err, "labelling member pods for the client Service")
		r.Recorder.Eventf(c, corev1.EventTypeWarning, v1alpha1.EventServiceDrainRefused, "%v: the client Service keeps its selector until every member pod carries the label", err)
		labelled = 1
	}
	for _, svc := range []*corev1.Service{resources.PeerService(c), resources.ClientService(c)} {
		if labelled > 0 && svc.Name == names.ClientService(c.Name) {
			// The client Service selects names.LabelServing once the cache shows it on
			// every member pod: pods made by an earlier release carry none, and a Service
			// changed first would drop them all.
			continue
		}
		err := r.apply(ctx, c, svc, &corev1.Service{}, func(existing client.Object) {
			e := existing.(*corev1.Service)
			e.Spec.Selector, e.Spec.Ports, e.Spec.PublishNotReadyAddresses = svc.Spec.Selector, svc.Spec.Ports, svc.Spec.PublishNotReadyAddresses
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// labelServing gives names.LabelServing "true" to the member pods that carry none (made by a
// release before it), and says how many it labelled.
func (r *Reconciler) labelServing(ctx context.Context, c *v1alpha1.EtcdCluster) (int, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabels(names.MemberSelector(c.Name))); err != nil {
		return 0, err
	}
	labelled := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if _, ok := p.Labels[names.LabelServing]; ok || !metav1.IsControlledBy(p, c) || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.patchServing(ctx, p, "true", nil); err != nil {
			return labelled, fmt.Errorf("labelling pod %s %s=true before the client Service selects it: %w", p.Name, names.LabelServing, err)
		}
		labelled++
	}
	return labelled, nil
}

// ensureNetworkPolicy creates or updates the cluster's NetworkPolicy, or deletes it when
// spec.networkPolicy.enabled is false.
func (r *Reconciler) ensureNetworkPolicy(ctx context.Context, c *v1alpha1.EtcdCluster) error {
	np := resources.NetworkPolicy(c, r.Operator)
	if !ptr.Deref(c.Spec.NetworkPolicy.Enabled, true) {
		existing, err := r.cachedMeta(ctx, client.ObjectKeyFromObject(np), np)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if !metav1.IsControlledBy(existing, c) {
			return nil // somebody else's: left alone
		}
		return r.deleteOwned(ctx, c, existing, v1alpha1.EventNetworkPolicyDeleted, "spec.networkPolicy.enabled is false")
	}
	err := r.apply(ctx, c, np, &networkingv1.NetworkPolicy{}, func(existing client.Object) {
		existing.(*networkingv1.NetworkPolicy).Spec = np.Spec
	})
	if apierrors.IsInvalid(err) {
		return fmt.Errorf("%w; correct spec.networkPolicy (the NetworkPolicy in force is unchanged)", err)
	}
	return err
}

// deleteOwned deletes an object of the cluster exactly as it was read (UID and
// resourceVersion preconditions: a changed or recreated object is left for the next pass)
// and records an Event of the given reason saying why.
func (r *Reconciler) deleteOwned(ctx context.Context, c *v1alpha1.EtcdCluster, obj client.Object, reason, why string) error {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	kind := "object"
	if gvk, err := apiutil.GVKForObject(obj, r.Scheme); err == nil {
		kind = gvk.Kind
	}
	if err := r.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s %s (%s): %w", kind, obj.GetName(), why, err)
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, reason, "deleted %s %s: %s", kind, obj.GetName(), why)
	return nil
}

// upkeep keeps the objects that follow the membership in line after a step: the PDB counts
// the voters and learners etcd lists now (and the external voters of a join), and every member
// PVC follows spec.volumeRetention. In steady state it writes nothing.
func (r *Reconciler) upkeep(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation, s planner.State) error {
	pdb := resources.PDB(c, pdbVoters(c, s))
	if err := r.apply(ctx, c, pdb, &policyv1.PodDisruptionBudget{}, func(existing client.Object) {
		existing.(*policyv1.PodDisruptionBudget).Spec = pdb.Spec
	}); err != nil {
		return err
	}
	if c.Spec.Paused {
		return nil
	}
	for _, name := range sortedKeys(o.pvcs) {
		p := o.pvcs[name]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		updated := p.DeepCopy()
		if !resources.SetRetention(c, updated) {
			continue
		}
		if err := r.Patch(ctx, updated, client.MergeFromWithOptions(p, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("setting the retention of PVC %s to %s: %w", name, c.Spec.VolumeRetention, err)
		}
	}
	return nil
}

// pdbVoters counts the voters the PDB keeps a quorum of: the voters and learners etcd lists
// now, and while a join runs its external voters, with those healthy now. Without a member
// list, the last one observed, and no external voter counted healthy.
func pdbVoters(c *v1alpha1.EtcdCluster, s planner.State) resources.Voters {
	var v resources.Voters
	members := s.Members
	if !s.EtcdReachable {
		members = nil
		for _, m := range c.Status.Members {
			members = append(members, planner.Member{InEtcd: true, Learner: m.Learner})
		}
	}
	for _, m := range members {
		switch {
		case !m.InEtcd:
		case m.Learner:
			v.Learners++
		default:
			v.Members++
		}
	}
	if s.Join != nil && s.Join.Started {
		if !s.EtcdReachable && c.Status.Join != nil {
			v.External = c.Status.Join.Remaining
		}
		for _, e := range s.Join.External {
			if e.Learner {
				continue
			}
			v.External++
			if e.Healthy(s.ClusterID) {
				v.ExternalHealthy++
			}
		}
	}
	if v.Members == 0 && v.External == 0 {
		v.Members = c.Spec.Replicas
	}
	return v
}

// apply creates desired, or updates the existing object with update() when its hash is stale.
// The cache keeps the metadata alone of what apply writes (Owns with OnlyMetadata,
// trimForCache), which tells a settled object (c's, carrying the hash of what c wants: the
// steady state, no request); anything else is decided on existing as the API server has it
// now. An existing object that c does not control is not touched: the error names it.
func (r *Reconciler) apply(ctx context.Context, c *v1alpha1.EtcdCluster, desired, existing client.Object, update func(client.Object)) error {
	key := client.ObjectKeyFromObject(desired)
	want := desired.GetAnnotations()[names.AnnotationObjectHash]
	cached, err := r.cachedMeta(ctx, key, existing)
	if apierrors.IsNotFound(err) {
		if err := r.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", desired, desired.GetName(), err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if metav1.IsControlledBy(cached, c) && cached.Annotations[names.AnnotationObjectHash] == want {
		return nil
	}
	if err := r.APIReader.Get(ctx, key, existing); err != nil {
		return client.IgnoreNotFound(err) // gone since: the next pass creates it
	}
	if replaced, err := r.replaceLeftover(ctx, c, existing, desired); replaced {
		return err
	}
	if err := controlled(c, existing); err != nil {
		return err
	}
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

// cachedMeta reads from the cache the metadata of the object of kind like's under key (a
// kind the manager caches the metadata of alone: reading like itself from the cache would
// start a second, whole-object informer).
func (r *Reconciler) cachedMeta(ctx context.Context, key client.ObjectKey, like client.Object) (*metav1.PartialObjectMetadata, error) {
	gvk, err := apiutil.GVKForObject(like, r.Scheme)
	if err != nil {
		return nil, err
	}
	return managercache.Metadata(ctx, r.Client, gvk, key)
}

// removeLeftover deletes obj when an earlier EtcdCluster of c's name controls it: that
// cluster was deleted and the garbage collector has not removed its dependents yet (a cluster
// deleted and created again at once, or a schedule's next drill). It reports whether it
// deleted obj. The earlier cluster is known gone only when the API server shows c itself
// under that name; the delete carries obj's UID and resourceVersion, so nothing made or
// changed since is removed.
func (r *Reconciler) removeLeftover(ctx context.Context, c *v1alpha1.EtcdCluster, obj client.Object) (bool, error) {
	ref := leftoverOf(c, obj)
	if ref == nil {
		return false, nil
	}
	live := &v1alpha1.EtcdCluster{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(c), live); err != nil || live.UID != c.UID {
		return false, client.IgnoreNotFound(err)
	}
	if obj.GetDeletionTimestamp() != nil {
		return true, nil // deleted already, by an earlier pass or the garbage collector
	}
	// A deletion reads the claim again first (a leftover is no member: a new claim need
	// not wait a term for it, as for mayAct's changes).
	if err := r.Ownership.Confirm(ctx, r.APIReader, r.Recorder, c, holdOf(ctx)); err != nil {
		return false, err
	}
	// The object as this pass saw it, no later state: one the cache shows before an earlier
	// pass's delete is not deleted (and announced) twice.
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	err := r.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return true, nil // gone, or changed since: a later pass sees what it is now
	case err != nil:
		return false, fmt.Errorf("deleting %T %s, left by an earlier EtcdCluster %s: %w", obj, obj.GetName(), c.Name, err)
	}
	msg := fmt.Sprintf("deleted %T %s, left by an earlier EtcdCluster %s (UID %s) and not yet garbage-collected, to create this cluster's own", obj, obj.GetName(), c.Name, ref.UID)
	log.FromContext(ctx).Info(msg)
	r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventLeftoverRemoved, "%s", msg)
	return true, nil
}

// leftoverOf returns obj's controller when that is an EtcdCluster of c's name other than c.
func leftoverOf(c *v1alpha1.EtcdCluster, obj metav1.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != "EtcdCluster" || ref.APIVersion != v1alpha1.GroupVersion.String() || ref.Name != c.Name || ref.UID == c.UID {
		return nil
	}
	return ref
}

// replaceLeftover, for apply and create, which found existing under the name of obj: when
// existing is a leftover (removeLeftover), it deletes it and creates obj; one still being
// deleted (a finalizer holds it) is waited for. It reports whether existing was a leftover,
// with the step's outcome then in err.
func (r *Reconciler) replaceLeftover(ctx context.Context, c *v1alpha1.EtcdCluster, existing, obj client.Object) (bool, error) {
	removed, err := r.removeLeftover(ctx, c, existing)
	if !removed || err != nil {
		return err != nil, err
	}
	err = r.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		return true, fmt.Errorf("%T %s, left by an earlier EtcdCluster %s, is still being deleted: waiting for it to go", obj, obj.GetName(), c.Name)
	}
	if err != nil {
		return true, fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
	}
	return true, nil
}

// controlled refuses an object of one of c's names that c does not own: the operator never
// takes over or changes what somebody else made.
func controlled(c *v1alpha1.EtcdCluster, obj client.Object) error {
	if metav1.IsControlledBy(obj, c) {
		return nil
	}
	if p, ok := obj.(*corev1.PersistentVolumeClaim); ok && resources.Retained(c, p) {
		return nil
	}
	owner := "no owner"
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			owner = fmt.Sprintf("controlled by %s %s", ref.Kind, ref.Name)
		}
	}
	return fmt.Errorf("%T %s/%s exists but does not belong to EtcdCluster %s (%s): the operator does not take it over; delete or rename it", obj, obj.GetNamespace(), obj.GetName(), c.Name, owner)
}

// ownedObjects lends the certificates (certificates.Objects) the reconciler's deletes.
type ownedObjects struct{ r *Reconciler }

// DeleteOwned is deleteOwned.
func (o ownedObjects) DeleteOwned(ctx context.Context, c *v1alpha1.EtcdCluster, obj client.Object, reason, why string) error {
	return o.r.deleteOwned(ctx, c, obj, reason, why)
}

// RemoveLeftover is removeLeftover.
func (o ownedObjects) RemoveLeftover(ctx context.Context, c *v1alpha1.EtcdCluster, obj client.Object) (bool, error) {
	return o.r.removeLeftover(ctx, c, obj)
}
