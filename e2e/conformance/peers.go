package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The side-by-side benchmark (suite=peers, make bench-peers): the same operations, the same
// workload and every checker, for Quorate and for each other etcd operator --peers names,
// on one cluster in one run. Every step goes through framework.Operator, so that each
// operator is driven only through its own custom resource and judged by the same
// convergence test. An operation an operator cannot do ends in a timing with an error: a
// result, which quorate-report peers writes down with its evidence. Not a CI gate.

// PeerOperation is one operation of the benchmark.
type PeerOperation struct {
	Name string
	// Version is the etcd version the cluster starts at ("": --etcd-version).
	Version string
	// Steps makes the operation's steps for one run (nil: none): steps share what they
	// found, so each run gets its own.
	Steps func() []framework.Step
}

// PeerOperations are the benchmark's operations. Creation to the first acknowledged write is
// measured in every run's setup.
func PeerOperations(opts *framework.Options) []PeerOperation {
	timeout := opts.ConvergeTimeout
	return []PeerOperation{
		{Name: "steady"},
		{Name: "leader-pod-deleted", Steps: func() []framework.Step { return leaderPodDeleted(timeout) }},
		{Name: "scale-3-5-3", Steps: func() []framework.Step { return peerScale(timeout, 5, 3) }},
		upgrade("etcd-upgrade-patch", opts.UpgradePatchFrom, opts.EtcdVersion, timeout),
		upgrade("etcd-upgrade-minor", opts.UpgradeFrom, opts.EtcdVersion, timeout),
		{Name: "pvc-deleted", Steps: func() []framework.Step { return pvcDeleted(timeout) }},
	}
}

// leaderPodDeleted: the leader's pod is deleted, and the operator must bring back 3 members.
func leaderPodDeleted(timeout time.Duration) []framework.Step {
	const what = "3 members after the leader's pod was deleted"
	var leader string
	var uid types.UID
	var start time.Time
	return []framework.Step{
		{Name: "find the leader's pod", Do: func(ctx context.Context, r *framework.Run) (err error) {
			if leader, err = r.Op().Leader(ctx, r); err != nil {
				return err
			}
			uid, err = podUID(ctx, r, leader)
			return err
		}},
		{Name: "delete the leader's pod", Do: func(ctx context.Context, r *framework.Run) error {
			start = time.Now()
			r.Defer(r.Fault("pod-deleted", "deleted the pod of the leader, "+leader))
			return r.Suite.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: leader}})
		}},
		// Converged only once the deleted pod is gone: the same name may come back.
		{Name: "wait for the leader's pod to be gone", Do: func(ctx context.Context, r *framework.Run) error {
			if err := r.WaitFor(ctx, "the leader's pod to be gone", timeout, func() error { return gone(ctx, r, leader, uid) }); err != nil {
				r.Timing(what, start, err)
				return err
			}
			return nil
		}},
		{Name: "wait for 3 members converged", Do: func(ctx context.Context, r *framework.Run) error {
			return r.Converge(ctx, what, start, 3, "", timeout)
		}},
	}
}

// peerScale scales the cluster through the operator to each size in turn.
func peerScale(timeout time.Duration, sizes ...int32) []framework.Step {
	var steps []framework.Step
	for _, n := range sizes {
		steps = append(steps, framework.Step{Name: fmt.Sprintf("scale to %d members and wait for convergence", n), Do: func(ctx context.Context, r *framework.Run) error {
			start := time.Now()
			if err := r.Op().SetReplicas(ctx, r, n); err != nil {
				return err
			}
			return r.Converge(ctx, fmt.Sprintf("scaled to %d", n), start, n, "", timeout)
		}})
	}
	return steps
}

// pvcDeleted: a follower's disk is lost: its claim is deleted, and its pod, which could not go
// on without the disk, with it.
func pvcDeleted(timeout time.Duration) []framework.Step {
	const what = "3 members after a follower's volume was lost"
	var victim string
	var pvc *corev1.PersistentVolumeClaim
	var start time.Time
	return []framework.Step{
		{Name: "find a follower's claim", Do: func(ctx context.Context, r *framework.Run) (err error) {
			victim, pvc, err = followerClaim(ctx, r)
			return err
		}},
		{Name: "delete the follower's claim and pod", Do: func(ctx context.Context, r *framework.Run) error {
			start = time.Now()
			r.Defer(r.Fault("volume-lost", "deleted the PersistentVolumeClaim "+pvc.Name+" of "+victim+" and its pod"))
			if err := r.Suite.Client.Delete(ctx, pvc); err != nil {
				return err
			}
			if err := r.Suite.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: victim}}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			return nil
		}},
		{Name: "wait for the lost claim to be gone", Do: func(ctx context.Context, r *framework.Run) error {
			if err := r.WaitFor(ctx, "the lost claim to be gone", timeout, func() error {
				return claimGone(ctx, r, pvc.Name, pvc.UID)
			}); err != nil {
				r.Timing(what, start, err)
				return err
			}
			return nil
		}},
		{Name: "wait for 3 members converged", Do: func(ctx context.Context, r *framework.Run) error {
			return r.Converge(ctx, what, start, 3, "", timeout)
		}},
	}
}

// followerClaim finds a member pod other than the leader's, and its claim.
func followerClaim(ctx context.Context, r *framework.Run) (string, *corev1.PersistentVolumeClaim, error) {
	leader, err := r.Op().Leader(ctx, r)
	if err != nil {
		return "", nil, err
	}
	var victim string
	var list corev1.PodList
	if err := r.Suite.Client.List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
		return "", nil, err
	}
	for _, p := range list.Items {
		if p.Name != leader && p.Name != "workload" {
			victim = p.Name
			break
		}
	}
	if victim == "" {
		return "", nil, fmt.Errorf("no follower pod beside the leader %s", leader)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: r.Op().Volume(victim)}, pvc); err != nil {
		return "", nil, fmt.Errorf("the claim of %s: %w", victim, err)
	}
	return victim, pvc, nil
}

func upgrade(name, from, to string, timeout time.Duration) PeerOperation {
	return PeerOperation{Name: name, Version: from, Steps: func() []framework.Step {
		var start time.Time
		return []framework.Step{
			{Name: "set the etcd version to " + to, Do: func(ctx context.Context, r *framework.Run) error {
				start = time.Now()
				return r.Op().SetVersion(ctx, r, to)
			}},
			{Name: "wait for every member at etcd " + to, Do: func(ctx context.Context, r *framework.Run) error {
				return r.Converge(ctx, fmt.Sprintf("every member at etcd %s", to), start, 3, to, timeout)
			}},
		}
	}}
}

// PeerScenarios are the benchmark's runs: every operation for each operator, Quorate first,
// operation by operation so that a table row's cells come from neighbouring runs.
func PeerScenarios(opts *framework.Options) []framework.Scenario {
	ops := []framework.Operator{framework.Quorate{}}
	for _, n := range opts.PeerNames() {
		ops = append(ops, framework.Peers[n])
	}
	var out []framework.Scenario
	for _, po := range PeerOperations(opts) {
		for _, op := range ops {
			var steps []framework.Step
			if po.Steps != nil {
				steps = po.Steps()
			}
			out = append(out, framework.Scenario{
				Name:   "peers-" + op.Name() + "-" + po.Name,
				Labels: map[string]string{label.Suite: label.SuitePeers, label.Operator: op.Name(), label.Operation: po.Name},
				// The planned budget: every operation here is one an operator should make
				// without an outage.
				Replicas: 3, Class: framework.Planned, Version: po.Version, Operator: op, Steps: steps,
			})
		}
	}
	return out
}

func podUID(ctx context.Context, r *framework.Run, name string) (types.UID, error) {
	p := &corev1.Pod{}
	err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: name}, p)
	return p.UID, err
}

// gone returns nil once the pod of that UID no longer exists (a new pod of the same name may).
func gone(ctx context.Context, r *framework.Run, name string, uid types.UID) error {
	got, err := podUID(ctx, r, name)
	if apierrors.IsNotFound(err) || (err == nil && got != uid) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("pod %s still exists", name)
}

func claimGone(ctx context.Context, r *framework.Run, name string, uid types.UID) error {
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: name}, pvc)
	if apierrors.IsNotFound(err) || (err == nil && pvc.UID != uid) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("claim %s still exists (deletion requested: %v, finalizers %v)", name, pvc.DeletionTimestamp != nil, pvc.Finalizers)
}
