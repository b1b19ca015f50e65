package conformance

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
)

// RestoredMemberWiped (issue 39, item 7): a cluster restored from a backup keeps its bootstrap
// pods, whose init containers fetch and restore the backup. When a member's volume is emptied
// and its pod's sandbox is lost, the kubelet runs those init containers again. The restore must
// not run again onto the empty volume: the member ran, so its launcher refuses the volume, and
// the operator replaces the member from the others. A restore there would bring the backup's
// old data back under the member's name: a raft panic loop, or a silent rollback.
func RestoredMemberWiped() framework.Scenario {
	var b *v1alpha1.EtcdBackup
	const restored = "restored"
	var member, oldID, clusterID string
	return framework.Scenario{Name: "restored-member-wiped", Labels: map[string]string{label.Suite: label.SuiteBackup}, Replicas: 3, Class: framework.Planned,
		NeedsNode: true, Needs: []framework.Prerequisite{framework.ObjectStore},
		Steps: append(backupAndRestore(&b, true), []framework.Step{
			{Name: "empty a restored follower's volume and lose its pod's sandbox (its init containers run again)", Do: func(ctx context.Context, r *framework.Run) error {
				ec := &v1alpha1.EtcdCluster{}
				if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: restored}, ec); err != nil {
					return err
				}
				clusterID = ec.Status.ClusterID
				for _, m := range ec.Status.Members {
					if m.Name != ec.Status.Leader {
						member, oldID = m.Name, m.ID
						break
					}
				}
				if member == "" {
					return fmt.Errorf("EtcdCluster %s has no follower in its status: %+v", restored, ec.Status.Members)
				}
				if err := r.WipeData(ctx, member); err != nil {
					return err
				}
				r.Phase("stopping the sandbox of " + member)
				r.Event("fault", "sandbox-lost", "stopped the pod sandbox of "+member+": the kubelet runs its init containers, the backup's fetch and restore among them, again")
				n, err := r.Suite.Node.StopSandbox(ctx, r.Namespace, member)
				if err == nil && n != 1 {
					err = fmt.Errorf("stopped %d sandboxes of %s, want 1", n, member)
				}
				return err
			}},
			{Name: "wait for the wiped member to be replaced under the restored cluster's ID", Do: func(ctx context.Context, r *framework.Run) error {
				return r.WaitFor(ctx, member+" to be replaced", 5*time.Minute, func() error {
					ec := &v1alpha1.EtcdCluster{}
					if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: restored}, ec); err != nil {
						return err
					}
					if ec.Status.ClusterID != clusterID {
						return fmt.Errorf("%w: EtcdCluster %s's cluster ID changed from %s to %s", framework.ErrStop, restored, clusterID, ec.Status.ClusterID)
					}
					for _, m := range ec.Status.Members {
						if m.ID == oldID {
							return fmt.Errorf("%s (%s) is still a member", m.Name, m.ID)
						}
					}
					return nil
				})
			}},
			{Name: "wait for EtcdCluster restored to settle with 3 members", Do: func(ctx context.Context, r *framework.Run) error {
				return r.WaitClusterSettled(ctx, restored, 3, 5*time.Minute)
			}},
		}...)}
}
