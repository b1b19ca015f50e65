package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

// identify settles which etcd cluster ID the members must report; settleIdentity makes it
// durable: in status, and on the PVC of every member that has started (a volume that remembers
// its cluster survives the loss of status and forbids a second bootstrap). It returns 0 before
// bootstrap.
//
// The ID comes from status; failing that, from a volume that recorded it; failing that, from
// the member list of a cluster that has just formed.
func (r *Reconciler) identify(c *v1alpha1.EtcdCluster, o *observation) (uint64, error) {
	id, err := r.recordedClusterID(c, o)
	if err != nil {
		return 0, err
	}
	if id == 0 && o.members != nil && o.listedClusterID != 0 && !c.Joining() {
		id = o.listedClusterID
		r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventClusterBootstrapped, "etcd cluster %s formed with %d members", names.FormatID(id), len(o.members))
	}
	return id, nil
}

// recordedClusterID is the cluster ID in status, or else the one a member volume recorded.
func (r *Reconciler) recordedClusterID(c *v1alpha1.EtcdCluster, o *observation) (uint64, error) {
	if c.Status.ClusterID != "" {
		id, err := names.ParseID(c.Status.ClusterID)
		if err != nil {
			return 0, fmt.Errorf("status.clusterID %q is not a hex cluster ID: %w", c.Status.ClusterID, err)
		}
		return id, nil
	}
	for _, n := range sortedKeys(o.pvcs) {
		v := o.pvcs[n].Annotations[names.AnnotationClusterID]
		if v == "" {
			continue
		}
		if id, err := names.ParseID(v); err == nil {
			r.Recorder.Eventf(c, corev1.EventTypeWarning, v1alpha1.EventClusterIDRecovered, "status had no cluster ID; recovered %s from the volume of %s", v, n)
			return id, nil
		}
	}
	return 0, nil
}

// annotateVolumes records, for every member etcd lists as started, the cluster ID on its PVC,
// and on its Pod that it has run: the pod's launcher reads that through the downward API and
// from then on refuses to start etcd on an empty volume, whatever the pod's flags say (a
// bootstrap pod's allow it).
func (r *Reconciler) annotateVolumes(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation) error {
	for _, em := range o.members {
		name, ok := o.memberOf(em)
		if !ok || !em.Started() {
			continue
		}
		want := map[string]string{names.AnnotationClusterID: c.Status.ClusterID}
		if p, ok := o.pvcs[name]; ok {
			if err := r.annotate(ctx, p, want); err != nil {
				return fmt.Errorf("recording the cluster ID on PVC %s: %w", name, err)
			}
		}
		want[names.AnnotationRequireData] = "true"
		if p, ok := o.pods[name]; ok {
			if err := r.annotate(ctx, p, want); err != nil {
				return fmt.Errorf("marking pod %s as a member that has run: %w", name, err)
			}
		}
	}
	return nil
}

// annotate adds annotations an object lacks, with one patch; it writes nothing when they are
// all there, and leaves objects being deleted alone.
func (r *Reconciler) annotate(ctx context.Context, obj client.Object, want map[string]string) error {
	if !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	ann := obj.GetAnnotations()
	missing := false
	for k, v := range want {
		missing = missing || ann[k] != v
	}
	if !missing {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	if ann == nil {
		ann = map[string]string{}
	}
	for k, v := range want {
		ann[k] = v
	}
	obj.SetAnnotations(ann)
	return client.IgnoreNotFound(r.Patch(ctx, obj, patch))
}
