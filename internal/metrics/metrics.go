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

	// ArchiveLag is how long the oldest change a schedule's archiver saw and has not stored
	// has waited, as the operator last read it; ArchiveReporting is 1 while the operator reads
	// the archiver's report, 0 while it cannot (the pod does not run or answer).
	ArchiveLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_archive_lag_seconds",
		Help: "How long the oldest change of the cluster not yet stored in the schedule's archive has waited.",
	}, []string{"namespace", "schedule", ClusterLabel})
	ArchiveReporting = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_archive_reporting",
		Help: "1 while the operator reads the schedule's archiver's report, 0 while the archiver does not run or answer.",
	}, []string{"namespace", "schedule", ClusterLabel})
	// ArchiveLastRevision is the newest revision in a schedule's archive.
	ArchiveLastRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quorate_archive_last_revision",
		Help: "The newest revision stored in the schedule's archive.",
	}, []string{"namespace", "schedule", ClusterLabel})
)

// RecordArchive sets a schedule's archive gauges; reporting false leaves the lag and revision
// as they were last read.
func RecordArchive(namespace, schedule, cluster string, reporting bool, lag time.Duration, last int64) {
	if !reporting {
		ArchiveReporting.WithLabelValues(namespace, schedule, cluster).Set(0)
		return
	}
	ArchiveReporting.WithLabelValues(namespace, schedule, cluster).Set(1)
	ArchiveLag.WithLabelValues(namespace, schedule, cluster).Set(lag.Seconds())
	ArchiveLastRevision.WithLabelValues(namespace, schedule, cluster).Set(float64(last))
}

// ForgetArchive drops a schedule's archive series (its archive was turned off).
func ForgetArchive(namespace, schedule string) {
	labels := prometheus.Labels{"namespace": namespace, "schedule": schedule}
	for _, v := range archiveGauges() {
		v.DeletePartialMatch(labels)
	}
}

func archiveGauges() []*prometheus.GaugeVec {
	return []*prometheus.GaugeVec{ArchiveLag, ArchiveReporting, ArchiveLastRevision}
}

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
	return []prometheus.Collector{Clusters, Backups, LastBackup, LastBackupSize, DrillPassed, LastDrill, ArchiveLag, ArchiveReporting, ArchiveLastRevision}
}

func init() {
	crmetrics.Registry.MustRegister(Collectors()...)
}

// ForgetCluster drops the series of a deleted cluster.
func ForgetCluster(namespace, cluster string) {
	Clusters.Forget(namespace, cluster)
	labels := prometheus.Labels{"namespace": namespace, ClusterLabel: cluster}
	for _, v := range append([]*prometheus.GaugeVec{LastBackup, LastBackupSize, DrillPassed, LastDrill}, archiveGauges()...) {
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
	ForgetArchive(namespace, schedule)
}

// ResetForTest empties every gauge and what they remember, as a restarted operator has them.
func ResetForTest() {
	lastBackups.Lock()
	clear(lastBackups.at)
	lastBackups.Unlock()
	for _, v := range append([]*prometheus.GaugeVec{LastBackup, LastBackupSize, DrillPassed, LastDrill}, archiveGauges()...) {
		v.Reset()
	}
}
