package conformance

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/internal/names"
)

// Hibernate (suite=safety, make e2e-hibernate): under load, spec.hibernate stops every member
// pod, the leader last; the cluster stays hibernated 20 s with its volumes; spec.hibernate back
// to false restarts the members from their volumes with the same names and cluster ID. The
// outage is asked for and declared (Expect: outage): writes fail while it lasts, and the
// availability checker must find that gap; every other checker must pass, so no write
// acknowledged before the hibernation is lost across it and the history stays linearizable.
func Hibernate() framework.Scenario {
	var clusterID string
	var members []string
	var end func()
	return framework.Scenario{Name: "hibernate", Labels: safety, Replicas: 3, Class: framework.Planned, Expect: outage,
		Steps: []framework.Step{
			{Name: "record the cluster ID and the members", Do: func(ctx context.Context, r *framework.Run) error {
				ec, err := r.GetCluster(ctx)
				if err != nil {
					return err
				}
				clusterID, members = ec.Status.ClusterID, nil
				for _, m := range ec.Status.Members {
					members = append(members, m.Name)
				}
				slices.Sort(members)
				return nil
			}},
			{Name: "hibernate (spec.hibernate = true)", Do: func(ctx context.Context, r *framework.Run) error {
				r.Phase("hibernating: the member pods stop, the leader last")
				end = r.Fault("hibernate", "spec.hibernate = true: every member pod stopped, as asked; writes fail until the cluster is woken")
				return r.Update(ctx, "spec.hibernate = true", func(ec *v1alpha1.EtcdCluster) { ec.Spec.Hibernate = true })
			}},
			{Name: "wait for Hibernated=True/Hibernated", Do: func(ctx context.Context, r *framework.Run) error {
				_, err := r.WaitCondition(ctx, v1alpha1.ConditionHibernated, metav1.ConditionTrue, v1alpha1.ReasonHibernated, 5*time.Minute)
				return err
			}},
			{Name: "check: no member pod, every volume kept, the outage reported as asked for", Do: func(ctx context.Context, r *framework.Run) error {
				return checkHibernated(ctx, r, members)
			}},
			{Name: "hold the hibernation 20 s", Do: func(ctx context.Context, r *framework.Run) error {
				r.Phase("hibernated")
				r.Hold(ctx, 20*time.Second)
				return nil
			}},
			{Name: "wake (spec.hibernate = false)", Do: func(ctx context.Context, r *framework.Run) error {
				r.Phase("waking: the members restart from their volumes")
				return r.Update(ctx, "spec.hibernate = false", func(ec *v1alpha1.EtcdCluster) { ec.Spec.Hibernate = false })
			}},
			{Name: "wait for Hibernated=False/Awake", Do: func(ctx context.Context, r *framework.Run) error {
				_, err := r.WaitCondition(ctx, v1alpha1.ConditionHibernated, metav1.ConditionFalse, v1alpha1.ReasonAwake, 5*time.Minute)
				end()
				return err
			}},
			waitSettled(3),
			{Name: "check: the same members and cluster ID", Do: func(ctx context.Context, r *framework.Run) error {
				ec, err := r.GetCluster(ctx)
				if err != nil {
					return err
				}
				var now []string
				for _, m := range ec.Status.Members {
					now = append(now, m.Name)
				}
				slices.Sort(now)
				if ec.Status.ClusterID != clusterID || !slices.Equal(now, members) {
					return fmt.Errorf("woken cluster: ID %s and members %v, want %s and %v", ec.Status.ClusterID, now, clusterID, members)
				}
				return nil
			}},
		}}
}

// checkHibernated: no member pod runs, every member's volume is there, and Available and
// Degraded say Hibernated (an outage asked for), with no QuorumLost announced.
func checkHibernated(ctx context.Context, r *framework.Run, members []string) error {
	var pods corev1.PodList
	if err := r.Suite.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels(names.MemberSelector(r.Cluster))); err != nil {
		return err
	}
	if len(pods.Items) != 0 {
		return fmt.Errorf("%d member pods left while hibernated", len(pods.Items))
	}
	for _, m := range members {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := r.Suite.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: m}, pvc); err != nil {
			return fmt.Errorf("volume of %s while hibernated: %w", m, err)
		}
		if !pvc.DeletionTimestamp.IsZero() {
			return fmt.Errorf("volume of %s is being deleted while hibernated", m)
		}
	}
	for _, t := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionDegraded} {
		if _, ok, err := r.ConditionIs(ctx, t, metav1.ConditionFalse, v1alpha1.ReasonHibernated); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%s is not False/Hibernated while hibernated", t)
		}
	}
	if named, err := r.EventsFor(ctx, v1alpha1.ReasonQuorumLost); err != nil {
		return err
	} else if len(named) > 0 {
		return fmt.Errorf("the operator announced QuorumLost while hibernating as asked")
	}
	return nil
}
