// Package metrics defines Quorate's own Prometheus metrics, registered with controller-runtime's
// registry so they are served beside the controller-runtime metrics.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// ReconcileOutcomes counts reconcile passes by the step they took (planner action kind, or
	// "Error").
	ReconcileOutcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "quorate_reconcile_outcomes_total",
		Help: "Reconcile passes of EtcdClusters by outcome: the step taken (None, Wait, Halt, AddLearner, ...) or Error.",
	}, []string{"namespace", "cluster", "outcome"})

	// MembershipChanges counts etcd membership changes.
	MembershipChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "quorate_membership_changes_total",
		Help: "etcd membership changes made by the operator, by change (add_learner, promote, remove, move_leader).",
	}, []string{"namespace", "cluster", "change"})

	// MemberHealthy is 1 for a healthy member, 0 otherwise.
	MemberHealthy = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_member_healthy",
		Help: "1 when the member answers, follows a leader and belongs to the recorded cluster; 0 otherwise.",
	}, []string{"namespace", "cluster", "member"})

	// ClusterIDMismatches counts the times a member was found reporting a foreign cluster ID.
	ClusterIDMismatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "quorate_cluster_id_mismatches_total",
		Help: "Times a member was found to belong to another etcd cluster than the recorded one (membership changes stop).",
	}, []string{"namespace", "cluster"})

	// ClusterAvailable is 1 while the cluster has quorum.
	ClusterAvailable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_cluster_available",
		Help: "1 while the cluster has a leader and a healthy quorum of voting members.",
	}, []string{"namespace", "cluster"})

	// ClusterAlarms is 1 for each alarm etcd has raised in the cluster.
	ClusterAlarms = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_cluster_alarm",
		Help: "1 while etcd has raised the alarm (NOSPACE, CORRUPT) in the cluster, 0 once it is cleared.",
	}, []string{"namespace", "cluster", "alarm"})

	// ClusterMembers is the number of members by role.
	ClusterMembers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_cluster_members",
		Help: "etcd members of the cluster by role (voter, learner).",
	}, []string{"namespace", "cluster", "role"})

	// HealthyVoters is the number of voting members that are healthy.
	HealthyVoters = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_cluster_healthy_voters",
		Help: "Voting members that answer, follow a leader and belong to the recorded cluster; quorum is lost below floor(voters/2)+1.",
	}, []string{"namespace", "cluster"})

	// CertificateExpiry is when the cluster's first certificate to expire does, labelled with
	// the Secret that holds it: one series per cluster (SetCertificateExpiry).
	CertificateExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_certificate_expiry_timestamp_seconds",
		Help: "When the cluster's first certificate to expire does (Unix seconds), and the TLS Secret that holds it (tls.crt for server, peer and client certificates, ca.crt for CAs).",
	}, []string{"namespace", "cluster", "secret"})

	// Backups counts finished backups by result.
	Backups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "quorate_backups_total",
		Help: "Finished EtcdBackups of a cluster by result (completed: stored and verified; failed).",
	}, []string{"namespace", "cluster", "result"})

	// LastBackup is when a cluster's newest backup completed.
	LastBackup = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_backup_last_success_timestamp_seconds",
		Help: "When the cluster's newest backup was stored and verified (Unix seconds).",
	}, []string{"namespace", "cluster"})

	// LastBackupSize is the size of a cluster's newest backup.
	LastBackupSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_backup_last_size_bytes",
		Help: "Size of the cluster's newest stored snapshot in bytes.",
	}, []string{"namespace", "cluster"})

	// DrillPassed is 1 when a schedule's last restore drill found the keyspace its backup
	// recorded, 0 when it did not.
	DrillPassed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_restore_drill_passed",
		Help: "1 when the schedule's last restore drill restored its backup and found the keyspace the backup recorded; 0 when it failed.",
	}, []string{"namespace", "schedule", "cluster"})

	// LastDrill is when a schedule's last restore drill ended.
	LastDrill = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_restore_drill_last_timestamp_seconds",
		Help: "When the schedule's last restore drill ended (Unix seconds).",
	}, []string{"namespace", "schedule", "cluster"})
)

// expirySeries is which Secret each cluster's CertificateExpiry series names.
var expirySeries = struct {
	sync.Mutex
	secret map[[2]string]string
}{secret: map[[2]string]string{}}

// SetCertificateExpiry exports when the cluster's first certificate to expire does, held in
// Secret secret; secret "" (no certificate) removes the series. A series per Secret would
// be nine per cluster, most of the metrics' memory at thousands of clusters (make
// bench-scale); the alerts need the first alone, which status.tls.firstExpiry names too.
func SetCertificateExpiry(namespace, cluster, secret string, at time.Time) {
	expirySeries.Lock()
	defer expirySeries.Unlock()
	k := [2]string{namespace, cluster}
	if old, ok := expirySeries.secret[k]; ok && old != secret {
		CertificateExpiry.DeleteLabelValues(namespace, cluster, old)
		delete(expirySeries.secret, k)
	}
	if secret == "" {
		return
	}
	expirySeries.secret[k] = secret
	CertificateExpiry.WithLabelValues(namespace, cluster, secret).Set(float64(at.Unix()))
}

// RecordBackup counts a finished backup, and for a completed one records its time and size.
func RecordBackup(namespace, cluster string, completed bool, size int64, at time.Time) {
	if !completed {
		Backups.WithLabelValues(namespace, cluster, "failed").Inc()
		return
	}
	Backups.WithLabelValues(namespace, cluster, "completed").Inc()
	LastBackup.WithLabelValues(namespace, cluster).Set(float64(at.Unix()))
	LastBackupSize.WithLabelValues(namespace, cluster).Set(float64(size))
}

// RecordDrill records a restore drill's outcome.
func RecordDrill(namespace, schedule, cluster string, passed bool, at time.Time) {
	v := 0.0
	if passed {
		v = 1
	}
	DrillPassed.WithLabelValues(namespace, schedule, cluster).Set(v)
	LastDrill.WithLabelValues(namespace, schedule, cluster).Set(float64(at.Unix()))
}

// Collectors are every metric of this package.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{ReconcileOutcomes, MembershipChanges, MemberHealthy, ClusterIDMismatches, ClusterAvailable, ClusterMembers, ClusterAlarms, CertificateExpiry, HealthyVoters,
		Backups, LastBackup, LastBackupSize, DrillPassed, LastDrill}
}

func init() {
	crmetrics.Registry.MustRegister(Collectors()...)
}

// ForgetCluster drops the series of a deleted cluster.
func ForgetCluster(namespace, cluster string) {
	SetCertificateExpiry(namespace, cluster, "", time.Time{})
	labels := prometheus.Labels{"namespace": namespace, "cluster": cluster}
	for _, v := range []*prometheus.GaugeVec{MemberHealthy, ClusterAvailable, ClusterMembers, ClusterAlarms, CertificateExpiry, HealthyVoters, LastBackup, LastBackupSize, DrillPassed, LastDrill} {
		v.DeletePartialMatch(labels)
	}
	for _, v := range []*prometheus.CounterVec{ReconcileOutcomes, MembershipChanges, ClusterIDMismatches, Backups} {
		v.DeletePartialMatch(labels)
	}
}
