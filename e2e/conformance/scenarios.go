package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker"
	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/label"
)

// Steady: a 3-member cluster under load, nothing else.
func Steady() framework.Scenario {
	return framework.Scenario{Name: "steady", Labels: map[string]string{label.Suite: label.SuiteCore}, Replicas: 3, Class: framework.Planned}
}

// Scale: 1 -> 3 -> 5 -> 3 -> 1 members under load.
func Scale() framework.Scenario {
	return framework.Scenario{Name: "scale", Labels: map[string]string{label.Suite: label.SuiteCore}, Replicas: 1, Class: framework.Planned,
		Steps: []framework.Step{scaleStep(3), scaleStep(5), scaleStep(3), scaleStep(1)}}
}

// PodDeletion: the leader's pod is deleted, then a follower's.
func PodDeletion() framework.Scenario {
	var leader, follower string
	return framework.Scenario{Name: "pod-deletion", Labels: map[string]string{label.Suite: label.SuiteCore}, Replicas: 3, Class: framework.Planned,
		Steps: []framework.Step{
			{Name: "find the leader", Do: func(ctx context.Context, r *framework.Run) (err error) {
				leader, err = r.Leader(ctx)
				return err
			}},
			{Name: "delete the leader's pod and wait for 3 members", Do: func(ctx context.Context, r *framework.Run) error {
				if err := r.DeletePod(ctx, leader, 3); err != nil {
					return fmt.Errorf("leader %s: %w", leader, err)
				}
				return nil
			}},
			{Name: "find a follower", Do: func(ctx context.Context, r *framework.Run) (err error) {
				follower, err = r.Follower(ctx)
				return err
			}},
			{Name: "delete the follower's pod and wait for 3 members", Do: func(ctx context.Context, r *framework.Run) error {
				if err := r.DeletePod(ctx, follower, 3); err != nil {
					return fmt.Errorf("follower %s: %w", follower, err)
				}
				return nil
			}},
		}}
}

// VolumeLoss: a member's PVC is deleted; the operator replaces the member with a new one.
func VolumeLoss() framework.Scenario {
	var follower string
	return framework.Scenario{Name: "pvc-loss", Labels: map[string]string{label.Suite: label.SuiteCore}, Replicas: 3, Class: framework.Planned,
		Steps: []framework.Step{
			{Name: "find a follower", Do: func(ctx context.Context, r *framework.Run) (err error) {
				follower, err = r.Follower(ctx)
				return err
			}},
			{Name: "delete the follower's volume and wait for 3 members", Do: func(ctx context.Context, r *framework.Run) error {
				return r.DeleteVolume(ctx, follower, 3)
			}},
		}}
}

// QuorumLoss stops two of three members while the operator is paused, so it cannot mask the
// fault: clients must see the outage (the availability verdict fails, for the right reason)
// while no acknowledged write is lost and the history stays linearizable.
func QuorumLoss() framework.Scenario {
	var leader, follower string
	var end func()
	return framework.Scenario{Name: "quorum-loss", Labels: map[string]string{label.Suite: label.SuiteNegative}, Replicas: 3, Class: framework.Planned,
		Expect: map[checker.Name]history.Expectation{checker.Availability: history.ExpectFail(availability.CodeWriteGap)},
		Steps: []framework.Step{
			{Name: "pause the operator", Do: func(ctx context.Context, r *framework.Run) error {
				return r.SetPaused(ctx, true)
			}},
			{Name: "find the leader and a follower", Do: func(ctx context.Context, r *framework.Run) (err error) {
				if leader, err = r.Leader(ctx); err != nil {
					return err
				}
				follower, err = r.Follower(ctx)
				return err
			}},
			{Name: "stop the follower and the leader", Do: func(ctx context.Context, r *framework.Run) error {
				r.Phase("quorum lost: two of three members stopped")
				end = r.Fault("quorum-loss", fmt.Sprintf("pods of %s and %s deleted while the operator is paused", leader, follower))
				for _, m := range []string{follower, leader} {
					if err := r.StopMember(ctx, m); err != nil {
						return err
					}
				}
				return nil
			}},
			{Name: "hold the outage 20 s", Do: func(ctx context.Context, r *framework.Run) error {
				r.Hold(ctx, 20*time.Second)
				return nil
			}},
			{Name: "resume the operator", Do: func(ctx context.Context, r *framework.Run) error {
				return r.SetPaused(ctx, false)
			}},
			{Name: "wait for 3 members settled", Do: func(ctx context.Context, r *framework.Run) error {
				err := r.WaitSettled(ctx, 3, 5*time.Minute)
				end()
				return err
			}},
		}}
}

// EtcdUpgrade: a 3-member cluster started at an older etcd release is upgraded to the suite's
// version under load (3.5 -> 3.6 by default: etcd's rolling minor upgrade). The operator
// replaces one member at a time, the leader last after moving leadership away.
func EtcdUpgrade(opts *framework.Options) framework.Scenario {
	return framework.Scenario{Name: "etcd-upgrade", Labels: map[string]string{label.Suite: label.SuiteCore}, Replicas: 3, Class: framework.Planned,
		Version: opts.UpgradeFrom,
		Steps: []framework.Step{{Name: "upgrade etcd to " + opts.EtcdVersion, Do: func(ctx context.Context, r *framework.Run) error {
			return r.UpgradeEtcd(ctx, opts.EtcdVersion)
		}}}}
}

// All scenarios, in the order the suite runs them.
func All(opts *framework.Options) []framework.Scenario {
	return []framework.Scenario{Steady(), Scale(), PodDeletion(), VolumeLoss(), EtcdUpgrade(opts), QuorumLoss()}
}
