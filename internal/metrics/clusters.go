package metrics

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

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
	// Hibernated: the cluster hibernates, is hibernated or wakes (spec.hibernate): its outage
	// was asked for, and the alerts on availability and health leave it out.
	Hibernated bool
}

// Member is one member's health and role.
type Member struct {
	Name             string
	Healthy, Learner bool
	// Fenced: stopped at the user's request (the etcd.quorate.dev/fence-members annotation).
	Fenced bool
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
	descMemberDivergent = clusterDesc("quorate_member_divergent",
		"1 while the operator's last consistency check found the member's data differ from the majority's (it is being replaced); absent otherwise.", "member")
	descConsistencyChecks = clusterDesc("quorate_consistency_checks_total",
		"Comparisons of the voters' data (HashKV at one revision) by result: consistent, divergent (a member differs from the majority), no_majority, inconclusive (no verdict, tried again).", "result")
	descMemberFenced = clusterDesc("quorate_member_fenced",
		"1 while the member is fenced at the user's request (its etcd stopped, its pod kept): its ill health was asked for; absent otherwise.", "member")
	descHibernated = clusterDesc("quorate_cluster_hibernated",
		"1 while the cluster hibernates, is hibernated or wakes (spec.hibernate): its outage was asked for; absent otherwise.")
	descClusterIDMismatches = clusterDesc("quorate_cluster_id_mismatches_total",
		"Times a member was found to belong to another etcd cluster than the recorded one (membership changes stop).")
)

// clusterDesc describes a family of per-cluster series: labels namespace, ClusterLabel and the
// given ones.
func clusterDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append([]string{"namespace", ClusterLabel}, labels...), nil)
}

// ClusterCollector exports the series of every EtcdCluster from one small record per cluster,
// made into series at each scrape. A GaugeVec or CounterVec keeps each series with its label
// values and label pairs, about 400 bytes, and a cluster has a dozen: at 5000 clusters that
// was 25 MB of the operator's heap held between scrapes (make bench-scale,
// docs/reports/scale-rounds.md). A cluster's series go with it (Forget).
//
// A scrape makes its series without building label pairs again: a cluster's namespace and
// name pairs are made once with its record, the pairs of fixed values (roles, alarms,
// outcomes, changes) once for the process, and the series share them (client_golang treats a
// written metric's label pairs as immutable). Series made by prometheus.MustNewConstMetric
// each had their own pairs, 35 MB at 5000 clusters for every scrape.
type ClusterCollector struct {
	mu       sync.Mutex
	clusters map[clusterKey]*clusterRecord
	fixed    map[fixedLabel]*dto.LabelPair // label pairs of fixed values, by name and value
}

type clusterKey struct{ namespace, name string }

// fixedLabel is a label of the fixed vocabulary the operator writes: a role, an alarm, an
// outcome, a change.
type fixedLabel struct{ name, value string }

type clusterRecord struct {
	status *Cluster // nil until the first SetCluster; replaced whole, never changed
	// divergent are the members the last consistency check found divergent (SetDivergent).
	divergent []string
	base      []*dto.LabelPair // ClusterLabel and namespace, sorted by name
	counts    []count
}

// count is one counter series of a cluster: its family, the pair of the family's third label
// (nil for a family with none) and its value.
type count struct {
	desc  *prometheus.Desc
	label *dto.LabelPair
	n     float64
}

// NewClusterCollector returns an empty collector.
func NewClusterCollector() *ClusterCollector {
	return &ClusterCollector{clusters: map[clusterKey]*clusterRecord{}, fixed: map[fixedLabel]*dto.LabelPair{}}
}

func (c *ClusterCollector) record(namespace, name string) *clusterRecord {
	k := clusterKey{namespace, name}
	r := c.clusters[k]
	if r == nil {
		r = &clusterRecord{base: sortedPairs(pair(ClusterLabel, name), pair("namespace", namespace))}
		c.clusters[k] = r
	}
	return r
}

// sortedPairs are the pairs sorted by name, as client_golang wants a metric's pairs (withLabel
// keeps them so): the order does not hang on what ClusterLabel is.
func sortedPairs(pairs ...*dto.LabelPair) []*dto.LabelPair {
	slices.SortFunc(pairs, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	return pairs
}

// pair is a new label pair.
func pair(name, value string) *dto.LabelPair { return &dto.LabelPair{Name: &name, Value: &value} }

// fixedPair is the process's one pair of a fixed label value. Called with c.mu held.
func (c *ClusterCollector) fixedPair(name, value string) *dto.LabelPair {
	k := fixedLabel{name, value}
	p := c.fixed[k]
	if p == nil {
		p = pair(name, value)
		c.fixed[k] = p
	}
	return p
}

// Set replaces what is exported of the cluster's status. The collector keeps s as it is:
// the caller must not change s.Members or s.Alarms afterwards.
func (c *ClusterCollector) Set(namespace, name string, s Cluster) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(namespace, name).status = &s
}

// add counts one more in the cluster's counter series of desc and, for a family with a
// third label, that label's value.
func (c *ClusterCollector) add(namespace, name string, desc *prometheus.Desc, label, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.record(namespace, name)
	var p *dto.LabelPair
	if label != "" {
		p = c.fixedPair(label, value)
	}
	for i := range r.counts {
		if r.counts[i].desc == desc && r.counts[i].label == p {
			r.counts[i].n++
			return
		}
	}
	r.counts = append(r.counts, count{desc: desc, label: p, n: 1})
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
		descReconcileOutcomes, descMembershipChanges, descClusterIDMismatches, descMemberDivergent, descConsistencyChecks, descHibernated, descMemberFenced} {
		ch <- d
	}
}

// Collect sends every cluster's series. They are made under the lock and sent after it, so a
// slow scrape does not hold up a reconcile; what they point to (a record's pairs and
// status, the fixed pairs) is never changed.
func (c *ClusterCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	out := make([]series, 0, len(c.clusters)*12)
	for _, r := range c.clusters {
		out = c.series(r, out)
	}
	c.mu.Unlock()
	for i := range out {
		ch <- &out[i]
	}
}

// series appends the record's series to out. Called with c.mu held.
func (c *ClusterCollector) series(r *clusterRecord, out []series) []series {
	gauge := func(d *prometheus.Desc, v float64, extra *dto.LabelPair) {
		out = append(out, series{desc: d, gauge: true, value: v, labels: withLabel(r.base, extra)})
	}
	if s := r.status; s != nil {
		gauge(descAvailable, boolFloat(s.Available), nil)
		voters, learners, healthyVoters := 0, 0, 0
		for i, m := range s.Members {
			switch {
			case m.Learner:
				learners++
			case m.Healthy:
				voters++
				healthyVoters++
			default:
				voters++
			}
			gauge(descMemberHealthy, boolFloat(m.Healthy), &dto.LabelPair{Name: &labelMember, Value: &s.Members[i].Name})
			if m.Fenced {
				gauge(descMemberFenced, 1, &dto.LabelPair{Name: &labelMember, Value: &s.Members[i].Name})
			}
		}
		gauge(descMembers, float64(voters), c.fixedPair("role", "voter"))
		gauge(descMembers, float64(learners), c.fixedPair("role", "learner"))
		gauge(descHealthyVoters, float64(healthyVoters), nil)
		for _, a := range alarmKinds {
			gauge(descAlarm, boolFloat(slices.Contains(s.Alarms, a)), c.fixedPair("alarm", a))
		}
		if s.Hibernated {
			gauge(descHibernated, 1, nil)
		}
		if s.FirstExpirySecret != "" {
			gauge(descCertificateExpiry, float64(s.FirstExpiry.Unix()), &dto.LabelPair{Name: &labelSecret, Value: &s.FirstExpirySecret})
		}
	}
	for i := range r.divergent {
		gauge(descMemberDivergent, 1, &dto.LabelPair{Name: &labelMember, Value: &r.divergent[i]})
	}
	for _, n := range r.counts {
		out = append(out, series{desc: n.desc, value: n.n, labels: withLabel(r.base, n.label)})
	}
	return out
}

// Label names of the pairs a scrape makes from a cluster's status.
var labelMember, labelSecret = "member", "secret"

// withLabel is base (sorted pairs) with extra in its sorted place; base itself when extra is
// nil. client_golang wants a metric's pairs sorted by name, or copies them to sort them.
func withLabel(base []*dto.LabelPair, extra *dto.LabelPair) []*dto.LabelPair {
	if extra == nil {
		return base
	}
	out := make([]*dto.LabelPair, 0, len(base)+1)
	i := 0
	for i < len(base) && base[i].GetName() < extra.GetName() {
		i++
	}
	out = append(out, base[:i]...)
	out = append(out, extra)
	return append(out, base[i:]...)
}

// series is one per-cluster series of a scrape.
type series struct {
	desc   *prometheus.Desc
	gauge  bool // a gauge, or else a counter
	value  float64
	labels []*dto.LabelPair
}

func (s *series) Desc() *prometheus.Desc { return s.desc }

// Write fills m with the series' label pairs, shared and not copied, and its value.
func (s *series) Write(m *dto.Metric) error {
	m.Label = s.labels
	if s.gauge {
		m.Gauge = &dto.Gauge{Value: &s.value}
	} else {
		m.Counter = &dto.Counter{Value: &s.value}
	}
	return nil
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
	Clusters.add(namespace, name, descReconcileOutcomes, "outcome", outcome)
}

// CountMembershipChange counts a membership change the operator made (add_learner, promote,
// remove, move_leader, disarm, defragment).
func CountMembershipChange(namespace, name, change string) {
	Clusters.add(namespace, name, descMembershipChanges, "change", change)
}

// CountClusterIDMismatch counts a member found to belong to another etcd cluster.
func CountClusterIDMismatch(namespace, name string) {
	Clusters.add(namespace, name, descClusterIDMismatches, "", "")
}

// SetDivergent replaces the members the last consistency check found divergent. The
// collector keeps members: the caller must not change it afterwards.
func (c *ClusterCollector) SetDivergent(namespace, name string, members []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.clusters[clusterKey{namespace, name}]; !ok && len(members) == 0 {
		return
	}
	c.record(namespace, name).divergent = members
}

// SetDivergent replaces the members the last consistency check found divergent in the
// cluster.
func SetDivergent(namespace, name string, members []string) {
	Clusters.SetDivergent(namespace, name, members)
}

// CountConsistencyCheck counts a comparison of the cluster's voters' data by its result
// (planner.Outcome).
func CountConsistencyCheck(namespace, name, result string) {
	Clusters.add(namespace, name, descConsistencyChecks, "result", result)
}
