package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/quorate-dev/quorate/chaos"
	"github.com/quorate-dev/quorate/e2e/checker"
	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/label"
)

// faultWindow is how long a fault is held (pod-kill and container-kill happen once; the window
// is then the time the cluster has to show their effect while the fault object exists).
const faultWindow = 20 * time.Second

// outageWindow is how long a fault that leaves no quorum is held: long enough that the outage
// clients must see (the write gap) stays well over the 10 s budget although Chaos Mesh applies
// and lifts a partition pod by pod, over a few seconds.
const outageWindow = 30 * time.Second

// Fault is one entry of the chaos library as the scenarios use it.
type Fault struct {
	Name  string
	Build func(chaos.Target, context.Context) (chaos.Fault, error)
	// QuorumLost: no side keeps a quorum, so clients must see the outage.
	QuorumLost bool
	// Operator: the fault hits the operator, not etcd.
	Operator bool
	// Partition: the fault cuts members off the network (the partition budget); the others
	// are single faults (the fault budget).
	Partition bool
	// Needs names a kernel feature the fault needs on the nodes (label needs=<it>), so that
	// clusters without it can leave the fault out with --skip-labels.
	Needs string
}

// Faults is the library of faults the chaos scenarios inject.
func Faults(operatorNS string) []Fault {
	return []Fault{
		{Name: "pod-kill-leader", Build: chaos.Target.PodKillLeader},
		{Name: "pod-kill-follower", Build: chaos.Target.PodKillFollower},
		{Name: "container-kill", Build: chaos.Target.ContainerKill},
		{Name: "pod-failure", Build: func(t chaos.Target, ctx context.Context) (chaos.Fault, error) {
			return t.PodFailure(ctx, faultWindow)
		}},
		{Name: "partition-leader", Partition: true, Build: windowed(chaos.Target.PartitionLeader)},
		{Name: "partition-minority", Partition: true, Build: windowed(chaos.Target.PartitionMinority)},
		{Name: "partition-majority", Partition: true, Build: func(t chaos.Target, ctx context.Context) (chaos.Fault, error) {
			return t.PartitionMajority(ctx, outageWindow)
		}, QuorumLost: true},
		{Name: "delay", Partition: true, Needs: "netem", Build: func(t chaos.Target, ctx context.Context) (chaos.Fault, error) {
			return t.Delay(ctx, 100*time.Millisecond, faultWindow)
		}},
		{Name: "loss", Partition: true, Needs: "netem", Build: func(t chaos.Target, ctx context.Context) (chaos.Fault, error) {
			return t.Loss(ctx, 20, faultWindow)
		}},
		{Name: "clock-skew", Build: func(t chaos.Target, ctx context.Context) (chaos.Fault, error) {
			return t.ClockSkew(ctx, -10*time.Minute, faultWindow)
		}},
		{Name: "operator-kill", Operator: true, Build: func(t chaos.Target, _ context.Context) (chaos.Fault, error) {
			return t.OperatorKill(operatorNS, label.OperatorLabels(), 30*time.Second), nil
		}},
	}
}

// windowed binds a fault builder to the fault window: Chaos Mesh lifts the fault after it even
// while the scenario still waits for something (a scale step) with the object in place.
func windowed(b func(chaos.Target, context.Context, time.Duration) (chaos.Fault, error)) func(chaos.Target, context.Context) (chaos.Fault, error) {
	return func(t chaos.Target, ctx context.Context) (chaos.Fault, error) { return b(t, ctx, faultWindow) }
}

func chaosScenario(name string, f Fault, replicas int32, steps []framework.Step) framework.Scenario {
	sc := framework.Scenario{Name: name + "-" + f.Name, Replicas: replicas, Class: framework.Fault, Steps: steps,
		Needs:  []framework.Prerequisite{framework.ChaosMesh},
		Labels: map[string]string{label.Suite: label.SuiteChaos, label.Fault: f.Name, label.Base: name}}
	if f.Partition {
		sc.Class = framework.Partition
	}
	if f.Needs != "" {
		sc.Labels[label.Needs] = f.Needs
	}
	if f.QuorumLost {
		sc.Labels[label.Suite] = label.SuiteChaosNegative
		sc.Expect = map[checker.Name]history.Expectation{checker.Availability: history.ExpectFail(availability.CodeWriteGap)}
	}
	return sc
}

// SteadyUnder: a 3-member cluster under load while the fault is held, then until it settles.
func SteadyUnder(f Fault) framework.Scenario {
	if f.Operator {
		// With nothing to do the operator's death shows nothing: keep it working by
		// replacing a member pod while it is being killed.
		return chaosScenario("steady", f, 3, []framework.Step{
			{Name: "inject " + f.Name + " while a follower's pod is replaced", Do: func(ctx context.Context, r *framework.Run) error {
				return r.Inject(ctx, f.Build, 0, func(ctx context.Context) error {
					follower, err := r.Follower(ctx)
					if err != nil {
						return err
					}
					return r.DeletePod(ctx, follower, 3)
				})
			}},
		})
	}
	hold := faultWindow
	if f.QuorumLost {
		hold = outageWindow
	}
	return chaosScenario("steady", f, 3, []framework.Step{
		{Name: fmt.Sprintf("inject %s and hold it %s", f.Name, hold), Do: func(ctx context.Context, r *framework.Run) error {
			return r.Inject(ctx, f.Build, hold, nil)
		}},
		waitSettled(3),
	})
}

// ScaleUnder: 3 -> 5 -> 3 while the fault is active. A fault that leaves no quorum blocks
// membership changes (the operator must wait for a quorum): the scale-up is requested during
// the fault and must complete after it heals.
func ScaleUnder(f Fault) framework.Scenario {
	if f.QuorumLost {
		return chaosScenario("scale", f, 3, []framework.Step{
			{Name: "inject " + f.Name + " and ask for 5 members during it", Do: func(ctx context.Context, r *framework.Run) error {
				return r.Inject(ctx, f.Build, 0, func(ctx context.Context) error {
					if err := r.SetReplicas(ctx, 5); err != nil {
						return err
					}
					r.Hold(ctx, outageWindow)
					return nil
				})
			}},
			{Name: "wait for 5 members settled after the fault", Do: func(ctx context.Context, r *framework.Run) error {
				if err := r.WaitSettled(ctx, 5, 5*time.Minute); err != nil {
					return fmt.Errorf("after the partition healed: %w", err)
				}
				return nil
			}},
			{Name: "scale to 3 members", Do: func(ctx context.Context, r *framework.Run) error {
				return r.Scale(ctx, 3)
			}},
		})
	}
	// One-shot faults (kills) are injected at the start of each scaling step.
	var steps []framework.Step
	for _, n := range []int32{5, 3} {
		steps = append(steps, framework.Step{Name: fmt.Sprintf("inject %s and scale to %d members", f.Name, n), Do: func(ctx context.Context, r *framework.Run) error {
			return r.Inject(ctx, f.Build, 0, func(ctx context.Context) error { return r.Scale(ctx, n) })
		}})
	}
	return chaosScenario("scale", f, 3, append(steps, waitSettled(3)))
}

// ChaosScenarios: steady state and scale 3->5->3 under every fault of the library.
func ChaosScenarios(operatorNS string) []framework.Scenario {
	var out []framework.Scenario
	for _, f := range Faults(operatorNS) {
		out = append(out, SteadyUnder(f), ScaleUnder(f))
	}
	return out
}
