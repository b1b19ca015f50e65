package etcdcluster

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/statuscond"
	"github.com/quorate-dev/quorate/internal/planner"
)

// hibernationState is the planner's input about hibernation: spec.hibernate, and whether the
// cluster is waking from it (hibernation was asked for, and the cluster has not been Awake
// since spec.hibernate went back to false).
func hibernationState(c *v1alpha1.EtcdCluster, s *planner.State) {
	s.Hibernate = c.Spec.Hibernate
	h := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionHibernated)
	s.Waking = !c.Spec.Hibernate && h != nil && h.Reason != v1alpha1.ReasonAwake
}

// hibernationStatus sets the Hibernated condition once hibernation was asked for, and words
// Available, Progressing and Degraded for an outage the user asked for: no failure, unless
// the step needs attention (a pod stuck terminating, a member that does not start on waking).
func hibernationStatus(c *v1alpha1.EtcdCluster, s planner.State, a planner.Action, execErr error, st *v1alpha1.EtcdClusterStatus) {
	old := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionHibernated)
	if !s.Hibernate && old == nil {
		return
	}
	gen := c.Generation
	left := 0
	for _, m := range s.Members {
		if m.HasPod {
			left++
		}
	}
	up := meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionAvailable)
	var h metav1.Condition
	switch {
	case s.Hibernate && left == 0 && s.ClusterID == 0:
		h = statuscond.New(v1alpha1.ConditionHibernated, true, v1alpha1.ReasonHibernated,
			"spec.hibernate is true and the cluster has not formed: no member is created until it is set to false", gen)
	case s.Hibernate && left == 0:
		h = statuscond.New(v1alpha1.ConditionHibernated, true, v1alpha1.ReasonHibernated,
			"every member pod is stopped; the volumes, Secrets, Services and membership are kept; set spec.hibernate to false to wake the cluster", gen)
	case s.Hibernate:
		h = statuscond.New(v1alpha1.ConditionHibernated, false, v1alpha1.ReasonHibernating,
			fmt.Sprintf("spec.hibernate is true: stopping the member pods one at a time, the leader last (%d left); %s", left, a.Message), gen)
	case up || old.Reason == v1alpha1.ReasonAwake:
		h = statuscond.New(v1alpha1.ConditionHibernated, false, v1alpha1.ReasonAwake,
			"the cluster woke from hibernation: a quorum of members answers, with a leader", gen)
	default:
		h = statuscond.New(v1alpha1.ConditionHibernated, false, v1alpha1.ReasonWaking,
			"spec.hibernate is false: the members restart from their volumes, with their data and cluster ID; waiting for a quorum of them to elect a leader", gen)
	}
	meta.SetStatusCondition(&st.Conditions, h)
	outage := h.Reason // Hibernating, Hibernated or Waking: the outage was asked for
	if outage == v1alpha1.ReasonAwake {
		return
	}
	if outage == v1alpha1.ReasonHibernating {
		outage = v1alpha1.ReasonHibernated
	}
	if !up {
		meta.SetStatusCondition(&st.Conditions, statuscond.New(v1alpha1.ConditionAvailable, false, outage, availableMessage(h.Reason), gen))
	}
	if execErr == nil && !a.Attention {
		meta.SetStatusCondition(&st.Conditions, statuscond.New(v1alpha1.ConditionDegraded, false, outage,
			"nothing needs attention: "+h.Message, gen))
	}
	if execErr == nil && h.Status == metav1.ConditionTrue {
		msg := h.Message
		if note := planner.PendingNote(s); note != "" {
			msg += "; " + note // a defragmentation asked for does not end with nobody done
		}
		meta.SetStatusCondition(&st.Conditions, statuscond.New(v1alpha1.ConditionProgressing, false, v1alpha1.ReasonHibernated, msg, gen))
	}
}

func availableMessage(reason string) string {
	if reason == v1alpha1.ReasonWaking {
		return "waking from hibernation: clients reach the cluster once a quorum of members restarted from their volumes elects a leader"
	}
	return "hibernating (spec.hibernate): the member pods are stopped, as asked; clients cannot reach the cluster until spec.hibernate is set to false"
}

// expectedOutage: a condition reason that says the cluster is down because the user asked.
func expectedOutage(reason string) bool {
	return reason == v1alpha1.ReasonHibernated || reason == v1alpha1.ReasonWaking
}

// hibernationAskedFor: the cluster hibernates, is hibernated or wakes, by the status st: its
// outage was asked for (exported as quorate_cluster_hibernated, which the alerts leave out).
func hibernationAskedFor(c *v1alpha1.EtcdCluster, st v1alpha1.EtcdClusterStatus) bool {
	h := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionHibernated)
	return c.Spec.Hibernate || h != nil && h.Reason != v1alpha1.ReasonAwake
}
