package conformance

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/e2e/localcluster"
	"github.com/quorate-dev/quorate/internal/names"
)

// LearnerBudgetName is the scenario in which voters are evicted while a learner stands.
const LearnerBudgetName = "learner-budget"

// LearnerBudget (suite=safety, make e2e-learner-budget) evicts voters through the Eviction API
// while a learner stands beside them, Ready, and no operator acts: the PodDisruptionBudget
// alone must keep a quorum of the voters. It runs at an etcd release before 3.5.19
// (--etcd-learner-ready-version), whose /readyz does not fail on a learner, so that the
// learner's pod counts as a healthy pod of the budget; from 3.5.19 a learner is never Ready
// and the budget's learner margin is never tested.
//
// 3 voters are asked to become 5; once the operator added the first learner (its pod exists),
// the operator is frozen (SIGSTOP) and its Deployment scaled to 0, so that it neither promotes
// the learner nor brings evicted members back. With the learner's pod Ready, two followers are
// evicted: the first must be allowed (3 voters and a learner: one may go), the second refused,
// since it would leave 1 of 3 voters. A budget that counted the learner as one of the voters
// (the pdb-counts-learners mutant) lets both go and quorum with them.
func LearnerBudget(opts *framework.Options) framework.Scenario {
	var paused []localcluster.Paused
	var learner string
	return framework.Scenario{Name: LearnerBudgetName, Labels: safety, Replicas: 3, Class: framework.Fault, NeedsNode: true,
		Version: opts.LearnerReadyVersion, Needs: []framework.Prerequisite{LearnerReadyRelease},
		Steps: []framework.Step{
			{Name: "ask for 5 members and stop the operator once it added a learner", Do: func(ctx context.Context, r *framework.Run) (err error) {
				learner = fmt.Sprintf("%s-3", r.Cluster)
				if err := r.SetReplicas(ctx, 5); err != nil {
					return err
				}
				if err := r.WaitFor(ctx, "the pod of learner "+learner, 2*time.Minute, func() error {
					return r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: learner}, &corev1.Pod{})
				}); err != nil {
					return err
				}
				paused, err = stopOperator(ctx, r)
				return err
			}},
			{Name: "the learner's pod becomes Ready and the budget counts it", Do: func(ctx context.Context, r *framework.Run) error {
				return r.WaitFor(ctx, "the budget to count 4 healthy pods (3 voters and the learner)", 2*time.Minute, func() error {
					pdb := &policyv1.PodDisruptionBudget{}
					if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: names.PDB(r.Cluster)}, pdb); err != nil {
						return err
					}
					if pdb.Status.ObservedGeneration != pdb.Generation || pdb.Status.CurrentHealthy != 4 {
						return fmt.Errorf("the budget (minAvailable %s) counts %d healthy pods, for generation %d of %d", pdb.Spec.MinAvailable, pdb.Status.CurrentHealthy, pdb.Status.ObservedGeneration, pdb.Generation)
					}
					r.T.Logf("the budget: minAvailable %s, %d healthy, %d disruptions allowed", pdb.Spec.MinAvailable, pdb.Status.CurrentHealthy, pdb.Status.DisruptionsAllowed)
					return nil
				})
			}},
			{Name: "evict two followers: the first is allowed, the budget refuses the second", Do: func(ctx context.Context, r *framework.Run) error {
				return evictTwoFollowers(ctx, r, learner)
			}},
			{Name: "start the operator again: the evicted member comes back and the learner is promoted", Do: func(ctx context.Context, r *framework.Run) error {
				resumed, err := localcluster.ResumeContainers(paused)
				if err != nil {
					return err
				}
				r.T.Logf("resumed %d operator processes (the rest ended with their pod)", len(resumed))
				return r.ScaleInstall(ctx, r.Suite.Opts.OperatorNS, 1)
			}},
			waitSettled(5),
		}}
}

// LearnerReadyRelease is the prerequisite of learner-budget: an etcd release whose learners
// pass readiness, given with --etcd-learner-ready-version.
var LearnerReadyRelease = framework.Prerequisite{Name: "an etcd release before 3.5.19", Missing: func(_ context.Context, r *framework.Run) (string, error) {
	if r.Suite.Opts.LearnerReadyVersion == "" {
		return "--etcd-learner-ready-version is not set (make e2e-learner-budget builds etcd 3.5.17's image and gives it)", nil
	}
	return "", nil
}}

// stopOperator freezes every process of the operator's pods (SIGSTOP), then scales its
// Deployment to 0 without waiting: the frozen pod is killed once its grace period ends, and no
// other starts. The run's cleanup scales it back to 1 if the scenario does not.
func stopOperator(ctx context.Context, r *framework.Run) ([]localcluster.Paused, error) {
	if err := needsNode(r, "freezing the operator"); err != nil {
		return nil, err
	}
	ns := r.Suite.Opts.OperatorNS
	var pods corev1.PodList
	if err := r.Suite.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(label.OperatorLabels())); err != nil {
		return nil, err
	}
	var running []string
	for _, p := range pods.Items {
		running = append(running, p.Name)
	}
	paused, err := r.Suite.Node.PauseContainers(ctx, ns, running, label.OperatorContainer)
	r.Defer(func() { _, _ = localcluster.ResumeContainers(paused) })
	r.OnCleanup(func(ctx context.Context) error { return r.ScaleInstall(ctx, ns, 1) })
	if err != nil {
		return paused, err
	}
	if len(paused) == 0 {
		return nil, fmt.Errorf("no operator process of %v was frozen", running)
	}
	r.Event("action", "operator-stopped", fmt.Sprintf("froze the operator (%v) and scaled its Deployment to 0", running))
	return paused, r.SetInstallReplicas(ctx, ns, 0)
}

// needsNode stops a step that needs the node's container runtime (to freeze or restart a
// container) when the suite runs without it.
func needsNode(r *framework.Run, what string) error {
	if r.Suite.Node == nil {
		return fmt.Errorf("%w: %s needs node access (--provider=local)", framework.ErrStop, what)
	}
	return nil
}

// evictTwoFollowers evicts two voters that do not lead, one after the other, through the
// Eviction API (as a node drain does): with 3 voters and a Ready learner the budget must allow
// the first and refuse the second.
func evictTwoFollowers(ctx context.Context, r *framework.Run, learner string) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	var followers []string
	for _, m := range ec.Status.Members {
		if !m.IsLeader && !m.Learner && m.Name != learner {
			followers = append(followers, m.Name)
		}
	}
	slices.Sort(followers)
	if len(followers) < 2 {
		return fmt.Errorf("status names %d followers (%v), want 2", len(followers), ec.Status.Members)
	}
	evict := func(pod string) error {
		r.Phase("evicting " + pod)
		return r.Suite.Clientset.PolicyV1().Evictions(r.Namespace).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: pod}})
	}
	first, second := followers[0], followers[1]
	if err := evict(first); err != nil {
		return fmt.Errorf("evicting %s, the first of 3 voters beside a Ready learner: %w; the budget should let one voter go", first, err)
	}
	r.Event("fault", "evicted", "evicted the pod of "+first)
	err = evict(second)
	switch {
	case err == nil:
		r.Event("fault", "evicted", "evicted the pod of "+second)
		return fmt.Errorf("the budget let %s be evicted after %s while learner %s stood beside them: 1 of 3 voters is left, and quorum went with them", second, first, learner)
	case apierrors.IsTooManyRequests(err):
		r.T.Logf("evicted %s; the budget refused %s: %v", first, second, err)
		return nil
	}
	return fmt.Errorf("evicting %s: %w", second, err)
}
