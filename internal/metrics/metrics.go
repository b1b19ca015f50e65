// Package metrics defines Quorate's own Prometheus metrics, registered with controller-runtime's
// registry so they are served beside the controller-runtime metrics.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ClusterLabel names the EtcdCluster a series belongs to, in the operator's series and in the
// members' own (the PodMonitor in config/prometheus copies it from the member pods' label). It is
// not "cluster": Prometheus setups that gather several Kubernetes clusters (federation, Thanos,
// remote write to a shared store) reserve that label for the Kubernetes cluster a series came
// from, and would overwrite or clash with it.
const ClusterLabel = "etcd_cluster"

var (
	// Backups counts finished backups by result.
	Backups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "quorate_backups_total",
		Help: "Finished EtcdBackups of a cluster by result (completed: stored and verified; failed).",
	}, []string{"namespace", ClusterLabel, "result"})

	// LastBackup is when a cluster's newest backup completed.
	LastBackup = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_backup_last_success_timestamp_seconds",
		Help: "When the cluster's newest backup was stored and verified (Unix seconds).",
	}, []string{"namespace", ClusterLabel})

	// LastBackupSize is the size of a cluster's newest backup.
	LastBackupSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_backup_last_size_bytes",
		Help: "Size of the cluster's newest stored snapshot in bytes.",
	}, []string{"namespace", ClusterLabel})

	// DrillPassed is 1 when a schedule's last restore drill found the keyspace its backup
	// recorded, 0 when it did not.
	DrillPassed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_restore_drill_passed",
		Help: "1 when the schedule's last restore drill restored its backup and found the keyspace the backup recorded; 0 when it failed.",
	}, []string{"namespace", "schedule", ClusterLabel})

	// LastDrill is when a schedule's last restore drill ended.
	LastDrill = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_restore_drill_last_timestamp_seconds",
		Help: "When the schedule's last restore drill ended (Unix seconds).",
	}, []string{"namespace", "schedule", ClusterLabel})
)

// lastBackups is when each cluster's newest backup the gauges show completed, so that a backup
// read back from status (RestoreLastBackup) never replaces a newer one.
var lastBackups = struct {
	sync.Mutex
	at map[[2]string]time.Time
}{at: map[[2]string]time.Time{}}

// RecordBackup counts a finished backup, and for a completed one records its time and size.
func RecordBackup(namespace, cluster string, completed bool, size int64, at time.Time) {
	if !completed {
		Backups.WithLabelValues(namespace, cluster, "failed").Inc()
		return
	}
	Backups.WithLabelValues(namespace, cluster, "completed").Inc()
	setLastBackup(namespace, cluster, size, at, true)
}

// RestoreLastBackup shows a backup that completed before the operator started (read from its
// status) in the last-backup gauges, unless they show a newer one: once every completed backup
// has been read back, in any order, the gauges are what they were before a restart or an
// upgrade, and the age alerts (QuorateBackupTooOld) are true again. It counts nothing.
func RestoreLastBackup(namespace, cluster string, size int64, at time.Time) {
	setLastBackup(namespace, cluster, size, at, false)
}

func setLastBackup(namespace, cluster string, size int64, at time.Time, always bool) {
	lastBackups.Lock()
	defer lastBackups.Unlock()
	k := [2]string{namespace, cluster}
	if prev, ok := lastBackups.at[k]; ok && !always && !at.After(prev) {
		return
	}
	lastBackups.at[k] = at
	LastBackup.WithLabelValues(namespace, cluster).Set(float64(at.Unix()))
	LastBackupSize.WithLabelValues(namespace, cluster).Set(float64(size))
}

// RecordDrill records a restore drill's outcome. The schedule's status holds the last one, and
// the schedule reconciler records it again on every pass, so the gauges outlive a restart.
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
	return []prometheus.Collector{Clusters, Backups, LastBackup, LastBackupSize, DrillPassed, LastDrill}
}

func init() {
	crmetrics.Registry.MustRegister(Collectors()...)
}

// ForgetCluster drops the series of a deleted cluster.
func ForgetCluster(namespace, cluster string) {
	Clusters.Forget(namespace, cluster)
	labels := prometheus.Labels{"namespace": namespace, ClusterLabel: cluster}
	for _, v := range []*prometheus.GaugeVec{LastBackup, LastBackupSize, DrillPassed, LastDrill} {
		v.DeletePartialMatch(labels)
	}
	Backups.DeletePartialMatch(labels)
	lastBackups.Lock()
	delete(lastBackups.at, [2]string{namespace, cluster})
	lastBackups.Unlock()
}

// ForgetSchedule drops the drill series of a deleted schedule.
func ForgetSchedule(namespace, schedule string) {
	labels := prometheus.Labels{"namespace": namespace, "schedule": schedule}
	DrillPassed.DeletePartialMatch(labels)
	LastDrill.DeletePartialMatch(labels)
}

// ResetForTest empties every gauge and what they remember, as a restarted operator has them.
func ResetForTest() {
	lastBackups.Lock()
	clear(lastBackups.at)
	lastBackups.Unlock()
	for _, v := range []*prometheus.GaugeVec{LastBackup, LastBackupSize, DrillPassed, LastDrill} {
		v.Reset()
	}
}
