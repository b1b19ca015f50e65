package framework

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/e2e/localcluster"
	"github.com/quorate-dev/quorate/internal/names"
)

// checkNodes waits for the Ready nodes a node scenario needs (a node the previous scenario
// brought back may not be Ready yet): the pool has them (PoolNodes, checked before). A node
// scenario's members go to the local cluster's etcd pool (nodes 2 and up) and its workload to
// node 1, with the control plane and the add-ons: the instrument must not live on a node the
// scenario drains, powers off or cuts off, and every member's node can be.
func (r *Run) checkNodes(ctx context.Context) error {
	want := r.Scenario.Nodes
	if want <= 1 {
		return nil
	}
	var ready []string
	err := r.WaitFor(ctx, fmt.Sprintf("%d Ready nodes in the etcd pool", want), 3*time.Minute, func() error {
		var err error
		if ready, err = r.readyNodes(ctx); err != nil {
			return err
		}
		if len(ready) < want {
			return fmt.Errorf("%d Ready: %s", len(ready), strings.Join(ready, ", "))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s needs %d Ready nodes for its members besides node 1 and %d of the pool are Ready (%s): %w", r.Scenario.Name, want, len(ready), strings.Join(ready, ", "), err)
	}
	r.pools = true
	return nil
}

func (r *Run) readyNodes(ctx context.Context) ([]string, error) {
	var nodes corev1.NodeList
	if err := r.Suite.Client.List(ctx, &nodes, client.MatchingLabels{localcluster.PoolLabel: localcluster.PoolEtcd}); err != nil {
		return nil, err
	}
	var ready []string
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && !n.Spec.Unschedulable {
				ready = append(ready, n.Name)
			}
		}
	}
	sort.Strings(ready)
	return ready, nil
}

// MemberNodes maps each running member pod to its node.
func (r *Run) MemberNodes(ctx context.Context) (map[string]string, error) {
	var pods corev1.PodList
	if err := r.Suite.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels(names.MemberSelector(r.Cluster))); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.DeletionTimestamp.IsZero() {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out, nil
}

// CheckSpread fails unless every member runs on a node of its own (the default topology
// spread with enough nodes).
func (r *Run) CheckSpread(ctx context.Context) (map[string]string, error) {
	placed, err := r.MemberNodes(ctx)
	if err != nil {
		return nil, err
	}
	byNode := map[string][]string{}
	for m, n := range placed {
		byNode[n] = append(byNode[n], m)
	}
	for n, ms := range byNode {
		if len(ms) > 1 {
			sort.Strings(ms)
			return nil, fmt.Errorf("members %s share node %s: the topology spread did not place them on different nodes (placement %v)", strings.Join(ms, ", "), n, placed)
		}
	}
	r.T.Logf("members on nodes: %v", placed)
	return placed, nil
}

// LeaderNode checks that the members are spread and returns the leader and its node.
func (r *Run) LeaderNode(ctx context.Context) (string, string, error) {
	placed, err := r.CheckSpread(ctx)
	if err != nil {
		return "", "", err
	}
	leader, err := r.Leader(ctx)
	if err != nil {
		return "", "", err
	}
	node, ok := placed[leader]
	if !ok {
		return "", "", fmt.Errorf("the leader %s has no running pod (placement %v)", leader, placed)
	}
	return leader, node, nil
}

// Drain drains node the way an administrator does, with kubectl drain: the node is cordoned and
// the cluster's member pods on it are evicted through the Eviction API, which honours the
// PodDisruptionBudget (kubectl retries while the budget forbids it, until timeout). Only the
// cluster's pods are evicted (--pod-selector): the suite's workload and the cluster add-ons are
// not what a drain of an etcd node tests.
func (r *Run) Drain(ctx context.Context, node string, timeout time.Duration) (string, error) {
	sel := labels.SelectorFromSet(names.MemberSelector(r.Cluster)).String()
	return r.kubectl(ctx, "drain", node, "--pod-selector="+sel, "--ignore-daemonsets", "--delete-emptydir-data",
		fmt.Sprintf("--timeout=%s", timeout))
}

// Uncordon makes node schedulable again.
func (r *Run) Uncordon(ctx context.Context, node string) error {
	_, err := r.kubectl(ctx, "uncordon", node)
	return err
}

// kubectl runs the cluster version's kubectl against the suite's cluster and returns its
// combined output.
func (r *Run) kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, r.Suite.kubectl, append([]string{"--kubeconfig", r.Suite.kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := strings.TrimSpace(out.String())
	if err != nil {
		return text, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, text)
	}
	return text, nil
}

// WaitNodeReady waits until node's Ready condition is status (True or False, Unknown for a
// node that stopped reporting).
func (r *Run) WaitNodeReady(ctx context.Context, node string, status corev1.ConditionStatus, timeout time.Duration) error {
	return r.WaitFor(ctx, fmt.Sprintf("node %s Ready=%s", node, status), timeout, func() error {
		n := &corev1.Node{}
		if err := r.Suite.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status == status {
					return nil
				}
				return fmt.Errorf("the node is Ready=%s (%s)", c.Status, c.Reason)
			}
		}
		return fmt.Errorf("no Ready condition")
	})
}

// cordoned reports whether node is unschedulable.
func (r *Run) cordoned(ctx context.Context, node string) (bool, error) {
	n := &corev1.Node{}
	if err := r.Suite.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		return false, err
	}
	return n.Spec.Unschedulable, nil
}

// UncordonOnCleanup makes sure node is schedulable after the scenario, whatever happened.
func (r *Run) UncordonOnCleanup(node string) {
	r.OnCleanup(func(ctx context.Context) error {
		if c, err := r.cordoned(ctx, node); err != nil || !c {
			return err
		}
		return r.Uncordon(ctx, node)
	})
}

// WaitNewLeader waits until the cluster's status names a leader other than old, and returns
// it.
func (r *Run) WaitNewLeader(ctx context.Context, old string, timeout time.Duration) (string, error) {
	var leader string
	err := r.WaitFor(ctx, "a leader other than "+old, timeout, func() error {
		l, err := r.Leader(ctx)
		if err != nil {
			return err
		}
		if l == old {
			return fmt.Errorf("%s still leads", old)
		}
		leader = l
		return nil
	})
	return leader, err
}
