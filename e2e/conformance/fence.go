package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/internal/names"
)

// Fence: under load, a follower is fenced at the user's request (the EtcdCluster's
// etcd.quorate.dev/fence-members annotation): its etcd stops while its pod stays Running (its
// launcher answers the probes: alive, not ready) and the cluster stays Available; then it is
// unfenced, and its etcd starts again in the same pod and becomes healthy. No outage is
// expected: every checker must pass.
func Fence() framework.Scenario {
	var follower string
	var before map[string]framework.MemberPod
	var end func()
	return framework.Scenario{Name: "fence", Labels: safety, Replicas: 3, Class: framework.Planned, MinDuration: 20 * time.Second,
		Steps: []framework.Step{
			{Name: "find a follower and record the member pods", Do: func(ctx context.Context, r *framework.Run) (err error) {
				if follower, err = r.Follower(ctx); err != nil {
					return err
				}
				before, err = r.MemberPods(ctx)
				return err
			}},
			{Name: "fence the follower", Do: func(ctx context.Context, r *framework.Run) error {
				r.Phase("fencing " + follower)
				end = r.Fault("fence", "annotation "+names.AnnotationFenceMembers+"="+follower)
				return r.Update(ctx, "annotation "+names.AnnotationFenceMembers+"="+follower, func(ec *v1alpha1.EtcdCluster) {
					if ec.Annotations == nil {
						ec.Annotations = map[string]string{}
					}
					ec.Annotations[names.AnnotationFenceMembers] = follower
				})
			}},
			{Name: "wait until the follower's etcd no longer answers, its pod Running and not ready", Do: func(ctx context.Context, r *framework.Run) error {
				// The kubelet refreshes the pod's annotations file within about a minute.
				return r.WaitFor(ctx, follower+" fenced", 3*time.Minute, func() error { return fencedHolds(ctx, r, follower, before) })
			}},
			{Name: "hold the fence 20 s: the pod stays, the cluster stays Available", Do: func(ctx context.Context, r *framework.Run) error {
				r.Hold(ctx, 20*time.Second)
				return fencedHolds(ctx, r, follower, before)
			}},
			{Name: "unfence the follower", Do: func(ctx context.Context, r *framework.Run) error {
				r.Phase("unfencing " + follower)
				return r.Update(ctx, "annotation "+names.AnnotationFenceMembers+" removed", func(ec *v1alpha1.EtcdCluster) {
					delete(ec.Annotations, names.AnnotationFenceMembers)
				})
			}},
			{Name: "wait for 3 healthy members, the same pods, not restarted", Do: func(ctx context.Context, r *framework.Run) error {
				err := r.WaitSettled(ctx, 3, 5*time.Minute)
				end()
				if err != nil {
					return err
				}
				if _, err := r.WaitCondition(ctx, v1alpha1.ConditionMembersFenced, metav1.ConditionFalse, v1alpha1.ReasonNoMembersFenced, time.Minute); err != nil {
					return err
				}
				problems, err := r.PodProblems(ctx, before, samePodJudge)
				if err != nil {
					return err
				}
				if len(problems) > 0 {
					return fmt.Errorf("fencing disturbed the member pods: %s", strings.Join(problems, "; "))
				}
				return nil
			}},
		}}
}

// samePodJudge: fencing neither replaces nor restarts a member's pod.
func samePodJudge(m string, b, a framework.MemberPod, _ bool) string {
	switch {
	case a.UID != b.UID:
		return m + "'s pod was replaced"
	case a.Restarts != b.Restarts:
		return fmt.Sprintf("%s's containers restarted (%d -> %d restarts)", m, b.Restarts, a.Restarts)
	}
	return ""
}

// fencedHolds: the member is fenced (the operator finds its etcd unanswering and says it is
// fenced), its pod is the same one, Running and not Ready, with no new restart, and the cluster
// is Available with the other two members healthy.
func fencedHolds(ctx context.Context, r *framework.Run, member string, before map[string]framework.MemberPod) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	if a := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionAvailable); a == nil || a.Status != metav1.ConditionTrue {
		return fmt.Errorf("%w: the cluster is not Available while %s is fenced: %+v", framework.ErrStop, member, a)
	}
	if f := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionMembersFenced); f == nil || f.Status != metav1.ConditionTrue || f.Reason != v1alpha1.ReasonMembersFenced {
		return fmt.Errorf("MembersFenced is %+v", f)
	}
	healthy := 0
	for _, m := range ec.Status.Members {
		switch {
		case m.Name == member && (!m.Fenced || m.Healthy):
			return fmt.Errorf("%s: fenced %t, healthy %t (its etcd still answers)", member, m.Fenced, m.Healthy)
		case m.Name != member && m.Healthy:
			healthy++
		}
	}
	if healthy != 2 {
		return fmt.Errorf("%d other members healthy, want 2", healthy)
	}
	p := &corev1.Pod{}
	if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: member}, p); err != nil {
		return err
	}
	var restarts int32
	for _, cs := range p.Status.ContainerStatuses {
		restarts += cs.RestartCount
	}
	if b := before[member]; p.UID != b.UID || restarts != b.Restarts {
		return fmt.Errorf("%w: %s's pod was replaced or restarted while fenced (uid %s -> %s, restarts %d -> %d)", framework.ErrStop, member, b.UID, p.UID, b.Restarts, restarts)
	}
	if p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
		return fmt.Errorf("%w: %s's pod is %s (deleting: %t), want it Running", framework.ErrStop, member, p.Status.Phase, !p.DeletionTimestamp.IsZero())
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return fmt.Errorf("%s's pod is still Ready", member)
		}
	}
	return nil
}
