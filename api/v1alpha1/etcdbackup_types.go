package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupStorage is where snapshots are stored: a bucket of an object store, as
// gocloud.dev/blob opens it, and the Secret with its credentials.
type BackupStorage struct {
	// BucketURL is the bucket, with the settings its scheme takes as query parameters:
	// s3://BUCKET?region=R (and for an S3-compatible server endpoint=http://HOST:PORT,
	// use_path_style=true), gs://BUCKET, azblob://CONTAINER, or file:///PATH (a directory the
	// backup Job's node can reach, for tests). Credentials never go here.
	// +kubebuilder:validation:MinLength=6
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^(s3|gs|azblob|file)://')",message="bucketURL must start with s3://, gs://, azblob:// or file://"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(?i)[?&](access_key|secret|password|token|credential)')",message="bucketURL must not hold credentials: put them in the Secret named by credentialsSecret"
	BucketURL string `json:"bucketURL"`

	// Prefix of the object keys in the bucket, such as "etcd/" (default: none). Snapshots are
	// stored as PREFIX<namespace>/<cluster>/<backup>.db.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Prefix string `json:"prefix,omitempty"`

	// CredentialsSecret names a Secret in the namespace with the bucket's credentials. Its
	// keys become the environment of the pods that read and write the bucket, as the bucket's
	// SDK reads it: for s3, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; for azblob,
	// AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY. For gs, put the service account's JSON key
	// under service-account.json (the pods point GOOGLE_APPLICATION_CREDENTIALS at it). The
	// operator never reads the Secret, and its values never appear in logs, Events or status.
	// Empty: the pods' own identity (workload identity, a file bucket).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`

	// CABundle names a PEM bundle of the authorities that sign the store's certificate, for a
	// store behind a private CA (an S3-compatible server on premises). The pods that read and
	// write the bucket trust these authorities besides the public ones they carry (Mozilla's
	// roots); nothing else is trusted more. The ConfigMap or Secret is in the namespace,
	// mounted read-only; the operator never reads it.
	// +optional
	CABundle *CABundleSource `json:"caBundle,omitempty"`

	// Identity runs the pods that read and write the bucket as a service account of the
	// namespace, with labels and annotations: a cloud identity without keys (AWS IRSA or EKS
	// Pod Identity, GKE or Azure workload identity), usually with no credentialsSecret. Those
	// pods are the backup Jobs and, for a restore, the cluster's bootstrap member pods, which
	// keep it for their life (a pod's service account cannot change). No Kubernetes API token
	// is mounted: the platforms' webhooks and metadata servers give the identity.
	// +optional
	Identity *StorageIdentity `json:"identity,omitempty"`
}

// StorageIdentity is who the pods that reach a bucket run as.
type StorageIdentity struct {
	// ServiceAccountName is a ServiceAccount of the namespace (default: the namespace's
	// default ServiceAccount).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="identity.serviceAccountName must be a ServiceAccount name: lowercase letters, digits, '-' and '.'"
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// Labels added to the pods, such as azure.workload.identity/use: "true". The operator's
	// own labels win.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && (!k.contains('/') || k.indexOf('/') <= 253) && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="identity.labels keys must be qualified names, as Kubernetes requires of labels: an optional DNS prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('etcd.quorate.dev/'))",message="identity.labels cannot use the etcd.quorate.dev/ prefix, which the operator reserves for its own labels"
	// +optional
	Labels map[string]LabelValue `json:"labels,omitempty"`
	// Annotations added to the pods. The operator's own annotations win.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && (!k.contains('/') || k.indexOf('/') <= 253) && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="identity.annotations keys must be qualified names, as Kubernetes requires of annotations: an optional DNS prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('etcd.quorate.dev/'))",message="identity.annotations cannot use the etcd.quorate.dev/ prefix, which the operator reserves for its own annotations"
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// CABundleSource is a key of a ConfigMap or of a Secret in the namespace that holds PEM
// certificates.
// +kubebuilder:validation:XValidation:rule="has(self.configMapKeyRef) != has(self.secretKeyRef)",message="caBundle takes exactly one of configMapKeyRef and secretKeyRef"
type CABundleSource struct {
	// ConfigMapKeyRef is a key of a ConfigMap in the namespace.
	// +optional
	ConfigMapKeyRef *KeyRef `json:"configMapKeyRef,omitempty"`
	// SecretKeyRef is a key of a Secret in the namespace.
	// +optional
	SecretKeyRef *KeyRef `json:"secretKeyRef,omitempty"`
}

// KeyRef is a key of a ConfigMap or Secret in the namespace.
type KeyRef struct {
	// Name of the ConfigMap or Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key in it, such as ca.crt.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// EtcdBackupSpec asks for one snapshot of an EtcdCluster.
type EtcdBackupSpec struct {
	// ClusterName is the EtcdCluster, in the backup's namespace, to take the snapshot of. The
	// snapshot is taken from a healthy follower, to spare the leader.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	ClusterName string `json:"clusterName"`

	// Storage is where the snapshot goes.
	Storage BackupStorage `json:"storage"`
}

// Phases of an EtcdBackup.
const (
	BackupPending   = "Pending"
	BackupRunning   = "Running"
	BackupCompleted = "Completed"
	BackupFailed    = "Failed"
)

// EtcdBackupStatus is what became of the backup. A backup is Completed only once the stored
// object was read back and verified.
type EtcdBackupStatus struct {
	// Phase: Pending, Running, Completed or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Conditions: Complete (True once stored and verified; False with the reason it failed).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// StartTime is when the backup Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the snapshot was stored and verified, or the backup failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Member the snapshot was taken from.
	// +optional
	Member string `json:"member,omitempty"`
	// Location of the snapshot: the bucket URL without its query, and the object key.
	// +optional
	Location string `json:"location,omitempty"`
	// Key of the object in the bucket.
	// +optional
	Key string `json:"key,omitempty"`
	// Revision of the snapshot: the newest revision it holds.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// Keys is the number of keys at that revision.
	// +optional
	Keys int64 `json:"keys,omitempty"`
	// KeyspaceSHA256 is a hash of every key and value at that revision, which a restore drill
	// compares with the restored cluster's.
	// +optional
	KeyspaceSHA256 string `json:"keyspaceSHA256,omitempty"`
	// Size of the object in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// SHA256 of the object; a restore refuses an object that does not match.
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// EtcdVersion the member ran.
	// +optional
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// ClusterID of the etcd cluster (hex).
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
}

// EtcdBackup is one snapshot of an EtcdCluster, stored in an object store and verified.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=etcdbackup,categories=quorate
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.spec == oldSelf.spec",message="an EtcdBackup cannot be changed: create another one"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="metadata.name must be at most 52 characters: it names the backup's Job"
type EtcdBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdBackupSpec   `json:"spec"`
	Status EtcdBackupStatus `json:"status,omitempty"`
}

// EtcdBackupList is a list of EtcdBackups.
// +kubebuilder:object:root=true
type EtcdBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdBackup `json:"items"`
}

// BackupRetention says which of a schedule's backups are kept. MaxCount, Hourly, Daily and
// Weekly keep backups together (grandfather-father-son): when any of them is set, a backup
// none of them keeps is deleted. The newest backup is always kept. With an archive, segments
// are deleted once no kept snapshot of the cluster needs them.
type BackupRetention struct {
	// MaxCount keeps the newest this many backups (0: no limit, unless hourly, daily or
	// weekly is set).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxCount int32 `json:"maxCount,omitempty"`
	// Hourly keeps the newest backup of each of the last this many hours that have one.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Hourly int32 `json:"hourly,omitempty"`
	// Daily keeps the newest backup of each of the last this many days (UTC) that have one.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Daily int32 `json:"daily,omitempty"`
	// Weekly keeps the newest backup of each of the last this many ISO weeks (Monday to
	// Sunday, UTC) that have one.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Weekly int32 `json:"weekly,omitempty"`
	// MaxAge deletes backups older than this, such as 168h (empty: no limit), whatever the
	// other fields keep. The newest backup is always kept.
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// RestoreDrill restores each new backup into a scratch EtcdCluster and compares it with what
// the backup recorded.
type RestoreDrill struct {
	// Enabled turns the drill on.
	Enabled bool `json:"enabled"`
	// StorageClassName of the scratch cluster's volume (the default class when empty).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// EtcdBackupScheduleSpec takes backups of an EtcdCluster on a schedule.
type EtcdBackupScheduleSpec struct {
	// ClusterName is the EtcdCluster, in the schedule's namespace, to back up.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	ClusterName string `json:"clusterName"`
	// Schedule in cron format (minute hour day-of-month month day-of-week), such as
	// "0 */6 * * *", or a descriptor such as @hourly or @every 30m; in UTC, unless it starts
	// with CRON_TZ=<zone> ("CRON_TZ=Europe/Berlin 0 3 * * *").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:XValidation:rule="!(self.trim().startsWith('TZ=') || self.trim().startsWith('CRON_TZ=')) || self.trim().contains(' ')",message="schedule names a time zone and no times: write the five cron fields after it, such as CRON_TZ=Europe/Berlin 0 3 * * *"
	Schedule string `json:"schedule"`
	// Storage is where the snapshots go; each is stored as
	// PREFIX<namespace>/<cluster>/<schedule>-<time>.db.
	Storage BackupStorage `json:"storage"`
	// Retention of the schedule's backups: expired EtcdBackups are deleted, and so are their
	// objects in the bucket.
	// +optional
	Retention BackupRetention `json:"retention,omitempty"`
	// Drill restores each new backup into a scratch cluster and compares the keyspace with the
	// backup's record.
	// +optional
	Drill RestoreDrill `json:"drill,omitempty"`
	// Suspend stops new backups; existing ones are kept.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// Archive streams every change of the cluster into the storage between the schedule's
	// snapshots, so that a restore can go to any revision or time the chain covers
	// (point-in-time recovery). An archiver Deployment of one pod watches the cluster and
	// writes segments under PREFIX<namespace>/<cluster>/archive/<schedule>/. Suspend does not
	// stop it; removing archive (or enabled: false) does, and keeps what was written.
	// +optional
	Archive *ArchiveSpec `json:"archive,omitempty"`
}

// ArchiveSpec turns on the continuous archive of a schedule's cluster.
type ArchiveSpec struct {
	// Enabled runs the archiver.
	Enabled bool `json:"enabled"`
	// MaxLag bounds how long a change waits in the archiver before the segment holding it is
	// written (default 500ms): with the store's write time, the most a restore to the newest
	// archived point can lose. Shorter writes more, smaller objects.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('100ms') && duration(self) <= duration('1m')",message="archive.maxLag must be between 100ms and 1m"
	// +optional
	MaxLag *metav1.Duration `json:"maxLag,omitempty"`
}

// ArchiveStatus is where a schedule's archive stands, as its archiver reports it.
type ArchiveStatus struct {
	// Location of the archive: the bucket URL without its query, and the archive's prefix.
	// The segments of each cluster ID go under <location>/<cluster ID>/segments/.
	// +optional
	Location string `json:"location,omitempty"`
	// ClusterID whose changes are archived now (hex).
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// LastRevision is the newest revision stored in the archive.
	// +optional
	LastRevision int64 `json:"lastRevision,omitempty"`
	// LastTime is when the archiver received that revision: a restore to a time at or after
	// it (and before the next change) gets it.
	// +optional
	LastTime *metav1.Time `json:"lastTime,omitempty"`
	// Lag is how long the oldest change the cluster has and the archive has not yet stored
	// has waited (0s when the archive holds the cluster's newest revision), as of
	// ObservedTime.
	// +optional
	Lag *metav1.Duration `json:"lag,omitempty"`
	// Ranges are the revision ranges this cluster ID's archive covers, oldest first, such as
	// "1204-98311": a restore to a point needs a snapshot and a target in the same range.
	// A new range starts when the archive had to start again (etcd compacted revisions it
	// had not stored, or the archive was empty).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Ranges []string `json:"ranges,omitempty"`
	// ObservedTime is when the operator last read the archiver's progress.
	// +optional
	ObservedTime *metav1.Time `json:"observedTime,omitempty"`
}

// DrillResult is the outcome of a restore drill.
type DrillResult struct {
	// Backup that was restored.
	Backup string `json:"backup"`
	// Passed: the restored cluster held the keys and the keyspace hash the backup recorded.
	Passed bool `json:"passed"`
	// Message says what was compared and what differed.
	Message string `json:"message"`
	// Time the drill ended.
	Time metav1.Time `json:"time"`
}

// EtcdBackupScheduleStatus is the schedule's progress.
type EtcdBackupScheduleStatus struct {
	// Conditions: Ready (the schedule is valid and the last backup completed), with
	// drills RestoreVerified (the last drill's outcome), and with an archive Archiving (the
	// archiver runs and keeps up).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastScheduleTime is when the last backup was created.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastBackup is the name of the newest backup.
	// +optional
	LastBackup string `json:"lastBackup,omitempty"`
	// LastCompletedBackup is the newest backup that completed.
	// +optional
	LastCompletedBackup string `json:"lastCompletedBackup,omitempty"`
	// LastDrill is the outcome of the last restore drill.
	// +optional
	LastDrill *DrillResult `json:"lastDrill,omitempty"`
	// Drilling is the backup a drill is restoring now.
	// +optional
	Drilling string `json:"drilling,omitempty"`
	// Archive is where the continuous archive stands (spec.archive).
	// +optional
	Archive *ArchiveStatus `json:"archive,omitempty"`
}

// EtcdBackupSchedule takes EtcdBackups of a cluster on a schedule, applies their retention
// and, optionally, proves each by restoring it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=etcdbackupschedule,categories=quorate
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Last",type=string,JSONPath=`.status.lastCompletedBackup`
// +kubebuilder:printcolumn:name="Drill",type=string,JSONPath=`.status.conditions[?(@.type=="RestoreVerified")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 30",message="metadata.name must be at most 30 characters: it prefixes the names of its backups and of the drill's cluster"
type EtcdBackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdBackupScheduleSpec   `json:"spec"`
	Status EtcdBackupScheduleStatus `json:"status,omitempty"`
}

// EtcdBackupScheduleList is a list of EtcdBackupSchedules.
// +kubebuilder:object:root=true
type EtcdBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdBackupSchedule `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdBackup{}, &EtcdBackupList{}, &EtcdBackupSchedule{}, &EtcdBackupScheduleList{})
}
