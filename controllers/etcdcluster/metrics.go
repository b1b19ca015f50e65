package etcdcluster

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/metrics"
)

// recordMetrics publishes the cluster's status as its gauges, and counts a change into a
// cluster-ID mismatch.
func recordMetrics(c *v1alpha1.EtcdCluster, before, after v1alpha1.EtcdClusterStatus) {
	// The collector keeps m: its slices are its own, not the status's.
	m := metrics.Cluster{Available: meta.IsStatusConditionTrue(after.Conditions, v1alpha1.ConditionAvailable), Alarms: slices.Clone(after.Alarms),
		Members: make([]metrics.Member, 0, len(after.Members))}
	for _, s := range after.Members {
		m.Members = append(m.Members, metrics.Member{Name: s.Name, Healthy: s.Healthy, Learner: s.Learner, Fenced: s.Fenced})
	}
	if after.TLS != nil && after.TLS.FirstExpiry != nil {
		m.FirstExpirySecret, m.FirstExpiry = after.TLS.FirstExpiry.Secret, after.TLS.FirstExpiry.Time.Time
	}
	m.Hibernated = hibernationAskedFor(c, after)
	metrics.SetCluster(c.Namespace, c.Name, m)
	was, now := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionDegraded), meta.FindStatusCondition(after.Conditions, v1alpha1.ConditionDegraded)
	if now != nil && now.Status == metav1.ConditionTrue && now.Reason == v1alpha1.ReasonClusterIDMismatch &&
		(was == nil || was.Status != metav1.ConditionTrue || was.Reason != v1alpha1.ReasonClusterIDMismatch) {
		metrics.CountClusterIDMismatch(c.Namespace, c.Name)
	}
}
