package etcdcluster

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/certificates"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// The gauges the alerts are built on, from status: voters, healthy voters and learners, each
// member's health, and the first certificate's expiry. Each step compares the cluster's whole
// set of gauges.
func TestMetricsFromStatus(t *testing.T) {
	c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-test", Name: "m"}}
	after := v1alpha1.EtcdClusterStatus{Members: []v1alpha1.MemberStatus{
		{Name: "m-0", Healthy: true}, {Name: "m-1", Healthy: true}, {Name: "m-2"}, {Name: "m-3", Learner: true, Healthy: true},
	}}
	defer metrics.ForgetCluster("metrics-test", "m")
	members := map[string]float64{
		`quorate_cluster_available{}`: 0, `quorate_cluster_healthy_voters{}`: 2,
		`quorate_cluster_members{role="voter"}`: 3, `quorate_cluster_members{role="learner"}`: 1,
		`quorate_member_healthy{member="m-0"}`: 1, `quorate_member_healthy{member="m-1"}`: 1, `quorate_member_healthy{member="m-2"}`: 0, `quorate_member_healthy{member="m-3"}`: 1,
		`quorate_cluster_alarm{alarm="NOSPACE"}`: 0, `quorate_cluster_alarm{alarm="CORRUPT"}`: 0,
	}
	with := func(k string, v float64) map[string]float64 {
		out := maps.Clone(members)
		out[k] = v
		return out
	}

	// One series of certificate expiry per cluster: the first certificate to expire, and
	// its Secret. A change of first certificate replaces the series; none removes it.
	now := time.Now()
	ca, err := pki.NewCA("test", now)
	if err != nil {
		t.Fatal(err)
	}
	c.Status = *after.DeepCopy()
	certificates.RecordExpiry(c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "m-ca"}, Data: map[string][]byte{pki.KeyCACert: ca.CertPEM}}, pki.KeyCACert)
	withCA := *c.Status.DeepCopy()
	withServer := *withCA.DeepCopy()
	withServer.TLS.FirstExpiry = &v1alpha1.CertificateExpiry{Secret: names.ServerSecret("m"), Time: metav1.NewTime(now.Add(time.Hour).Truncate(time.Second))}
	for _, step := range []struct {
		name   string
		status v1alpha1.EtcdClusterStatus
		want   map[string]float64
	}{
		{"members, no TLS", after, members},
		{"the CA first", withCA, with(`quorate_certificate_expiry_timestamp_seconds{secret="m-ca"}`, float64(ca.Cert.NotAfter.Unix()))},
		{"then the server certificate", withServer, with(`quorate_certificate_expiry_timestamp_seconds{secret="`+names.ServerSecret("m")+`"}`, float64(now.Add(time.Hour).Unix()))},
		{"then TLS off", after, members},
	} {
		recordMetrics(c, after, step.status)
		if d := cmp.Diff(step.want, clusterSeries(t, "metrics-test", "m")); d != "" {
			t.Errorf("%s: the cluster's series (-want +got):\n%s", step.name, d)
		}
	}
	// The collector keeps what it read: the status changed afterwards changes no series.
	alarmed := *after.DeepCopy()
	alarmed.Alarms = []string{planner.AlarmNoSpace}
	recordMetrics(c, after, alarmed)
	alarmed.Alarms[0] = planner.AlarmCorrupt
	alarmed.Members[0].Name = "renamed"
	if d := cmp.Diff(with(`quorate_cluster_alarm{alarm="NOSPACE"}`, 1), clusterSeries(t, "metrics-test", "m")); d != "" {
		t.Errorf("NOSPACE raised, then the status changed: the cluster's series (-want +got):\n%s", d)
	}
	metrics.ForgetCluster("metrics-test", "m")
	if got := clusterSeries(t, "metrics-test", "m"); len(got) != 0 {
		t.Errorf("after ForgetCluster the cluster still has series: %v", got)
	}
}

// clusterSeries are the series the operator exports of a cluster, keyed by name and the labels
// other than namespace and etcd_cluster.
func clusterSeries(t *testing.T, namespace, cluster string) map[string]float64 {
	t.Helper()
	// Other tests' clusters run beside (t.Parallel): their series go through the same
	// collector, however many they are.
	ch := make(chan prometheus.Metric)
	go func() {
		defer close(ch)
		metrics.Clusters.Collect(ch)
	}()
	got := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		var ns, cl string
		var rest []string
		for _, p := range d.GetLabel() {
			switch p.GetName() {
			case "namespace":
				ns = p.GetValue()
			case metrics.ClusterLabel:
				cl = p.GetValue()
			default:
				rest = append(rest, fmt.Sprintf("%s=%q", p.GetName(), p.GetValue()))
			}
		}
		if ns != namespace || cl != cluster {
			continue
		}
		v := d.GetGauge().GetValue() + d.GetCounter().GetValue()
		name, _ := testsupport.DescName(m.Desc())
		got[name+"{"+strings.Join(rest, ",")+"}"] = v
	}
	return got
}
