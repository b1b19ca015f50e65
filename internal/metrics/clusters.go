package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quorate-dev/quorate/internal/planner"
)

// Cluster is what the operator exports of one EtcdCluster's status, set whole after each pass
// (SetCluster). The series are made from it at each scrape.
type Cluster struct {
	// Available: the cluster has a leader and a healthy quorum of voters.
	Available bool
	// Members are the cluster's members as status lists them.
	Members []Member
	// Alarms are the alarms etcd has raised (planner.AlarmNoSpace, planner.AlarmCorrupt).
	Alarms []string
	// FirstExpirySecret is the Secret that holds the cluster's first certificate to expire
	// ("" for none: TLS off, or not read yet), and FirstExpiry when it expires.
	FirstExpirySecret string
	FirstExpiry       time.Time
}

// Member is one member's health and role.
type Member struct {
	Name             string
	Healthy, Learner bool
}

// alarmKinds are the alarms exported for every cluster, 1 while raised and 0 otherwise.
var alarmKinds = []string{planner.AlarmNoSpace, planner.AlarmCorrupt}

var (
	descAvailable = clusterDesc("quorate_cluster_available",
		"1 while the cluster has a leader and a healthy quorum of voting members.")
	descMemberHealthy = clusterDesc("quorate_member_healthy",
		"1 when the member answers, follows a leader and belongs to the recorded cluster; 0 otherwise.", "member")
	descAlarm = clusterDesc("quorate_cluster_alarm",
		"1 while etcd has raised the alarm (NOSPACE, CORRUPT) in the cluster, 0 once it is cleared.", "alarm")
	descMembers = clusterDesc("quorate_cluster_members",
		"etcd members of the cluster by role (voter, learner).", "role")
	descHealthyVoters = clusterDesc("quorate_cluster_healthy_voters",
		"Voting members that answer, follow a leader and belong to the recorded cluster; quorum is lost below floor(voters/2)+1.")
	descCertificateExpiry = clusterDesc("quorate_certificate_expiry_timestamp_seconds",
		"When the cluster's first certificate to expire does (Unix seconds), and the TLS Secret that holds it (tls.crt for server, peer and client certificates, ca.crt for CAs).", "secret")
	descReconcileOutcomes = clusterDesc("quorate_reconcile_outcomes_total",
		"Reconcile passes of EtcdClusters by outcome: the step taken (None, Wait, Halt, AddLearner, ...) or Error.", "outcome")
	descMembershipChanges = clusterDesc("quorate_membership_changes_total",
		"etcd membership changes made by the operator, by change (add_learner, promote, remove, move_leader).", "change")
	descClusterIDMismatches = clusterDesc("quorate_cluster_id_mismatches_total",
		"Times a member was found to belong to another etcd cluster than the recorded one (membership changes stop).")
)

// clusterDesc describes a family of per-cluster series: labels namespace, cluster and the
// given ones.
func clusterDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append([]string{"namespace", "cluster"}, labels...), nil)
}

// ClusterCollector exports the series of every EtcdCluster from one small record per cluster,
// made into series at each scrape. A GaugeVec or CounterVec keeps each series with its label
// values and label pairs, about 400 bytes, and a cluster has a dozen: at 5000 clusters that
// was 25 MB of the operator's heap held between scrapes (make bench-scale,
// docs/measurements.md). A cluster's series go with it (Forget).
type ClusterCollector struct {
	mu       sync.Mutex
	clusters map[clusterKey]*clusterRecord
}

type clusterKey struct{ namespace, name string }

type clusterRecord struct {
	status *Cluster // nil until the first SetCluster
	counts []count
}

// count is one counter series of a cluster: its family and the value of the family's third
// label ("" for a family with none).
type count struct {
	desc  *prometheus.Desc
	label string
	n     float64
}

// NewClusterCollector returns an empty collector.
func NewClusterCollector() *ClusterCollector {
	return &ClusterCollector{clusters: map[clusterKey]*clusterRecord{}}
}

func (c *ClusterCollector) record(namespace, name string) *clusterRecord {
	k := clusterKey{namespace, name}
	r := c.clusters[k]
	if r == nil {
		r = &clusterRecord{}
		c.clusters[k] = r
	}
	return r
}

// Set replaces what is exported of the cluster's status.
func (c *ClusterCollector) Set(namespace, name string, s Cluster) {
	s.Members = append([]Member(nil), s.Members...)
	s.Alarms = append([]string(nil), s.Alarms...)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(namespace, name).status = &s
}

// add counts one more in the cluster's counter series of desc and label.
func (c *ClusterCollector) add(namespace, name string, desc *prometheus.Desc, label string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.record(namespace, name)
	for i := range r.counts {
		if r.counts[i].desc == desc && r.counts[i].label == label {
			r.counts[i].n++
			return
		}
	}
	r.counts = append(r.counts, count{desc: desc, label: label, n: 1})
}

// Forget drops the cluster's series.
func (c *ClusterCollector) Forget(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.clusters, clusterKey{namespace, name})
}

// Describe sends the descriptions of every family the collector exports.
func (c *ClusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAvailable, descMemberHealthy, descAlarm, descMembers, descHealthyVoters, descCertificateExpiry,
		descReconcileOutcomes, descMembershipChanges, descClusterIDMismatches} {
		ch <- d
	}
}

// Collect sends every cluster's series. They are made under the lock and sent after it, so a
// slow scrape does not hold up a reconcile.
func (c *ClusterCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	var out []prometheus.Metric
	for k, r := range c.clusters {
		out = r.series(k, out)
	}
	c.mu.Unlock()
	for _, m := range out {
		ch <- m
	}
}

// series appends the cluster's series to out.
func (r *clusterRecord) series(k clusterKey, out []prometheus.Metric) []prometheus.Metric {
	gauge := func(d *prometheus.Desc, v float64, label ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{k.namespace, k.name}, label...)...))
	}
	if s := r.status; s != nil {
		gauge(descAvailable, boolFloat(s.Available))
		voters, learners, healthyVoters := 0, 0, 0
		for _, m := range s.Members {
			switch {
			case m.Learner:
				learners++
			case m.Healthy:
				voters++
				healthyVoters++
			default:
				voters++
			}
			gauge(descMemberHealthy, boolFloat(m.Healthy), m.Name)
		}
		gauge(descMembers, float64(voters), "voter")
		gauge(descMembers, float64(learners), "learner")
		gauge(descHealthyVoters, float64(healthyVoters))
		for _, a := range alarmKinds {
			raised := false
			for _, b := range s.Alarms {
				raised = raised || a == b
			}
			gauge(descAlarm, boolFloat(raised), a)
		}
		if s.FirstExpirySecret != "" {
			gauge(descCertificateExpiry, float64(s.FirstExpiry.Unix()), s.FirstExpirySecret)
		}
	}
	for _, n := range r.counts {
		labels := []string{k.namespace, k.name}
		if n.label != "" {
			labels = append(labels, n.label)
		}
		out = append(out, prometheus.MustNewConstMetric(n.desc, prometheus.CounterValue, n.n, labels...))
	}
	return out
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Clusters is the operator's collector of per-cluster series, registered with the manager's
// registry.
var Clusters = NewClusterCollector()

// SetCluster replaces what is exported of the cluster's status.
func SetCluster(namespace, name string, s Cluster) { Clusters.Set(namespace, name, s) }

// CountReconcile counts a reconcile pass of the cluster by its outcome: the step it took
// (planner action kind) or "Error".
func CountReconcile(namespace, name, outcome string) {
	Clusters.add(namespace, name, descReconcileOutcomes, outcome)
}

// CountMembershipChange counts a membership change the operator made (add_learner, promote,
// remove, move_leader, disarm, defragment).
func CountMembershipChange(namespace, name, change string) {
	Clusters.add(namespace, name, descMembershipChanges, change)
}

// CountClusterIDMismatch counts a member found to belong to another etcd cluster.
func CountClusterIDMismatch(namespace, name string) {
	Clusters.add(namespace, name, descClusterIDMismatches, "")
}
