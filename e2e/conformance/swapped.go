package conformance

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/internal/launcher"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
)

// swappedFrom is the one-member EtcdCluster whose data data-swapped puts behind a member of
// the scenario's cluster.
const swappedFrom = "other"

// DataSwapped puts another cluster's data behind a follower's marker (a disk moved between
// machines, a restore by hand onto the wrong volume) and restarts its container. Started, that
// member would serve the other cluster's keys to this cluster's clients through the Service.
// The launcher must refuse the data before etcd starts, naming what the data is and what the
// marker says; the operator must stop membership changes naming the member; deleting the PVC,
// as the condition says, must replace the member without a human's further step. Every checker
// must pass: no client ever reads the other cluster's keys.
func DataSwapped() framework.Scenario {
	var follower string
	var before, other *v1alpha1.EtcdCluster
	return framework.Scenario{Name: "data-swapped", Labels: safety, Replicas: 3, Class: framework.Fault, NeedsNode: true,
		Steps: []framework.Step{
			{Name: "create EtcdCluster " + swappedFrom + " of one member beside the scenario's", Do: func(ctx context.Context, r *framework.Run) (err error) {
				if before, err = r.GetCluster(ctx); err != nil {
					return err
				}
				c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: swappedFrom, Namespace: r.Namespace},
					Spec: v1alpha1.EtcdClusterSpec{Replicas: 1, Version: before.Spec.Version, VolumeRetention: "Delete",
						Storage: v1alpha1.StorageSpec{Size: resource.MustParse("256Mi"), StorageClassName: before.Spec.Storage.StorageClassName}}}
				r.Suite.Opts.Shape.Apply(&c.Spec)
				if err := r.Suite.Client.Create(ctx, c); err != nil {
					return err
				}
				if err := r.WaitClusterSettled(ctx, swappedFrom, 1, 5*time.Minute); err != nil {
					return err
				}
				other = &v1alpha1.EtcdCluster{}
				return r.Suite.Client.Get(ctx, client.ObjectKeyFromObject(c), other)
			}},
			{Name: "find a follower", Do: func(ctx context.Context, r *framework.Run) (err error) {
				follower, err = r.Follower(ctx)
				return err
			}},
			{Name: "put " + swappedFrom + "'s data behind the follower's marker and restart its etcd container", Do: func(ctx context.Context, r *framework.Run) error {
				return r.SwapData(ctx, follower, swappedFrom+"-0")
			}},
			{Name: "the follower's launcher refuses the data, naming what it is and what the marker records", Do: func(ctx context.Context, r *framework.Run) error {
				want, err := swappedRefusal(before, other, follower)
				if err != nil {
					return err
				}
				got, err := r.WaitLauncherRefusal(ctx, follower, launcher.RefusalClusterIDMismatch, 3*time.Minute)
				if err != nil {
					return err
				}
				if *got != *want {
					return fmt.Errorf("refusal %+v, want %+v", *got, *want)
				}
				return nil
			}},
			{Name: "Degraded=True/ClusterIDMismatch names the follower", Do: func(ctx context.Context, r *framework.Run) error {
				return r.WaitFor(ctx, "Degraded to name "+follower, 2*time.Minute, func() error {
					return r.WantDegraded(ctx, v1alpha1.ReasonClusterIDMismatch, planner.ForeignDataMessage(follower))
				})
			}},
			// Replaced remove-first (it serves nothing): the new member may take its name again,
			// so the old one is told apart by its ID.
			{Name: "delete the follower's PVC, as the condition says: the member is replaced", Do: func(ctx context.Context, r *framework.Run) error {
				r.Event("action", "delete-pvc", "deleted the PersistentVolumeClaim of "+follower+", as Degraded asks")
				if err := r.Suite.Client.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: follower}}); err != nil {
					return err
				}
				return waitMemberGone(ctx, r, before, follower)
			}},
			waitSettled(3),
			{Name: "the cluster kept its ID, and " + swappedFrom + " is untouched", Do: func(ctx context.Context, r *framework.Run) error {
				ec, err := r.GetCluster(ctx)
				if err != nil {
					return err
				}
				if ec.Status.ClusterID != before.Status.ClusterID {
					return fmt.Errorf("cluster ID %s, was %s", ec.Status.ClusterID, before.Status.ClusterID)
				}
				if err := r.WaitClusterSettled(ctx, swappedFrom, 1, 2*time.Minute); err != nil {
					return err
				}
				now := &v1alpha1.EtcdCluster{}
				if err := r.Suite.Client.Get(ctx, client.ObjectKeyFromObject(other), now); err != nil {
					return err
				}
				if now.Status.ClusterID != other.Status.ClusterID || len(now.Status.Members) != 1 || now.Status.Members[0].ID != other.Status.Members[0].ID {
					return fmt.Errorf("%s is now cluster %s with members %+v; was %s with %+v", swappedFrom, now.Status.ClusterID, now.Status.Members, other.Status.ClusterID, other.Status.Members)
				}
				return nil
			}},
		}}
}

// swappedRefusal is the launcher's refusal of other's only member's data behind the marker of
// member of c.
func swappedRefusal(c, other *v1alpha1.EtcdCluster, member string) (*launcher.Refusal, error) {
	if len(other.Status.Members) != 1 {
		return nil, fmt.Errorf("%s has members %+v, want one", other.Name, other.Status.Members)
	}
	var memberID string
	for _, m := range c.Status.Members {
		if m.Name == member {
			memberID = m.ID
		}
	}
	if memberID == "" {
		return nil, fmt.Errorf("%s is not in the status of %s: %+v", member, c.Name, c.Status.Members)
	}
	var data launcher.DataIdentity
	var err error
	if data.MemberID, err = names.ParseID(other.Status.Members[0].ID); err != nil {
		return nil, err
	}
	if data.ClusterID, err = names.ParseID(other.Status.ClusterID); err != nil {
		return nil, err
	}
	return launcher.DataMismatch(resources.DataDir, data, launcher.Marker{ClusterID: c.Status.ClusterID, MemberID: memberID, Member: member}, false), nil
}
