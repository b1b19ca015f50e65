package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/history"
)

// Steady: a 3-member cluster under load, nothing else.
func Steady() framework.Scenario {
	return framework.Scenario{Name: "steady", Labels: map[string]string{"suite": "core"}, Replicas: 3, Class: framework.Planned}
}

// Scale: 1 -> 3 -> 5 -> 3 -> 1 members under load.
func Scale() framework.Scenario {
	return framework.Scenario{Name: "scale", Labels: map[string]string{"suite": "core"}, Replicas: 1, Class: framework.Planned,
		Steps: func(ctx context.Context, r *framework.Run) error {
			for _, n := range []int32{3, 5, 3, 1} {
				if err := r.Scale(ctx, n); err != nil {
					return err
				}
			}
			return nil
		}}
}

// PodDeletion: the leader's pod is deleted, then a follower's.
func PodDeletion() framework.Scenario {
	return framework.Scenario{Name: "pod-deletion", Labels: map[string]string{"suite": "core"}, Replicas: 3, Class: framework.Planned,
		Steps: func(ctx context.Context, r *framework.Run) error {
			leader, err := r.Leader(ctx)
			if err != nil {
				return err
			}
			if err := r.DeletePod(ctx, leader, 3); err != nil {
				return fmt.Errorf("leader %s: %w", leader, err)
			}
			follower, err := r.Follower(ctx)
			if err != nil {
				return err
			}
			if err := r.DeletePod(ctx, follower, 3); err != nil {
				return fmt.Errorf("follower %s: %w", follower, err)
			}
			return nil
		}}
}

// VolumeLoss: a member's PVC is deleted; the operator replaces the member with a new one.
func VolumeLoss() framework.Scenario {
	return framework.Scenario{Name: "pvc-loss", Labels: map[string]string{"suite": "core"}, Replicas: 3, Class: framework.Planned,
		Steps: func(ctx context.Context, r *framework.Run) error {
			follower, err := r.Follower(ctx)
			if err != nil {
				return err
			}
			return r.DeleteVolume(ctx, follower, 3)
		}}
}

// QuorumLoss stops two of three members while the operator is paused, so it cannot mask the
// fault: clients must see the outage (the availability verdict fails, for the right reason)
// while no acknowledged write is lost and the history stays linearizable.
func QuorumLoss() framework.Scenario {
	return framework.Scenario{Name: "quorum-loss", Labels: map[string]string{"suite": "negative"}, Replicas: 3, Class: framework.Planned,
		Expect: map[string]history.Expectation{"availability": history.ExpectFail(availability.CodeWriteGap)},
		Steps: func(ctx context.Context, r *framework.Run) error {
			if err := r.SetPaused(ctx, true); err != nil {
				return err
			}
			leader, err := r.Leader(ctx)
			if err != nil {
				return err
			}
			follower, err := r.Follower(ctx)
			if err != nil {
				return err
			}
			r.Phase("quorum lost: two of three members stopped")
			end := r.Fault("quorum-loss", fmt.Sprintf("pods of %s and %s deleted while the operator is paused", leader, follower))
			for _, m := range []string{follower, leader} {
				if err := r.StopMember(ctx, m); err != nil {
					return err
				}
			}
			r.Hold(ctx, 20*time.Second)
			if err := r.SetPaused(ctx, false); err != nil {
				return err
			}
			err = r.WaitSettled(ctx, 3, 5*time.Minute)
			end()
			return err
		}}
}

// EtcdUpgrade: a 3-member cluster started at an older etcd release is upgraded to the suite's
// version under load (3.5 -> 3.6 by default: etcd's rolling minor upgrade). The operator
// replaces one member at a time, the leader last after moving leadership away.
func EtcdUpgrade(opts *framework.Options) framework.Scenario {
	return framework.Scenario{Name: "etcd-upgrade", Labels: map[string]string{"suite": "core"}, Replicas: 3, Class: framework.Planned,
		Version: opts.UpgradeFrom,
		Steps: func(ctx context.Context, r *framework.Run) error {
			return r.UpgradeEtcd(ctx, opts.EtcdVersion)
		}}
}

// All scenarios, in the order the suite runs them.
func All(opts *framework.Options) []framework.Scenario {
	return []framework.Scenario{Steady(), Scale(), PodDeletion(), VolumeLoss(), EtcdUpgrade(opts), QuorumLoss()}
}
