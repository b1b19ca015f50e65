package metrics

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
	c.add("ns", "a", descReconcileOutcomes, "None")
	c.add("ns", "a", descReconcileOutcomes, "None")
	c.add("ns", "a", descReconcileOutcomes, "Error")
	c.add("ns", "a", descMembershipChanges, "promote")
	c.add("ns", "a", descClusterIDMismatches, "")
	c.add("ns", "c", descReconcileOutcomes, "Error") // counted before any status

	aCounts := `
quorate_reconcile_outcomes_total{cluster="a",namespace="ns",outcome="Error"} 1
quorate_reconcile_outcomes_total{cluster="a",namespace="ns",outcome="None"} 2
quorate_membership_changes_total{change="promote",cluster="a",namespace="ns"} 1
quorate_cluster_id_mismatches_total{cluster="a",namespace="ns"} 1
`
	a := `
quorate_cluster_alarm{alarm="CORRUPT",cluster="a",namespace="ns"} 0
quorate_cluster_alarm{alarm="NOSPACE",cluster="a",namespace="ns"} 1
quorate_cluster_available{cluster="a",namespace="ns"} 1
quorate_cluster_healthy_voters{cluster="a",namespace="ns"} 2
quorate_cluster_members{cluster="a",namespace="ns",role="learner"} 1
quorate_cluster_members{cluster="a",namespace="ns",role="voter"} 3
quorate_member_healthy{cluster="a",member="a-0",namespace="ns"} 1
quorate_member_healthy{cluster="a",member="a-1",namespace="ns"} 1
quorate_member_healthy{cluster="a",member="a-2",namespace="ns"} 0
quorate_member_healthy{cluster="a",member="a-3",namespace="ns"} 1
quorate_certificate_expiry_timestamp_seconds{cluster="a",namespace="ns",secret="a-ca"} 1.9e+09
`
	b := `
quorate_cluster_alarm{alarm="CORRUPT",cluster="b",namespace="ns"} 0
quorate_cluster_alarm{alarm="NOSPACE",cluster="b",namespace="ns"} 0
quorate_cluster_available{cluster="b",namespace="ns"} 0
quorate_cluster_healthy_voters{cluster="b",namespace="ns"} 0
quorate_cluster_members{cluster="b",namespace="ns",role="learner"} 0
quorate_cluster_members{cluster="b",namespace="ns",role="voter"} 1
quorate_member_healthy{cluster="b",member="b-0",namespace="ns"} 0
`
	cOnly := `
quorate_reconcile_outcomes_total{cluster="c",namespace="ns",outcome="Error"} 1
`
	compare(t, "three clusters", c, a+aCounts+b+cOnly)

	// a-3 leaves, the alarm and the certificate go: their series go with them.
	c.Set("ns", "a", Cluster{Available: true, Members: []Member{{Name: "a-0", Healthy: true}, {Name: "a-1", Healthy: true}, {Name: "a-2", Healthy: true}}})
	a2 := `
quorate_cluster_alarm{alarm="CORRUPT",cluster="a",namespace="ns"} 0
quorate_cluster_alarm{alarm="NOSPACE",cluster="a",namespace="ns"} 0
quorate_cluster_available{cluster="a",namespace="ns"} 1
quorate_cluster_healthy_voters{cluster="a",namespace="ns"} 3
quorate_cluster_members{cluster="a",namespace="ns",role="learner"} 0
quorate_cluster_members{cluster="a",namespace="ns",role="voter"} 3
quorate_member_healthy{cluster="a",member="a-0",namespace="ns"} 1
quorate_member_healthy{cluster="a",member="a-1",namespace="ns"} 1
quorate_member_healthy{cluster="a",member="a-2",namespace="ns"} 1
`
	compare(t, "a member and the alarm gone", c, a2+aCounts+b+cOnly)

	c.Forget("ns", "a")
	c.Forget("ns", "c")
	compare(t, "a and c forgotten", c, b)
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
	re := regexp.MustCompile(`fqName: "([^"]+)", help: "([^"]+)"`)
	for d := range descs {
		m := re.FindStringSubmatch(d.String())
		typ := "gauge"
		if strings.HasSuffix(m[1], "_total") {
			typ = "counter"
		}
		help[m[1]] = "# HELP " + m[1] + " " + m[2] + "\n# TYPE " + m[1] + " " + typ + "\n"
	}
	var text strings.Builder
	for _, name := range order {
		text.WriteString(help[name] + strings.Join(byFamily[name], "\n") + "\n")
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(text.String())); err != nil {
		t.Errorf("%s: %v", step, err)
	}
}
