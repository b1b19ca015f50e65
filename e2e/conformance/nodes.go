package conformance

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
)

// The node scenarios (suite=nodes) act on whole nodes of a local cluster started with
// --nodes=4: node 1 holds the control plane, the add-ons and the workload; the members run one
// on each of nodes 2–4 (the etcd pool), placed there by the operator's default spread. Each
// scenario acts on the leader's node, the worst case.

func nodeScenario(name string, class framework.Class, steps []framework.Step) framework.Scenario {
	return framework.Scenario{Name: name, Labels: map[string]string{label.Suite: label.SuiteNodes}, Replicas: 3, Nodes: 3, Class: class, Steps: steps}
}

// waitSettled is the step that ends most scenarios: n members, settled.
func waitSettled(n int32) framework.Step {
	return framework.Step{Name: fmt.Sprintf("wait for %d members settled", n), Do: func(ctx context.Context, r *framework.Run) error {
		return r.WaitSettled(ctx, n, 5*time.Minute)
	}}
}

// NodeDrain: the node holding the leader is drained with kubectl drain. The leader's pod is
// evicted through the Eviction API and hands leadership over before etcd stops; its volume is
// on the drained node, so it stays Pending. A second drain, of another member's node, must then
// be refused by the PodDisruptionBudget and evict nothing. Uncordoning brings the member back.
func NodeDrain() framework.Scenario {
	var leader, node, newLeader, other string
	return nodeScenario("node-drain", framework.Planned, []framework.Step{
		{Name: "find the leader's node", Do: func(ctx context.Context, r *framework.Run) (err error) {
			leader, node, err = r.LeaderNode(ctx)
			return err
		}},
		{Name: "drain the leader's node", Do: func(ctx context.Context, r *framework.Run) error {
			r.UncordonOnCleanup(node)
			r.Phase(fmt.Sprintf("draining %s, which holds the leader %s", node, leader))
			r.Defer(r.Fault("node-drained", fmt.Sprintf("kubectl drain %s (the leader %s's node)", node, leader)))
			_, err := r.Drain(ctx, node, 3*time.Minute)
			return err
		}},
		{Name: "wait for a new leader", Do: func(ctx context.Context, r *framework.Run) (err error) {
			if newLeader, err = r.WaitNewLeader(ctx, leader, 2*time.Minute); err != nil {
				return err
			}
			r.T.Logf("drained %s; the leader moved from %s to %s", node, leader, newLeader)
			return nil
		}},
		// With one member down the budget allows no further eviction.
		{Name: "drain a second node: refused by the PodDisruptionBudget", Do: func(ctx context.Context, r *framework.Run) error {
			placed, err := r.MemberNodes(ctx)
			if err != nil {
				return err
			}
			other = placed[newLeader]
			r.UncordonOnCleanup(other)
			r.Phase(fmt.Sprintf("draining %s too, which the PodDisruptionBudget must refuse", other))
			out, refused := r.Drain(ctx, other, 20*time.Second)
			if refused == nil {
				return fmt.Errorf("a second drain, of %s, succeeded while %s's member was down: the PodDisruptionBudget did not hold (kubectl: %s)", other, node, out)
			}
			still, err := r.MemberNodes(ctx)
			if err != nil {
				return err
			}
			if still[newLeader] != other {
				return fmt.Errorf("the refused drain of %s still evicted the member %s", other, newLeader)
			}
			r.T.Logf("the second drain was refused: %v", refused)
			return nil
		}},
		{Name: "uncordon both nodes", Do: func(ctx context.Context, r *framework.Run) error {
			if err := r.Uncordon(ctx, other); err != nil {
				return err
			}
			r.Phase("uncordoning " + node)
			return r.Uncordon(ctx, node)
		}},
		waitSettled(3),
	})
}

// A nodeOutage takes the leader's node away and brings it back: the scenario waits for a new
// leader (in the operator's status) and for Kubernetes to mark the node NotReady (Unknown)
// before it ends the outage, then for the node to be Ready and the cluster settled.
type nodeOutage struct {
	name, fault string
	// what the phases and the fault say: doing (the node, the leader), done (the node),
	// undoing (the node).
	doing, done, undoing string
	take, restore        func(ctx context.Context, r *framework.Run, node string) error
}

func (o nodeOutage) scenario() framework.Scenario {
	var leader, node string
	var bringBack func(context.Context) error
	return nodeScenario(o.name, framework.Partition, []framework.Step{
		{Name: "find the leader's node", Do: func(ctx context.Context, r *framework.Run) (err error) {
			leader, node, err = r.LeaderNode(ctx)
			return err
		}},
		{Name: "take the leader's node away (" + o.fault + ")", Do: func(ctx context.Context, r *framework.Run) (err error) {
			r.Phase(fmt.Sprintf(o.doing, node, leader))
			r.Defer(r.Fault(o.fault, fmt.Sprintf(o.doing, node, leader)))
			bringBack, err = o.takeAway(ctx, r, node)
			return err
		}},
		{Name: "wait for a new leader", Do: func(ctx context.Context, r *framework.Run) error {
			newLeader, err := r.WaitNewLeader(ctx, leader, 2*time.Minute)
			if err != nil {
				return err
			}
			r.T.Logf("%s; %s leads", fmt.Sprintf(o.done, node), newLeader)
			return nil
		}},
		{Name: "wait for the node to be NotReady (Unknown)", Do: func(ctx context.Context, r *framework.Run) error {
			return r.WaitNodeReady(ctx, node, corev1.ConditionUnknown, 3*time.Minute)
		}},
		{Name: "bring the node back", Do: func(ctx context.Context, r *framework.Run) error {
			r.Phase(fmt.Sprintf(o.undoing, node))
			return bringBack(ctx)
		}},
		{Name: "wait for the node to be Ready", Do: func(ctx context.Context, r *framework.Run) error {
			return r.WaitNodeReady(ctx, node, corev1.ConditionTrue, 3*time.Minute)
		}},
		waitSettled(3),
	})
}

// takeAway takes node away and returns what brings it back. Until bringing it back has
// succeeded, the run's cleanup does it, so a run that fails or stops in between leaves no
// node off or cut off.
func (o nodeOutage) takeAway(ctx context.Context, r *framework.Run, node string) (bringBack func(context.Context) error, err error) {
	back := false
	r.OnCleanup(func(ctx context.Context) error {
		if back {
			return nil
		}
		return o.restore(ctx, r, node)
	})
	bringBack = func(ctx context.Context) error {
		if err := o.restore(ctx, r, node); err != nil {
			return err
		}
		back = true
		return nil
	}
	return bringBack, o.take(ctx, r, node)
}

// powerOutage is a node's loss of power: PowerOff takes it, PowerOn brings it back.
var powerOutage = nodeOutage{name: "node-loss", fault: "node-lost",
	doing: "powering off %s, which holds the leader %s", done: "%s is off", undoing: "powering %s on",
	take: func(ctx context.Context, r *framework.Run, node string) error {
		return r.Suite.Node.PowerOff(ctx, node)
	},
	restore: func(ctx context.Context, r *framework.Run, node string) error { return r.Suite.Node.PowerOn(ctx, node) },
}

// NodeLoss: the leader's node loses power: its link goes down and its kubelet, containerd
// and every container die at once. The other two elect a leader; Kubernetes marks the node
// NotReady. Power comes back, the kubelet restarts the member with its data, and it rejoins.
//
// Its budget is a partition's: a node that loses power falls silent, as a cut-off one does (no
// connection is closed, nothing says goodbye), so the followers wait out an election timeout
// that etcd draws between one and two configured ones, where a killed leader pod's closed
// connections are noticed at once.
func NodeLoss() framework.Scenario {
	return powerOutage.scenario()
}

// NodePartition: the leader's node is cut off the network, whole: the member and the kubelet
// with it. The side with a quorum elects a leader; the cut-off leader must not serve writes.
// Healing the partition brings the member back as a follower.
func NodePartition() framework.Scenario {
	return nodeOutage{name: "node-partition", fault: "node-partitioned",
		doing: "cutting %s off the network, which holds the leader %s", done: "%s is cut off", undoing: "healing the partition of %s",
		take: func(ctx context.Context, r *framework.Run, node string) error {
			return r.Suite.Node.Partition(ctx, node, true)
		},
		restore: func(ctx context.Context, r *framework.Run, node string) error {
			return r.Suite.Node.Partition(ctx, node, false)
		},
	}.scenario()
}

// NodeScenarios are the scenarios that need several nodes.
func NodeScenarios() []framework.Scenario {
	return []framework.Scenario{NodeDrain(), NodeLoss(), NodePartition()}
}
