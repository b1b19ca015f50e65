package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GetCluster reads the EtcdCluster.
func (r *Run) GetCluster(ctx context.Context) (*v1alpha1.EtcdCluster, error) {
	ec := &v1alpha1.EtcdCluster{}
	return ec, r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: r.Cluster}, ec)
}

func (r *Run) WaitFor(ctx context.Context, what string, timeout time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = cond(); last == nil {
			return nil
		} else if errors.Is(last, ErrStop) {
			return fmt.Errorf("waiting for %s: %w", what, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s waiting for %s: %v", timeout, what, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// WaitSettled waits until the cluster has n healthy voting members and nothing in progress.
func (r *Run) WaitSettled(ctx context.Context, n int32, timeout time.Duration) error {
	return r.WaitClusterSettled(ctx, r.Cluster, n, timeout)
}

// WaitClusterSettled waits until the named EtcdCluster of the run's namespace has n healthy
// voting members and nothing in progress.
func (r *Run) WaitClusterSettled(ctx context.Context, name string, n int32, timeout time.Duration) error {
	what := fmt.Sprintf("%d healthy members and no change in progress", n)
	if name != r.Cluster {
		what = "EtcdCluster " + name + ": " + what
	}
	return r.WaitFor(ctx, what, timeout, func() error { return r.settled(ctx, name, n) })
}

// settled returns nil when the named EtcdCluster has n healthy voting members and nothing in
// progress.
func (r *Run) settled(ctx context.Context, name string, n int32) error {
	ec := &v1alpha1.EtcdCluster{}
	if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: name}, ec); err != nil {
		return err
	}
	if ec.Status.ObservedGeneration != ec.Generation {
		return fmt.Errorf("status is for generation %d of %d", ec.Status.ObservedGeneration, ec.Generation)
	}
	a := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionAvailable)
	p := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionProgressing)
	if a == nil || a.Status != metav1.ConditionTrue || p == nil || p.Status != metav1.ConditionFalse || ec.Status.ReadyMembers != n || ec.Status.Replicas != n {
		return fmt.Errorf("ready %d/%d, Available %v, Progressing %v", ec.Status.ReadyMembers, n, a, p)
	}
	return nil
}

// Scale changes the number of members and waits until the cluster settles.
func (r *Run) Scale(ctx context.Context, n int32) error {
	if err := r.SetReplicas(ctx, n); err != nil {
		return err
	}
	return r.WaitSettled(ctx, n, 5*time.Minute)
}

// SetReplicas asks for n members without waiting for them.
func (r *Run) SetReplicas(ctx context.Context, n int32) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	from := ec.Spec.Replicas
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Replicas = n
	r.Phase(fmt.Sprintf("scaling %d -> %d", from, n))
	r.Event("action", "scale", fmt.Sprintf("replicas %d -> %d", from, n))
	return r.Suite.Client.Patch(ctx, ec, patch)
}

// UpgradeEtcd changes the cluster's etcd version and waits until every member reports it (as
// etcd itself does, in status.members) and the cluster has settled. Each member's pod must have
// been replaced once, and announced with a MemberRestarting event: the operator rolls the
// members one at a time, the leader last.
func (r *Run) UpgradeEtcd(ctx context.Context, to string) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	before, err := r.MemberPods(ctx)
	if err != nil {
		return err
	}
	from, n := ec.Spec.Version, ec.Spec.Replicas
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Version = to
	r.Phase(fmt.Sprintf("upgrading etcd %s -> %s", from, to))
	r.Event("action", "etcd-upgrade", fmt.Sprintf("version %s -> %s", from, to))
	if err := r.Suite.Client.Patch(ctx, ec, patch); err != nil {
		return err
	}
	if err := r.WaitEtcdVersion(ctx, to, 10*time.Minute); err != nil {
		return err
	}
	if err := r.WaitSettled(ctx, n, 5*time.Minute); err != nil {
		return err
	}
	problems, err := r.PodProblems(ctx, before, func(m string, b, a MemberPod, announced bool) string {
		switch {
		case a.UID == b.UID:
			return m + "'s pod was not replaced, yet it runs " + to
		case !announced:
			return m + "'s pod was replaced without a MemberRestarting event"
		}
		return ""
	})
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("etcd upgrade %s -> %s: %s", from, to, strings.Join(problems, "; "))
	}
	r.T.Logf("etcd %s -> %s: all %d members replaced one at a time, each announced", from, to, len(before))
	return nil
}

// WaitEtcdVersion waits until every member reports etcd version to (as etcd itself does, in
// status.members) and so does the cluster.
func (r *Run) WaitEtcdVersion(ctx context.Context, to string, timeout time.Duration) error {
	return r.WaitFor(ctx, fmt.Sprintf("every member to run etcd %s", to), timeout, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		var behind []string
		for _, m := range ec.Status.Members {
			if m.Version != to {
				behind = append(behind, m.Name+"="+m.Version)
			}
		}
		if len(behind) > 0 || ec.Status.CurrentVersion != to {
			return fmt.Errorf("current version %q, members not at %s: %v", ec.Status.CurrentVersion, to, behind)
		}
		return nil
	})
}

// Leader returns the name of the current leader.
func (r *Run) Leader(ctx context.Context) (string, error) {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return "", err
	}
	if ec.Status.Leader == "" {
		return "", fmt.Errorf("no leader in status")
	}
	return ec.Status.Leader, nil
}

// Follower returns the name of a member that is not the leader.
func (r *Run) Follower(ctx context.Context) (string, error) {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return "", err
	}
	for _, m := range ec.Status.Members {
		if !m.IsLeader && !m.Learner {
			return m.Name, nil
		}
	}
	return "", fmt.Errorf("no follower in status")
}

// DeletePod deletes a member's pod (as a node failure or an eviction would) and waits until
// the cluster has n healthy members again.
func (r *Run) DeletePod(ctx context.Context, member string, n int32) error {
	r.Phase("deleting pod " + member)
	end := r.Fault("pod-deleted", "deleted the pod of member "+member)
	err := r.Suite.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: member}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	// The fault lasts until the member's new pod is ready.
	err = r.WaitFor(ctx, "the pod of "+member+" to come back", 5*time.Minute, func() error {
		p := &corev1.Pod{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: member}, p); err != nil {
			return err
		}
		if !p.DeletionTimestamp.IsZero() {
			return fmt.Errorf("old pod still terminating")
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("pod not ready")
	})
	end()
	if err != nil {
		return err
	}
	return r.WaitSettled(ctx, n, 5*time.Minute)
}

// DeleteVolume deletes a member's PVC, as losing its disk would; the operator must replace
// the member. It waits until the cluster has n healthy members and the member is gone.
func (r *Run) DeleteVolume(ctx context.Context, member string, n int32) error {
	r.Phase("deleting the volume of " + member)
	end := r.Fault("volume-lost", "deleted the PersistentVolumeClaim of member "+member)
	defer end()
	err := r.Suite.Client.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: member}})
	if err != nil {
		return err
	}
	err = r.WaitFor(ctx, member+" to be replaced", 5*time.Minute, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		for _, m := range ec.Status.Members {
			if m.Name == member {
				return fmt.Errorf("%s is still a member", member)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return r.WaitSettled(ctx, n, 5*time.Minute)
}

// StopMember deletes a member's pod without waiting for it to come back (with the operator
// paused, it does not).
func (r *Run) StopMember(ctx context.Context, member string) error {
	err := r.Suite.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: member}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return r.WaitFor(ctx, "the pod of "+member+" to be gone", 2*time.Minute, func() error {
		err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: member}, &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// Hold keeps a fault in place for d while the load runs.
func (r *Run) Hold(ctx context.Context, d time.Duration) { wait(ctx, d) }

// SetPaused pauses or resumes the operator's changes to the cluster.
func (r *Run) SetPaused(ctx context.Context, paused bool) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Paused = paused
	r.Event("action", "paused", fmt.Sprintf("spec.paused = %v", paused))
	return r.Suite.Client.Patch(ctx, ec, patch)
}
