package metrics

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/quorate-dev/quorate/internal/testsupport"
)

// The collector's whole exposition after each step: a cluster's status replaces its gauges
// whole (a member gone takes its series along), counters add up per label, and Forget drops
// every series of the cluster and nothing of another.
func TestClusterCollector(t *testing.T) {
	c := NewClusterCollector()
	expiry := time.Unix(1900000000, 0)
	c.Set("ns", "a", Cluster{Available: true, Alarms: []string{"NOSPACE"}, FirstExpirySecret: "a-ca", FirstExpiry: expiry,
		Members: []Member{{Name: "a-0", Healthy: true}, {Name: "a-1", Healthy: true}, {Name: "a-2"}, {Name: "a-3", Learner: true, Healthy: true}}})
	c.Set("ns", "b", Cluster{Members: []Member{{Name: "b-0"}}})
	c.add("ns", "a", descReconcileOutcomes, "outcome", "None")
	c.add("ns", "a", descReconcileOutcomes, "outcome", "None")
	c.add("ns", "a", descReconcileOutcomes, "outcome", "Error")
	c.add("ns", "a", descMembershipChanges, "change", "promote")
	c.add("ns", "a", descClusterIDMismatches, "", "")
	c.add("ns", "c", descReconcileOutcomes, "outcome", "Error") // counted before any status

	aCounts := `
quorate_reconcile_outcomes_total{etcd_cluster="a",namespace="ns",outcome="Error"} 1
quorate_reconcile_outcomes_total{etcd_cluster="a",namespace="ns",outcome="None"} 2
quorate_membership_changes_total{change="promote",etcd_cluster="a",namespace="ns"} 1
quorate_cluster_id_mismatches_total{etcd_cluster="a",namespace="ns"} 1
`
	a := `
quorate_cluster_alarm{alarm="CORRUPT",etcd_cluster="a",namespace="ns"} 0
quorate_cluster_alarm{alarm="NOSPACE",etcd_cluster="a",namespace="ns"} 1
quorate_cluster_available{etcd_cluster="a",namespace="ns"} 1
quorate_cluster_healthy_voters{etcd_cluster="a",namespace="ns"} 2
quorate_cluster_members{etcd_cluster="a",namespace="ns",role="learner"} 1
quorate_cluster_members{etcd_cluster="a",namespace="ns",role="voter"} 3
quorate_member_healthy{etcd_cluster="a",member="a-0",namespace="ns"} 1
quorate_member_healthy{etcd_cluster="a",member="a-1",namespace="ns"} 1
quorate_member_healthy{etcd_cluster="a",member="a-2",namespace="ns"} 0
quorate_member_healthy{etcd_cluster="a",member="a-3",namespace="ns"} 1
quorate_certificate_expiry_timestamp_seconds{etcd_cluster="a",namespace="ns",secret="a-ca"} 1.9e+09
`
	b := `
quorate_cluster_alarm{alarm="CORRUPT",etcd_cluster="b",namespace="ns"} 0
quorate_cluster_alarm{alarm="NOSPACE",etcd_cluster="b",namespace="ns"} 0
quorate_cluster_available{etcd_cluster="b",namespace="ns"} 0
quorate_cluster_healthy_voters{etcd_cluster="b",namespace="ns"} 0
quorate_cluster_members{etcd_cluster="b",namespace="ns",role="learner"} 0
quorate_cluster_members{etcd_cluster="b",namespace="ns",role="voter"} 1
quorate_member_healthy{etcd_cluster="b",member="b-0",namespace="ns"} 0
`
	cOnly := `
quorate_reconcile_outcomes_total{etcd_cluster="c",namespace="ns",outcome="Error"} 1
`
	compare(t, "three clusters", c, a+aCounts+b+cOnly)

	// a-3 leaves, the alarm and the certificate go: their series go with them.
	c.Set("ns", "a", Cluster{Available: true, Members: []Member{{Name: "a-0", Healthy: true}, {Name: "a-1", Healthy: true}, {Name: "a-2", Healthy: true}}})
	a2 := `
quorate_cluster_alarm{alarm="CORRUPT",etcd_cluster="a",namespace="ns"} 0
quorate_cluster_alarm{alarm="NOSPACE",etcd_cluster="a",namespace="ns"} 0
quorate_cluster_available{etcd_cluster="a",namespace="ns"} 1
quorate_cluster_healthy_voters{etcd_cluster="a",namespace="ns"} 3
quorate_cluster_members{etcd_cluster="a",namespace="ns",role="learner"} 0
quorate_cluster_members{etcd_cluster="a",namespace="ns",role="voter"} 3
quorate_member_healthy{etcd_cluster="a",member="a-0",namespace="ns"} 1
quorate_member_healthy{etcd_cluster="a",member="a-1",namespace="ns"} 1
quorate_member_healthy{etcd_cluster="a",member="a-2",namespace="ns"} 1
`
	compare(t, "a member and the alarm gone", c, a2+aCounts+b+cOnly)

	c.Forget("ns", "a")
	c.Forget("ns", "c")
	compare(t, "a and c forgotten", c, b)
}

// Every series a scrape makes has its label pairs sorted by name, whatever ClusterLabel is:
// client_golang copies and sorts the pairs of a series that has them out of order, the
// allocations the shared pairs are there to avoid.
// A member the consistency check found divergent has its series while it is, and checks count
// by result.
func TestDivergentMembers(t *testing.T) {
	c := NewClusterCollector()
	c.SetDivergent("ns", "a", nil) // no series made for a cluster without any
	compare(t, "nothing divergent", c, "")
	c.SetDivergent("ns", "a", []string{"a-1"})
	c.add("ns", "a", descConsistencyChecks, "result", "divergent")
	compare(t, "a-1 divergent", c, `
quorate_member_divergent{etcd_cluster="a",member="a-1",namespace="ns"} 1
quorate_consistency_checks_total{etcd_cluster="a",namespace="ns",result="divergent"} 1
`)
	c.SetDivergent("ns", "a", nil)
	c.add("ns", "a", descConsistencyChecks, "result", "consistent")
	compare(t, "a-1 replaced", c, `
quorate_consistency_checks_total{etcd_cluster="a",namespace="ns",result="consistent"} 1
quorate_consistency_checks_total{etcd_cluster="a",namespace="ns",result="divergent"} 1
`)
}

func TestClusterSeriesLabelsSorted(t *testing.T) {
	c := NewClusterCollector()
	c.Set("ns", "a", Cluster{Available: true, Alarms: []string{"NOSPACE"}, FirstExpirySecret: "a-ca", FirstExpiry: time.Unix(1900000000, 0),
		Members: []Member{{Name: "a-0", Healthy: true}, {Name: "a-1", Learner: true}}})
	c.add("ns", "a", descReconcileOutcomes, "outcome", "None")
	c.add("ns", "a", descMembershipChanges, "change", "promote")
	c.add("ns", "a", descClusterIDMismatches, "", "")
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	n := 0
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range d.GetLabel() {
			names = append(names, p.GetName())
		}
		if !slices.IsSorted(names) || !slices.Contains(names, ClusterLabel) || !slices.Contains(names, "namespace") {
			t.Errorf("%s: labels %v, want them sorted, with %s and namespace", m.Desc(), names, ClusterLabel)
		}
		n++
	}
	if n < 10 {
		t.Errorf("only %d series collected", n)
	}
}

// compare checks the collector's whole exposition against want: its samples, one per line, in
// any order (each family's HELP and TYPE lines are added here from its description).
func compare(t *testing.T, step string, c *ClusterCollector, want string) {
	t.Helper()
	byFamily := map[string][]string{}
	var order []string
	for _, l := range strings.Split(strings.TrimSpace(want), "\n") {
		if l == "" {
			continue
		}
		name := l[:strings.IndexAny(l, "{ ")]
		if _, ok := byFamily[name]; !ok {
			order = append(order, name)
		}
		byFamily[name] = append(byFamily[name], l)
	}
	help := map[string]string{}
	descs := make(chan *prometheus.Desc, 16)
	c.Describe(descs)
	close(descs)
	for d := range descs {
		name, h := testsupport.DescName(d)
		typ := "gauge"
		if strings.HasSuffix(name, "_total") {
			typ = "counter"
		}
		help[name] = "# HELP " + name + " " + h + "\n# TYPE " + name + " " + typ + "\n"
	}
	var text strings.Builder
	for _, name := range order {
		text.WriteString(help[name] + strings.Join(byFamily[name], "\n") + "\n")
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(text.String())); err != nil {
		t.Errorf("%s: %v", step, err)
	}
}

// A scrape of 1000 clusters of three members, each with two reconcile outcomes counted,
// through a registry as the operator's endpoint gathers it: B/op is what one scrape
// allocates (make bench-scale runs the operator at 5000).
func BenchmarkClusterCollectorGather(b *testing.B) {
	c := NewClusterCollector()
	for i := range 1000 {
		name := fmt.Sprintf("c%d", i)
		c.Set("ns", name, Cluster{Available: true, FirstExpirySecret: name + "-ca", FirstExpiry: time.Unix(1900000000, 0),
			Members: []Member{{Name: name + "-0", Healthy: true}, {Name: name + "-1", Healthy: true}, {Name: name + "-2", Healthy: true}}})
		c.add("ns", name, descReconcileOutcomes, "outcome", "None")
		c.add("ns", name, descReconcileOutcomes, "outcome", "Wait")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// A hibernated cluster has quorate_cluster_hibernated while it hibernates, is hibernated or
// wakes, and not otherwise: the alerts on availability and health leave it out by it.
func TestHibernatedCluster(t *testing.T) {
	c := NewClusterCollector()
	c.Set("ns", "a", Cluster{Hibernated: true, Members: []Member{{Name: "a-0"}}})
	compare(t, "hibernated", c, `
quorate_cluster_alarm{alarm="CORRUPT",etcd_cluster="a",namespace="ns"} 0
quorate_cluster_alarm{alarm="NOSPACE",etcd_cluster="a",namespace="ns"} 0
quorate_cluster_available{etcd_cluster="a",namespace="ns"} 0
quorate_cluster_healthy_voters{etcd_cluster="a",namespace="ns"} 0
quorate_cluster_members{etcd_cluster="a",namespace="ns",role="learner"} 0
quorate_cluster_members{etcd_cluster="a",namespace="ns",role="voter"} 1
quorate_member_healthy{etcd_cluster="a",member="a-0",namespace="ns"} 0
quorate_cluster_hibernated{etcd_cluster="a",namespace="ns"} 1
`)
	c.Set("ns", "a", Cluster{Available: true, Members: []Member{{Name: "a-0", Healthy: true}}})
	compare(t, "awake", c, `
quorate_cluster_alarm{alarm="CORRUPT",etcd_cluster="a",namespace="ns"} 0
quorate_cluster_alarm{alarm="NOSPACE",etcd_cluster="a",namespace="ns"} 0
quorate_cluster_available{etcd_cluster="a",namespace="ns"} 1
quorate_cluster_healthy_voters{etcd_cluster="a",namespace="ns"} 1
quorate_cluster_members{etcd_cluster="a",namespace="ns",role="learner"} 0
quorate_cluster_members{etcd_cluster="a",namespace="ns",role="voter"} 1
quorate_member_healthy{etcd_cluster="a",member="a-0",namespace="ns"} 1
`)
}

// A fenced member has quorate_member_fenced beside its quorate_member_healthy 0, which the
// member alert leaves out by it; unfenced, the series is gone.
func TestFencedMember(t *testing.T) {
	c := NewClusterCollector()
	c.Set("ns", "a", Cluster{Available: true, Members: []Member{{Name: "a-0", Healthy: true}, {Name: "a-1", Fenced: true}}})
	compare(t, "fenced", c, `
quorate_cluster_alarm{alarm="CORRUPT",etcd_cluster="a",namespace="ns"} 0
quorate_cluster_alarm{alarm="NOSPACE",etcd_cluster="a",namespace="ns"} 0
quorate_cluster_available{etcd_cluster="a",namespace="ns"} 1
quorate_cluster_healthy_voters{etcd_cluster="a",namespace="ns"} 1
quorate_cluster_members{etcd_cluster="a",namespace="ns",role="learner"} 0
quorate_cluster_members{etcd_cluster="a",namespace="ns",role="voter"} 2
quorate_member_healthy{etcd_cluster="a",member="a-0",namespace="ns"} 1
quorate_member_healthy{etcd_cluster="a",member="a-1",namespace="ns"} 0
quorate_member_fenced{etcd_cluster="a",member="a-1",namespace="ns"} 1
`)
	c.Set("ns", "a", Cluster{Available: true, Members: []Member{{Name: "a-0", Healthy: true}, {Name: "a-1", Healthy: true}}})
	compare(t, "unfenced", c, `
quorate_cluster_alarm{alarm="CORRUPT",etcd_cluster="a",namespace="ns"} 0
quorate_cluster_alarm{alarm="NOSPACE",etcd_cluster="a",namespace="ns"} 0
quorate_cluster_available{etcd_cluster="a",namespace="ns"} 1
quorate_cluster_healthy_voters{etcd_cluster="a",namespace="ns"} 2
quorate_cluster_members{etcd_cluster="a",namespace="ns",role="learner"} 0
quorate_cluster_members{etcd_cluster="a",namespace="ns",role="voter"} 2
quorate_member_healthy{etcd_cluster="a",member="a-0",namespace="ns"} 1
quorate_member_healthy{etcd_cluster="a",member="a-1",namespace="ns"} 1
`)
}
