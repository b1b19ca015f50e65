package conformance

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
)

// Benchmark scenarios (suite=bench, make bench): one disruption repeated runs times, each on a
// cluster of its own, under the open-loop load, so that the report holds a distribution
// (quorate-report bench) rather than one sample. They are measurements, never a CI gate: their
// budget is the planned one, and the distribution is what counts.

// BenchScenarios are runs repetitions of each benchmark:
//   - bench-etcd-upgrade: a rolling etcd upgrade of 3 members (--etcd-upgrade-from to
//     --etcd-version);
//   - bench-pod-deletion: the leader's pod deleted, as kubectl delete pod does;
//   - bench-<peer>-etcd-upgrade: the same upgrade by each operator --peers names, through its
//     own custom resource (label operator=<peer>).
func BenchScenarios(opts *framework.Options, runs int) []framework.Scenario {
	var out []framework.Scenario
	for i := 1; i <= runs; i++ {
		labels := func(base string) map[string]string {
			return map[string]string{label.Suite: label.SuiteBench, label.Base: base, label.Operator: framework.Quorate{}.Name(), label.Run: fmt.Sprintf("%02d", i)}
		}
		out = append(out,
			framework.Scenario{Name: fmt.Sprintf("bench-etcd-upgrade-%02d", i), Labels: labels("etcd-upgrade"), Replicas: 3,
				Class: framework.Planned, OpenLoop: true, Version: opts.UpgradeFrom,
				Steps: []framework.Step{{Name: "upgrade etcd to " + opts.EtcdVersion, Do: func(ctx context.Context, r *framework.Run) error {
					return r.UpgradeEtcd(ctx, opts.EtcdVersion)
				}}}},
			framework.Scenario{Name: fmt.Sprintf("bench-pod-deletion-%02d", i), Labels: labels("pod-deletion"), Replicas: 3,
				Class: framework.Planned, OpenLoop: true,
				Steps: leaderPodDeletion()},
		)
		for _, n := range opts.PeerNames() {
			peer := framework.Peers[n]
			l := labels("etcd-upgrade")
			l[label.Operator] = n
			up := upgrade("etcd-upgrade", opts.UpgradeFrom, opts.EtcdVersion, opts.ConvergeTimeout)
			out = append(out, framework.Scenario{Name: fmt.Sprintf("bench-%s-etcd-upgrade-%02d", n, i), Labels: l, Replicas: 3,
				Class: framework.Planned, OpenLoop: true, Version: up.Version, Operator: peer, Steps: up.Steps()})
		}
	}
	return out
}

// RateScenarios are steady 3-member clusters under the open-loop load at each rate
// (suite=bench-rate), to measure what the machine sustains beside the cluster: quorate-report
// bench tabulates the rate achieved, the share of successful operations and the latency.
func RateScenarios(rates []float64) []framework.Scenario {
	var out []framework.Scenario
	for _, rate := range rates {
		r := strconv.FormatFloat(rate, 'f', -1, 64)
		out = append(out, framework.Scenario{Name: "bench-rate-" + r, Labels: map[string]string{label.Suite: label.SuiteBenchRate, label.Rate: r},
			Replicas: 3, Class: framework.Planned, OpenLoop: true, Rate: rate,
			Steps: []framework.Step{{Name: "hold 20 s", Do: func(ctx context.Context, r *framework.Run) error {
				r.Hold(ctx, 20*time.Second) // a measurement window
				return nil
			}}}})
	}
	return out
}

// leaderPodDeletion: the leader's pod is deleted, as kubectl delete pod does, and 3 members
// settle again.
func leaderPodDeletion() []framework.Step {
	var leader string
	return []framework.Step{
		{Name: "find the leader", Do: func(ctx context.Context, r *framework.Run) (err error) {
			leader, err = r.Leader(ctx)
			return err
		}},
		{Name: "delete the leader's pod and wait for 3 members", Do: func(ctx context.Context, r *framework.Run) error {
			return r.DeletePod(ctx, leader, 3)
		}},
	}
}
