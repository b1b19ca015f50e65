package controllers

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/planner"
)

// recordMetrics publishes the cluster's status as gauges, and counts a change into a
// cluster-ID mismatch.
func recordMetrics(c *v1alpha1.EtcdCluster, before, after v1alpha1.EtcdClusterStatus) {
	ns, name := c.Namespace, c.Name
	available := meta.IsStatusConditionTrue(after.Conditions, v1alpha1.ConditionAvailable)
	metrics.ClusterAvailable.WithLabelValues(ns, name).Set(boolFloat(available))
	voters, learners, healthyVoters := 0, 0, 0
	for _, m := range after.Members {
		switch {
		case m.Learner:
			learners++
		case m.Healthy:
			voters++
			healthyVoters++
		default:
			voters++
		}
		metrics.MemberHealthy.WithLabelValues(ns, name, m.Name).Set(boolFloat(m.Healthy))
	}
	for _, old := range before.Members {
		if findMember(after.Members, old.Name) == nil {
			metrics.MemberHealthy.DeleteLabelValues(ns, name, old.Name)
		}
	}
	for _, a := range []string{planner.AlarmNoSpace, planner.AlarmCorrupt} {
		metrics.ClusterAlarms.WithLabelValues(ns, name, a).Set(boolFloat(slices.Contains(after.Alarms, a)))
	}
	metrics.ClusterMembers.WithLabelValues(ns, name, "voter").Set(float64(voters))
	metrics.ClusterMembers.WithLabelValues(ns, name, "learner").Set(float64(learners))
	metrics.HealthyVoters.WithLabelValues(ns, name).Set(float64(healthyVoters))
	if after.TLS != nil && after.TLS.FirstExpiry != nil {
		metrics.SetCertificateExpiry(ns, name, after.TLS.FirstExpiry.Secret, after.TLS.FirstExpiry.Time.Time)
	} else {
		metrics.SetCertificateExpiry(ns, name, "", time.Time{})
	}
	was, now := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionDegraded), meta.FindStatusCondition(after.Conditions, v1alpha1.ConditionDegraded)
	if now != nil && now.Status == metav1.ConditionTrue && now.Reason == v1alpha1.ReasonClusterIDMismatch &&
		(was == nil || was.Status != metav1.ConditionTrue || was.Reason != v1alpha1.ReasonClusterIDMismatch) {
		metrics.ClusterIDMismatches.WithLabelValues(ns, name).Inc()
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
