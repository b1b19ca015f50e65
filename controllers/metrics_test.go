package controllers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

// The gauges the alerts are built on: voters, healthy voters and learners from status, and
// the first certificate's expiry from status.
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

	// One series of certificate expiry per cluster: the first certificate to expire, and
	// its Secret. A change of first certificate replaces the series; none removes it.
	now := time.Now()
	ca, err := pki.NewCA("test", now)
	if err != nil {
		t.Fatal(err)
	}
	c.Status = *after.DeepCopy()
	recordExpiry(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "m-ca"}, Data: map[string][]byte{pki.KeyCACert: ca.CertPEM}}, pki.KeyCACert)
	withCA := *c.Status.DeepCopy()
	withServer := *withCA.DeepCopy()
	withServer.TLS.FirstExpiry = &v1alpha1.CertificateExpiry{Secret: names.ServerSecret("m"), Time: metav1.NewTime(now.Add(time.Hour).Truncate(time.Second))}
	for _, step := range []struct {
		name   string
		status v1alpha1.EtcdClusterStatus
		want   map[string]float64
	}{
		{"the CA first", withCA, map[string]float64{"m-ca": float64(ca.Cert.NotAfter.Unix())}},
		{"then the server certificate", withServer, map[string]float64{names.ServerSecret("m"): float64(now.Add(time.Hour).Unix())}},
		{"then TLS off", v1alpha1.EtcdClusterStatus{}, map[string]float64{}},
	} {
		recordMetrics(c, after, step.status)
		if d := cmp.Diff(step.want, expirySeries(t, "metrics-test", "m")); d != "" {
			t.Errorf("%s: quorate_certificate_expiry_timestamp_seconds by secret (-want +got):\n%s", step.name, d)
		}
	}
}

// expirySeries is the certificate expiry series of a cluster, by Secret.
func expirySeries(t *testing.T, namespace, cluster string) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	metrics.CertificateExpiry.Collect(ch)
	close(ch)
	got := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		l := map[string]string{}
		for _, p := range d.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["namespace"] == namespace && l["cluster"] == cluster {
			got[l["secret"]] = d.GetGauge().GetValue()
		}
	}
	return got
}
