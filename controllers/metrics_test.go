package controllers

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/pki"
)

// The gauges the alerts are built on: voters, healthy voters and learners from status, and
// each TLS Secret's expiry from its certificate.
func TestMetricsFromStatus(t *testing.T) {
	c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-test", Name: "m"}}
	after := v1alpha1.EtcdClusterStatus{Members: []v1alpha1.MemberStatus{
		{Name: "m-0", Healthy: true}, {Name: "m-1", Healthy: true}, {Name: "m-2"}, {Name: "m-3", Learner: true, Healthy: true},
	}}
	recordMetrics(c, v1alpha1.EtcdClusterStatus{}, after)
	defer metrics.ForgetCluster("metrics-test", "m")
	got := map[string]float64{
		"voters":         testutil.ToFloat64(metrics.ClusterMembers.WithLabelValues("metrics-test", "m", "voter")),
		"learners":       testutil.ToFloat64(metrics.ClusterMembers.WithLabelValues("metrics-test", "m", "learner")),
		"healthy voters": testutil.ToFloat64(metrics.HealthyVoters.WithLabelValues("metrics-test", "m")),
		"m-2 healthy":    testutil.ToFloat64(metrics.MemberHealthy.WithLabelValues("metrics-test", "m", "m-2")),
	}
	want := map[string]float64{"voters": 3, "learners": 1, "healthy voters": 2, "m-2 healthy": 0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}

	now := time.Now()
	ca, err := pki.NewCA("test", now)
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "m-ca"}, Data: map[string][]byte{pki.KeyCACert: ca.CertPEM}}
	recordExpiry(c, s, pki.KeyCACert)
	if got, want := testutil.ToFloat64(metrics.CertificateExpiry.WithLabelValues("metrics-test", "m", "m-ca")), float64(ca.Cert.NotAfter.Unix()); got != want {
		t.Errorf("expiry of m-ca = %v, want %v", got, want)
	}
}
