package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdClusterSpec is the desired state of an etcd cluster.
// +kubebuilder:validation:XValidation:rule="!has(self.users) || size(self.users) == 0 || ((!has(self.tls.enabled) || self.tls.enabled) && !has(self.tls.clientSecretName))",message="spec.users needs TLS with operator-generated certificates: users authenticate with client certificates the operator issues from the cluster CA"
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap) && (!has(self.bootstrap) || (has(self.bootstrap.join) == has(oldSelf.bootstrap.join) && (has(self.bootstrap.fromBackup) ? has(oldSelf.bootstrap.fromBackup) && self.bootstrap.fromBackup == oldSelf.bootstrap.fromBackup : !has(oldSelf.bootstrap.fromBackup))))",message="spec.bootstrap cannot change after the cluster is created: it says what the cluster started from (only the settings of bootstrap.join may change)"
// +kubebuilder:validation:XValidation:rule="!has(self.bootstrap) || !has(self.bootstrap.join) || (has(self.tls.enabled) && !self.tls.enabled) || has(self.tls.serverSecretName)",message="spec.bootstrap.join needs certificates the external members trust: set tls.serverSecretName, tls.peerSecretName and tls.clientSecretName to Secrets issued by the external cluster's CA (tls.clientSecretName is also the operator's credential for the external cluster), or set tls.enabled to false for a plaintext cluster"
// +kubebuilder:validation:XValidation:rule="!has(self.bootstrap) || !has(self.bootstrap.join) || self.bootstrap.join.endpoints.all(e, e.startsWith((has(self.tls.enabled) && !self.tls.enabled) ? 'http://' : 'https://'))",message="spec.bootstrap.join.endpoints must use https:// with TLS on and http:// with tls.enabled false"
// +kubebuilder:validation:XValidation:rule="!(has(self.adoptRetainedVolumes) && self.adoptRetainedVolumes && has(self.bootstrap) && has(self.bootstrap.fromBackup))",message="bootstrap.fromBackup and adoptRetainedVolumes exclude each other: adopted volumes keep their data and the backup would never be restored; to restore the backup, delete the retained PVCs and leave adoptRetainedVolumes out, or to restart from the volumes, leave bootstrap out"
// +kubebuilder:validation:XValidation:rule="!has(self.etcd.quotaBackendBytes) || (oldSelf.hasValue() && has(oldSelf.value().etcd.quotaBackendBytes) && oldSelf.value().etcd.quotaBackendBytes == self.etcd.quotaBackendBytes && oldSelf.value().storage.size == self.storage.size) || !quantity(string(self.storage.size)).isInteger() || self.etcd.quotaBackendBytes + 134217728 <= quantity(string(self.storage.size)).asInteger()",optionalOldSelf=true,message="etcd.quotaBackendBytes plus 128Mi for etcd's write-ahead log must fit in storage.size: etcd refuses writes (NOSPACE) only at the quota, and a volume that fills first leaves every member crash-looping on a full disk. Lower the quota, raise storage.size, or leave the quota out to have it follow the volume"
// +kubebuilder:validation:XValidation:rule="!has(self.image) || !self.image.matches(':v?[0-9]+\\\\.[0-9]+\\\\.[0-9]+$') || self.image.endsWith(':' + self.version) || self.image.endsWith(':v' + self.version)",message="the tag of spec.image names another etcd release than spec.version; set both to the same release"
type EtcdClusterSpec struct {
	// Replicas is the number of voting members. Use an odd number: 3 tolerates the loss of one
	// member, 5 of two.
	// +kubebuilder:default=3
	// +kubebuilder:validation:XValidation:rule="self >= 1 && self <= 9",message="replicas must be between 1 and 9; use 3 or 5 for a cluster that survives member loss"
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Version is the etcd release to run, such as 3.6.16. 3.5.x and 3.6.x are supported. A
	// change is checked against what the members run: one minor release at a time, from a
	// recent enough patch, never back from 3.6 to 3.5; a refused change stops with the
	// condition VersionChangeRefused and can be set back.
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="self.matches('^3\\\\.(5|6)\\\\.(0|[1-9][0-9]*)$')",message="version must be an etcd release written as 3.5.N or 3.6.N (for example 3.6.16), without a leading v; other minor versions are not supported"
	Version string `json:"version"`

	// Image overrides the etcd container image. It must contain /usr/local/bin/etcd of the
	// release named by version (the upstream etcd images do). By default the operator uses its
	// configured image for the version.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.size() > 0 && !self.contains(' ')",message="image must be an image reference such as registry.example.com/etcd:v3.6.16, or omitted to use the operator's image for the version"
	// +optional
	Image string `json:"image,omitempty"`

	// Storage is the persistent volume of each member. It may grow, and move to another
	// StorageClass: volumes are expanded in place when their StorageClass allows it, and
	// otherwise each member moves to a new volume, add-first, one at a time, the leader last.
	// It cannot shrink.
	Storage StorageSpec `json:"storage"`

	// TLS configures the certificates of client and peer traffic. TLS is on by default with
	// certificates the operator generates.
	// +kubebuilder:default={}
	// +kubebuilder:validation:XValidation:rule="(has(self.enabled) ? self.enabled : true) == (has(oldSelf.enabled) ? oldSelf.enabled : true) && (has(self.serverSecretName) ? self.serverSecretName : '') == (has(oldSelf.serverSecretName) ? oldSelf.serverSecretName : '') && (has(self.peerSecretName) ? self.peerSecretName : '') == (has(oldSelf.peerSecretName) ? oldSelf.peerSecretName : '') && (has(self.clientSecretName) ? self.clientSecretName : '') == (has(oldSelf.clientSecretName) ? oldSelf.clientSecretName : '')",message="tls.enabled and the tls secret names cannot be changed after creation (renewCertificates and rotateCA can); create a new EtcdCluster with the TLS settings you want and move your data to it"
	// +optional
	TLS TLSSpec `json:"tls,omitempty"`

	// PodTemplate customises the member pods.
	// +optional
	PodTemplate *PodTemplate `json:"podTemplate,omitempty"`

	// Etcd holds etcd server options.
	// +kubebuilder:default={}
	// +optional
	Etcd EtcdOptions `json:"etcd,omitempty"`

	// Paused stops every change the operator makes to the cluster; status is still observed.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Hibernate stops every member pod of a formed cluster and keeps everything else: the
	// volumes with their data, the Secrets, the Services and etcd's membership. Pods stop one
	// at a time, followers first and the leader last, each through etcd's ordinary shutdown;
	// clients cannot reach the cluster until it is woken. Setting it back to false restarts
	// every member from its volume, with the same names and cluster ID: a hibernated cluster
	// is never bootstrapped again. The condition Hibernated says where it is. While hibernated,
	// other spec changes wait (certificates are still renewed). Set on a cluster that has not
	// formed, it creates no member until it is false.
	// +optional
	Hibernate bool `json:"hibernate,omitempty"`

	// VolumeRetention says what happens to the member volumes when the EtcdCluster is deleted:
	// Retain (the default, as for StatefulSets) keeps them, so that an EtcdCluster of the same
	// name can adopt them (adoptRetainedVolumes); Delete deletes them with it. The volumes of
	// members removed by scaling down or replacement are always deleted.
	// +kubebuilder:validation:Enum=Retain;Delete
	// +kubebuilder:default=Retain
	// +optional
	VolumeRetention string `json:"volumeRetention,omitempty"`

	// AdoptRetainedVolumes lets this EtcdCluster take over the volumes that an earlier
	// EtcdCluster of the same name retained, and restart the etcd cluster they hold with its
	// cluster ID and data. Without it, such volumes stop the operator (condition
	// RetainedVolumes) and are never overwritten.
	// +optional
	AdoptRetainedVolumes bool `json:"adoptRetainedVolumes,omitempty"`

	// Recovery asks for a recovery from permanent quorum loss.
	// +optional
	Recovery *RecoverySpec `json:"recovery,omitempty"`

	// Users are etcd users for applications, each limited to key prefixes. Declaring any turns
	// etcd authentication on: from then on only these users (and the operator) can use the
	// cluster, and the shared client certificate (<cluster>-client-tls) no longer grants
	// access. Each user's client certificate, CA and endpoints are in the Secret
	// <cluster>-user-<name>, in the servicebinding.io layout. Root is never handed out.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Users []UserSpec `json:"users,omitempty"`

	// Maintenance the operator performs on the members' databases.
	// +optional
	Maintenance MaintenanceSpec `json:"maintenance,omitempty"`

	// Bootstrap says what a new cluster starts from: nothing (the default), or a backup
	// restored into every member (fromBackup). It cannot change after creation.
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`

	// NetworkPolicy restricts who reaches the members, with one NetworkPolicy per cluster:
	// the peer port only from the cluster's members, the client port from the operator and
	// the clients named here, the metrics port from the monitoring named here. It takes effect
	// where the cluster's network plugin enforces NetworkPolicies.
	// +kubebuilder:default={}
	// +optional
	NetworkPolicy NetworkPolicySpec `json:"networkPolicy,omitempty"`
}

// MaintenanceSpec is the database maintenance the operator performs.
type MaintenanceSpec struct {
	// Defrag returns the free pages of the members' database files to the file system, one
	// member at a time: followers first, then the leader once leadership has moved to a
	// defragmented follower. Defragmenting blocks a member for as long as it copies its
	// database (milliseconds for small ones, seconds for gigabytes).
	// +optional
	Defrag *DefragSpec `json:"defrag,omitempty"`

	// DefragNow: set a new token (any name, such as defrag-2026-11-28) to defragment every
	// healthy voting member once, now: followers first, then the leader once leadership has
	// moved to a defragmented follower. Every member is defragmented whatever its free pages
	// (defrag's thresholdPercent and minFreeBytes do not apply). The round waits while the
	// cluster is not settled (a membership change, a rolling update, a recovery, paused,
	// hibernated or with a fenced member) and runs once it is; status.maintenance.defrag
	// records the members done and when the round completed. A token is acted on once.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="maintenance.defragNow must be a token of letters, digits, '-', '_' and '.', such as defrag-2026-11-28"
	// +optional
	DefragNow string `json:"defragNow,omitempty"`

	// MoveLeader: set a new token to hand the raft leadership to another member now, through
	// etcd's leadership transfer (clients see no outage). With to, to that member; without,
	// to a healthy voter other than the leader. It waits while the cluster is not settled,
	// like defragNow. A request that cannot be met (to names no healthy voting member, or no
	// other voter exists) is refused, with a Warning Event, and not retried: set a new token.
	// status.maintenance.moveLeader records the outcome. A token is acted on once.
	// +optional
	MoveLeader *MoveLeaderSpec `json:"moveLeader,omitempty"`
}

// MoveLeaderSpec asks for one leadership transfer.
type MoveLeaderSpec struct {
	// Token: a new one (any name) asks for a new transfer.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="maintenance.moveLeader.token must be a token of letters, digits, '-', '_' and '.', such as move-2026-11-28"
	Token string `json:"token"`
	// To is the member (such as demo-2) to hand leadership to; empty: any healthy voter other
	// than the leader.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="maintenance.moveLeader.to must be a member name, such as demo-2"
	// +optional
	To string `json:"to,omitempty"`
}

// DefragSpec says when members are defragmented: on a schedule, when their free pages pass a
// threshold, or both.
// +kubebuilder:validation:XValidation:rule="has(self.schedule) || has(self.thresholdPercent)",message="maintenance.defrag needs a schedule, a thresholdPercent, or both"
type DefragSpec struct {
	// Schedule in cron format (five fields, or @daily, @every 12h) at which every member with
	// free pages is defragmented; in UTC, unless it starts with CRON_TZ=<zone>. Rounds start
	// at least the operator's --min-defrag-interval (1h by default) apart, however often the
	// schedule runs.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:XValidation:rule="!(self.trim().startsWith('TZ=') || self.trim().startsWith('CRON_TZ=')) || self.trim().contains(' ')",message="schedule names a time zone and no times: write the five cron fields after it, such as CRON_TZ=Europe/Berlin 0 3 * * *"
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// ThresholdPercent defragments a member as soon as this share of its database file is free
	// pages (and at least minFreeBytes).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=99
	// +optional
	ThresholdPercent *int32 `json:"thresholdPercent,omitempty"`
	// MinFreeBytes: a member with fewer free bytes than this is never defragmented (default
	// 16 MiB): a small file is not worth blocking a member for.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinFreeBytes *int64 `json:"minFreeBytes,omitempty"`
}

// BootstrapSpec says what a new cluster starts from.
// +kubebuilder:validation:XValidation:rule="!(has(self.fromBackup) && has(self.join))",message="bootstrap takes fromBackup or join, not both: a joined cluster keeps the external cluster's data"
type BootstrapSpec struct {
	// FromBackup restores a snapshot into every member before etcd first starts, as etcdutl
	// snapshot restore does: the cluster starts with the snapshot's keys and revision, under a
	// new cluster ID. A snapshot whose SHA-256 does not match is refused, and the cluster
	// stays down with the reason in its Degraded condition.
	// +optional
	FromBackup *RestoreSource `json:"fromBackup,omitempty"`

	// Join moves a running etcd cluster (on VMs, or in another Kubernetes cluster) into this
	// EtcdCluster, live: the operator adds its members to that cluster one at a time, as
	// learners promoted once they caught up, then removes the external members one at a
	// time, the leader last, when removeExternalMembers says so. The cluster keeps its
	// cluster ID and data throughout. The external members and the new ones must reach each
	// other's peer URLs, and trust each other's certificates: use the external cluster's CA
	// for spec.tls's Secrets.
	// +optional
	Join *JoinSpec `json:"join,omitempty"`
}

// JoinSpec names a running etcd cluster to move in.
type JoinSpec struct {
	// Endpoints are the client URLs of every member of the external cluster, such as
	// https://10.0.0.5:2379. The operator reaches the cluster through them, with the client
	// certificate of tls.clientSecretName, until the last external member is removed.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=9
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:Pattern=`^https?://[^/\s]+:[0-9]+/?$`
	Endpoints []string `json:"endpoints"`

	// RemoveExternalMembers lets the operator remove the external members once its own
	// members (spec.replicas of them) vote: one at a time, the leader last after leadership
	// moved to one of the new members. While it is false the operator stops there, with the
	// condition Progressing reason WaitingForGoAhead: set it to true to go ahead. Set it at
	// creation for a move without a stop. Setting it back to false stops the removals.
	// +optional
	RemoveExternalMembers bool `json:"removeExternalMembers,omitempty"`
}

// RestoreSource names a stored snapshot: an EtcdBackup of the namespace, or a location.
// +kubebuilder:validation:XValidation:rule="has(self.backupName) != (has(self.storage) && has(self.key))",message="fromBackup takes either backupName, or storage and key"
// +kubebuilder:validation:XValidation:rule="!has(self.backupName) || !has(self.storage) && !has(self.key) && !has(self.sha256)",message="with backupName, storage, key and sha256 come from the EtcdBackup; leave them out"
type RestoreSource struct {
	// BackupName is a Completed EtcdBackup in the namespace; its storage, key and SHA-256 are
	// used.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	BackupName string `json:"backupName,omitempty"`
	// Storage is the bucket holding the snapshot (with key).
	// +optional
	Storage *BackupStorage `json:"storage,omitempty"`
	// Key of the snapshot object in the bucket.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Key string `json:"key,omitempty"`
	// SHA256 the snapshot must have (hex); without it, the one its object's metadata records.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{64}$')",message="sha256 must be 64 lowercase hex digits"
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// PointInTime restores the cluster as it was at a later revision or time than the
	// snapshot: the snapshot, then the changes of its cluster that an EtcdBackupSchedule's
	// archive (spec.archive) holds up to the target, replayed one revision at a time. The
	// restored cluster is at exactly the target revision, with every key, value, version and
	// revision it had then. A target the archive does not reach from the snapshot is refused
	// before anything starts, and the condition names the revisions it covers.
	// +optional
	PointInTime *PointInTime `json:"pointInTime,omitempty"`
	// BumpRevision raises the restored cluster's revision by this much above the snapshot's
	// (or the point's) and marks every revision up to the new one compacted (etcdutl
	// snapshot restore --bump-revision --mark-compacted, etcd 3.5.10 or later). Set it when the
	// cluster replaces one that clients watched, under its old name and Service: a watcher
	// that resumes from a revision it saw before the restore is told that revision is
	// compacted, and lists again (Kubernetes' informers do), instead of waiting for revision
	// numbers the restored cluster hands out again to other changes, and missing those. Make
	// it larger than the number of revisions the old cluster wrote after the restored point;
	// etcd's documentation suggests 1000000000. The keyspace's history before the restored
	// revision can no longer be read (reads and watches at older revisions are refused as
	// compacted). 0 (the default): revisions continue from the restored point.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000000000
	// +optional
	BumpRevision int64 `json:"bumpRevision,omitempty"`
}

// PointInTime is the target of a restore to a point, and the archive that reaches it.
// +kubebuilder:validation:XValidation:rule="has(self.revision) != has(self.time)",message="pointInTime takes exactly one of revision and time"
type PointInTime struct {
	// Revision to restore to: the cluster's keyspace right after this revision.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// Time to restore to, in RFC 3339 with fractions of a second if wanted
	// ("2026-11-29T10:00:00.25Z"): the newest revision the archiver had received at this time
	// (within the archive's lag of its commit).
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$')",message="pointInTime.time must be an RFC 3339 time such as 2026-11-29T10:00:00Z or 2026-11-29T11:00:00.25+01:00"
	// +optional
	Time string `json:"time,omitempty"`
	// ArchivePrefix is the archive's prefix in the snapshot's bucket, as the schedule's
	// status.archive.location shows it after the bucket:
	// PREFIX<namespace>/<cluster>/archive/<schedule>. Default, for a backupName taken by a
	// schedule: that schedule's archive.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	ArchivePrefix string `json:"archivePrefix,omitempty"`
}

// UserSpec is an application's etcd user.
type UserSpec struct {
	// Name of the etcd user: the common name of its client certificate, and the end of its
	// Secret's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['root', 'quorate-operator', 'quorate-client'])",message="root, quorate-operator and quorate-client are the operator's own identities; choose another user name"
	Name string `json:"name"`

	// ReadWrite are key prefixes the user may read and write.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	ReadWrite []string `json:"readWrite,omitempty"`

	// ReadOnly are key prefixes the user may only read.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	ReadOnly []string `json:"readOnly,omitempty"`
}

// NetworkPolicySpec configures the cluster's NetworkPolicy.
type NetworkPolicySpec struct {
	// Enabled creates the NetworkPolicy (default true); false deletes it.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Clients may reach the client port (2379), besides the operator. Empty: every pod and
	// address may (the policy then guards the peer port only).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Clients []networkingv1.NetworkPolicyPeer `json:"clients,omitempty"`

	// Monitoring may reach the metrics and health port (2381). Empty: every pod and address
	// may.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Monitoring []networkingv1.NetworkPolicyPeer `json:"monitoring,omitempty"`
}

// RecoverySpec asks the operator to recover a cluster that lost a majority of its members
// for good. It is never done on the operator's own initiative.
type RecoverySpec struct {
	// ForceNewCluster: set a new token (any name, such as a ticket number) to restart the
	// cluster from the member that has applied the most writes, with etcd's
	// --force-new-cluster: it keeps its data and the cluster ID, the others are replaced, and
	// writes it had not applied are lost (status.recovery names the revision). A token is
	// acted on once, and only while the cluster has no quorum.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="recovery.forceNewCluster must be a token of letters, digits, '-', '_' and '.', such as incident-2026-11-23"
	// +optional
	ForceNewCluster string `json:"forceNewCluster,omitempty"`
}

// StorageSpec describes the persistent volume claim of each member.
type StorageSpec struct {
	// Size of each member's volume, such as 1Gi.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('64Mi')) >= 0",message="storage.size must be at least 64Mi; etcd needs room for its write-ahead log and snapshots"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="storage.size cannot shrink: etcd's files may already fill the volume, and volumes do not shrink; to use smaller volumes, restore a backup into a new EtcdCluster"
	Size resource.Quantity `json:"size"`

	// StorageClassName of the member volumes; the cluster's default class when empty.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="storage.storageClassName must be a StorageClass name: lowercase letters, digits, '-' and '.'"
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// TLSSpec configures TLS. Leave the secret names empty for operator-generated certificates, or
// set all three to Secrets of type kubernetes.io/tls that also hold ca.crt.
// +kubebuilder:validation:XValidation:rule="(has(self.serverSecretName) && has(self.peerSecretName) && has(self.clientSecretName)) || (!has(self.serverSecretName) && !has(self.peerSecretName) && !has(self.clientSecretName))",message="tls.serverSecretName, tls.peerSecretName and tls.clientSecretName must be set together, or all left empty for operator-generated certificates"
// +kubebuilder:validation:XValidation:rule="!(has(self.enabled) && !self.enabled && (has(self.serverSecretName) || has(self.peerSecretName) || has(self.clientSecretName)))",message="tls secret names cannot be set when tls.enabled is false; remove them or enable TLS"
// +kubebuilder:validation:XValidation:rule="!(has(self.rotateCA) || has(self.renewCertificates)) || ((!has(self.enabled) || self.enabled) && !has(self.serverSecretName))",message="tls.rotateCA and tls.renewCertificates act on the certificates the operator generates: with your own Secrets, replace their certificates yourself"
type TLSSpec struct {
	// Enabled turns TLS on for client and peer traffic. Default true.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// ServerSecretName is a kubernetes.io/tls Secret (with ca.crt) for the client listener.
	// Its certificate must cover *.<cluster>-peer.<namespace>.svc and <cluster>-client.<namespace>.svc.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="tls secret names must be Secret names: lowercase letters, digits, '-' and '.'"
	// +optional
	ServerSecretName string `json:"serverSecretName,omitempty"`

	// PeerSecretName is a kubernetes.io/tls Secret (with ca.crt) for member-to-member traffic.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="tls secret names must be Secret names: lowercase letters, digits, '-' and '.'"
	// +optional
	PeerSecretName string `json:"peerSecretName,omitempty"`

	// ClientSecretName is a kubernetes.io/tls Secret (with ca.crt) holding the client
	// certificate the operator uses to manage membership.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="tls secret names must be Secret names: lowercase letters, digits, '-' and '.'"
	// +optional
	ClientSecretName string `json:"clientSecretName,omitempty"`

	// RenewCertificates: set a new token (any name) to renew every generated leaf certificate
	// now, from the CA that signs it, as the operator does on its own with a third of their
	// lifetime left. Members read their certificates on each new connection: no restart.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="tls.renewCertificates must be a token of letters, digits, '-', '_' and '.', such as renew-2026-11"
	// +optional
	RenewCertificates string `json:"renewCertificates,omitempty"`

	// RotateCA: set a new token (any name) to replace the generated CAs, in phases that keep
	// every connection trusted: every Secret's ca.crt first trusts the old and a new CA
	// (members restart one at a time to load it), then every certificate is reissued by the new
	// CA, then the old CA is dropped (members restart again). status.tls.caRotation shows the
	// phase. Applications must read ca.crt and their certificate from their Secret again in
	// between (a file mount does, within a minute or so).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="tls.rotateCA must be a token of letters, digits, '-', '_' and '.', such as ca-2026"
	// +optional
	RotateCA string `json:"rotateCA,omitempty"`
}

// IsEnabled reports whether TLS is on (the default).
func (t TLSSpec) IsEnabled() bool { return t.Enabled == nil || *t.Enabled }

// FinalizerJoin holds a deleted EtcdCluster while its join (spec.bootstrap.join) is recorded and
// not completed: the operator first removes its own members from the external cluster, one at
// a time, so that deleting their pods cannot take the external cluster's quorum away.
const FinalizerJoin = "etcd.quorate.dev/join"

// JoinUnfinished: a join is recorded in status and has not completed, so members of the
// operator's may vote beside the external ones (FinalizerJoin holds the EtcdCluster).
func (c *EtcdCluster) JoinUnfinished() bool {
	return c.Spec.Bootstrap != nil && c.Spec.Bootstrap.Join != nil && c.Status.Join != nil && c.Status.Join.Phase != JoinCompleted
}

// Joining: spec.bootstrap.join names an external cluster whose members may still be in etcd
// (the join has not completed).
func (c *EtcdCluster) Joining() bool {
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Join == nil {
		return false
	}
	return c.Status.Join == nil || c.Status.Join.Phase != JoinCompleted
}

// UserProvided reports whether the user supplies the certificates.
func (t TLSSpec) UserProvided() bool { return t.ServerSecretName != "" }

// PodTemplate holds the member pod settings a user may override.
type PodTemplate struct {
	// Labels added to member pods.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('etcd.quorate.dev/'))",message="podTemplate.labels cannot use the etcd.quorate.dev/ prefix, which the operator reserves for its own labels"
	// +optional
	Labels map[string]LabelValue `json:"labels,omitempty"`

	// Annotations added to member pods.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('etcd.quorate.dev/'))",message="podTemplate.annotations cannot use the etcd.quorate.dev/ prefix, which the operator reserves for its own annotations"
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Resources of the etcd container. Members without requests would be the first evicted
	// under memory pressure; set requests, and limits no lower than them.
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || ['cpu', 'memory'].all(r, !(r in self.requests) || !(r in self.limits) || quantity(self.requests[r]).compareTo(quantity(self.limits[r])) <= 0)",message="podTemplate.resources: the cpu and memory requests must be at most their limits"
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Affinity replaces the default soft anti-affinity between members.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Tolerations of member pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// NodeSelector of member pods.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// TopologySpreadConstraints replace the default soft spread of members across nodes.
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// PriorityClassName of member pods.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="podTemplate.priorityClassName must be a PriorityClass name: lowercase letters, digits, '-' and '.'"
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// LabelValue is the value of a label or node selector.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:XValidation:rule="self.matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$')",message="label values must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
type LabelValue string

// LabelMap turns labels of the API into a plain map.
func LabelMap(m map[string]LabelValue) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// EtcdOptions are etcd server settings.
// +kubebuilder:validation:XValidation:rule="!has(self.electionTimeoutMillis) || !has(self.heartbeatIntervalMillis) || self.electionTimeoutMillis >= 5 * self.heartbeatIntervalMillis",message="etcd.electionTimeoutMillis must be at least 5 times etcd.heartbeatIntervalMillis (etcd refuses to start otherwise); raise the election timeout or lower the heartbeat interval"
// +kubebuilder:validation:XValidation:rule="!has(self.autoCompactionMode) || !has(self.autoCompactionRetention) || (self.autoCompactionMode == 'revision' ? self.autoCompactionRetention.matches('^[0-9]+$') : self.autoCompactionRetention.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$|^[0-9]+$'))",message="etcd.autoCompactionRetention must be a number of revisions such as 10000 when autoCompactionMode is revision, or a duration such as 1h or 30m (or a number of hours) when it is periodic"
// The rules tolerate absent fields only for the API server's check of the default ({}): in a
// stored object every field has its default.
type EtcdOptions struct {
	// HeartbeatIntervalMillis is the raft heartbeat interval in milliseconds.
	// +kubebuilder:default=100
	// +kubebuilder:validation:XValidation:rule="self >= 10 && self <= 5000",message="etcd.heartbeatIntervalMillis must be between 10 and 5000"
	// +optional
	HeartbeatIntervalMillis int32 `json:"heartbeatIntervalMillis,omitempty"`

	// ElectionTimeoutMillis is the raft election timeout in milliseconds.
	// +kubebuilder:default=1000
	// +kubebuilder:validation:XValidation:rule="self >= 50 && self <= 50000",message="etcd.electionTimeoutMillis must be between 50 and 50000 (etcd's limit)"
	// +optional
	ElectionTimeoutMillis int32 `json:"electionTimeoutMillis,omitempty"`

	// QuotaBackendBytes is the backend size after which etcd raises a NOSPACE alarm. Unset, it
	// follows the volume: half of storage.size beyond 128Mi (etcd's write-ahead log), so that
	// the database, a copy of it (a snapshot from the leader, a defragmentation) and the log
	// fit, between 16Mi and 2Gi (etcd's own default). Set, it must fit with the log in
	// storage.size.
	// +kubebuilder:validation:XValidation:rule="self >= 16777216 && self <= 8589934592",message="etcd.quotaBackendBytes must be between 16Mi (16777216) and 8Gi (8589934592), the largest size etcd recommends"
	// +optional
	QuotaBackendBytes int64 `json:"quotaBackendBytes,omitempty"`

	// AutoCompactionMode is periodic (retention is a duration) or revision.
	// +kubebuilder:default=periodic
	// +kubebuilder:validation:Enum=periodic;revision
	// +optional
	AutoCompactionMode string `json:"autoCompactionMode,omitempty"`

	// AutoCompactionRetention is how much history to keep: a duration such as 1h for periodic
	// mode, a number of revisions for revision mode.
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:MaxLength=32
	// +optional
	AutoCompactionRetention string `json:"autoCompactionRetention,omitempty"`
}

// MemberStatus is what the operator last observed of one member.
type MemberStatus struct {
	// Name of the member, which is also the name of its Pod and PVC.
	Name string `json:"name"`
	// ID is the etcd member ID in hex.
	// +optional
	ID string `json:"id,omitempty"`
	// PeerURL is the member's advertised peer URL.
	// +optional
	PeerURL string `json:"peerURL,omitempty"`
	// Learner is true while the member is a non-voting learner.
	// +optional
	Learner bool `json:"learner,omitempty"`
	// Version of etcd the member runs.
	// +optional
	Version string `json:"version,omitempty"`
	// Healthy is true when the member answered and follows a leader of the right cluster.
	Healthy bool `json:"healthy"`
	// DBSize is the size of the member's backend database in bytes.
	// +optional
	DBSize int64 `json:"dbSize,omitempty"`
	// IsLeader is true for the current raft leader.
	// +optional
	IsLeader bool `json:"isLeader,omitempty"`
	// Fenced is true while the member is fenced at the user's request (the
	// etcd.quorate.dev/fence-members annotation) and its etcd has stopped (its launcher reads
	// the request from the pod's annotations within about a minute); its pod is kept.
	// +optional
	Fenced bool `json:"fenced,omitempty"`
}

// EtcdClusterStatus is the observed state of an etcd cluster.
type EtcdClusterStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Available, Progressing, Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ClusterID is the etcd cluster ID (hex), recorded once at bootstrap. Every member must
	// report it; a member that reports another ID stops all membership changes.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`

	// Leader is the name of the current leader.
	// +optional
	Leader string `json:"leader,omitempty"`

	// Members of the cluster as etcd reports them.
	// +listType=map
	// +listMapKey=name
	// +optional
	Members []MemberStatus `json:"members,omitempty"`

	// Replicas is the number of voting members.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReadyMembers is the number of healthy voting members.
	// +optional
	ReadyMembers int32 `json:"readyMembers,omitempty"`

	// CurrentVersion is the lowest etcd version any member runs.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`

	// Selector selects the member pods (for the scale subresource).
	// +optional
	Selector string `json:"selector,omitempty"`

	// Alarms etcd has raised (NOSPACE, CORRUPT).
	// +optional
	Alarms []string `json:"alarms,omitempty"`

	// Recovery is the last forced recovery (spec.recovery).
	// +optional
	Recovery *RecoveryStatus `json:"recovery,omitempty"`

	// Storage says how many members' volumes match spec.storage, while a change of it rolls out.
	// +optional
	Storage *StorageStatus `json:"storage,omitempty"`

	// AuthEnabled is true while etcd authentication is on (spec.users declares users).
	// +optional
	AuthEnabled bool `json:"authEnabled,omitempty"`

	// Users are the application users etcd has, as spec.users declared them.
	// +listType=set
	// +optional
	Users []string `json:"users,omitempty"`

	// Maintenance is what the operator did for spec.maintenance.defragNow and
	// spec.maintenance.moveLeader.
	// +optional
	Maintenance *MaintenanceStatus `json:"maintenance,omitempty"`

	// LastDefragTime is when the last scheduled defragmentation of every member (spec.maintenance.defrag.schedule) finished.
	// +optional
	LastDefragTime *metav1.Time `json:"lastDefragTime,omitempty"`

	// TLS is the state of the generated certificates: the last renewal and CA rotation asked
	// for, and the phase of a rotation under way.
	// +optional
	TLS *TLSStatus `json:"tls,omitempty"`

	// Join is the progress of moving a running cluster in (spec.bootstrap.join).
	// +optional
	Join *JoinStatus `json:"join,omitempty"`

	// Operator is the operator instance (namespace/pod) that holds the cluster's claim and
	// manages it: where two Quorate installs see the cluster, only this one acts.
	// +optional
	Operator string `json:"operator,omitempty"`
}

// MaintenanceStatus records the maintenance asked for on demand.
type MaintenanceStatus struct {
	// Defrag is the last defragmentation round asked for (spec.maintenance.defragNow).
	// +optional
	Defrag *DefragRoundStatus `json:"defrag,omitempty"`
	// MoveLeader is the answer to the last leadership transfer asked for
	// (spec.maintenance.moveLeader).
	// +optional
	MoveLeader *MoveLeaderStatus `json:"moveLeader,omitempty"`
}

// DefragRoundStatus is the progress of a defragmentation round asked for on demand.
type DefragRoundStatus struct {
	// Token is the spec.maintenance.defragNow it answers.
	Token string `json:"token"`
	// Defragmented are the members defragmented in this round, in order; each is
	// defragmented once.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Defragmented []string `json:"defragmented,omitempty"`
	// StartTime is when the round started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when no healthy voting member was left to defragment: the round is over.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// Results of a leadership transfer asked for (status.maintenance.moveLeader.result).
const (
	// LeaderMoveMoved: leadership moved from the member From to the member To.
	LeaderMoveMoved = "Moved"
	// LeaderMoveAlreadyLeader: the member asked for was the leader already; nothing was done.
	LeaderMoveAlreadyLeader = "AlreadyLeader"
	// LeaderMoveRefused: the request cannot be met (Message says why); it is not retried.
	LeaderMoveRefused = "Refused"
	// LeaderMoveFailed: etcd did not complete the transfer (Message has its error); it is not
	// retried: a new token asks again.
	LeaderMoveFailed = "Failed"
)

// MoveLeaderStatus is the answer to a leadership transfer asked for.
type MoveLeaderStatus struct {
	// Token is the spec.maintenance.moveLeader.token it answers.
	Token string `json:"token"`
	// Result: Moved, AlreadyLeader, Refused or Failed.
	Result string `json:"result"`
	// From is the member that led when the request was answered.
	// +optional
	From string `json:"from,omitempty"`
	// To is the member leadership moved to (or that leads already, or was asked for).
	// +optional
	To string `json:"to,omitempty"`
	// Message says what was done, or why the request was refused and what to do.
	// +optional
	Message string `json:"message,omitempty"`
	// Time is when the request was answered.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// Phases of a CA rotation (status.tls.caRotation.phase).
const (
	// CARotationTrusting: every ca.crt trusts the old and the new CA; members restart to load it.
	CARotationTrusting = "Trusting"
	// CARotationReissuing: every certificate is reissued by the new CA.
	CARotationReissuing = "Reissuing"
	// CARotationDropping: every ca.crt trusts the new CA alone; members restart to load it.
	CARotationDropping = "Dropping"
	// CARotationCompleted: the new CA is the CA.
	CARotationCompleted = "Completed"
)

// TLSStatus records what was done to the generated certificates.
type TLSStatus struct {
	// RenewedToken is the last spec.tls.renewCertificates acted on.
	// +optional
	RenewedToken string `json:"renewedToken,omitempty"`
	// CARotation is the last CA rotation.
	// +optional
	CARotation *CARotationStatus `json:"caRotation,omitempty"`
	// FirstExpiry is the certificate of the cluster's Secrets that expires first.
	// +optional
	FirstExpiry *CertificateExpiry `json:"firstExpiry,omitempty"`
}

// CertificateExpiry names a certificate and when it expires.
type CertificateExpiry struct {
	// Secret holding the certificate (tls.crt, or ca.crt for a CA).
	Secret string `json:"secret"`
	// Time the certificate expires.
	Time metav1.Time `json:"time"`
}

// CARotationStatus is the progress of a CA rotation.
type CARotationStatus struct {
	// Token is the spec.tls.rotateCA it answers, or for a rotation the operator started
	// itself, auto-<serial of the CA it replaces>.
	Token string `json:"token"`
	// Phase: Trusting, Reissuing, Dropping or Completed.
	Phase string `json:"phase"`
	// PhaseTime is when the phase began.
	PhaseTime metav1.Time `json:"phaseTime"`
	// Automatic: the operator started this rotation itself, because a CA had less than a
	// fifth of its lifetime left; SpecToken is the spec.tls.rotateCA in force then, already
	// acted on.
	// +optional
	Automatic bool `json:"automatic,omitempty"`
	// +optional
	SpecToken string `json:"specToken,omitempty"`
}

// Phases of a join (status.join.phase).
const (
	// JoinAddingMembers: the operator adds its members to the external cluster.
	JoinAddingMembers = "AddingMembers"
	// JoinWaitingForGoAhead: the operator's members vote; the external ones stay until
	// spec.bootstrap.join.removeExternalMembers is true.
	JoinWaitingForGoAhead = "WaitingForGoAhead"
	// JoinRemovingExternalMembers: the external members are removed, one at a time.
	JoinRemovingExternalMembers = "RemovingExternalMembers"
	// JoinCompleted: no external member is left; the cluster is the operator's.
	JoinCompleted = "Completed"
)

// JoinStatus is the progress of moving a running cluster in.
type JoinStatus struct {
	// Phase: AddingMembers, WaitingForGoAhead, RemovingExternalMembers or Completed.
	Phase string `json:"phase"`
	// ExternalMembers are the members the external cluster had when the join started. Only
	// they, besides the operator's own, may be members until the join completes: any other
	// member stops the operator (UnknownMember).
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=9
	ExternalMembers []ExternalMember `json:"externalMembers"`
	// Remaining is the number of external members still in the cluster.
	Remaining int32 `json:"remaining"`
	// StartTime is when the join started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the last external member was removed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// ExternalMember is a member of the external cluster.
type ExternalMember struct {
	// ID is the etcd member ID (hex).
	ID string `json:"id"`
	// Name is the member's etcd name.
	// +optional
	Name string `json:"name,omitempty"`
	// PeerURLs it advertises.
	// +listType=atomic
	// +optional
	PeerURLs []string `json:"peerURLs,omitempty"`
}

// StorageStatus is the progress of a change of spec.storage.
type StorageStatus struct {
	// OnSpec is the number of members whose volume matches spec.storage.
	OnSpec int32 `json:"onSpec"`
	// ToExpand is the number of members whose volume is being expanded in place.
	// +optional
	ToExpand int32 `json:"toExpand,omitempty"`
	// ToMove is the number of members still to move to a new volume.
	// +optional
	ToMove int32 `json:"toMove,omitempty"`
}

// RecoveryStatus records a forced recovery.
type RecoveryStatus struct {
	// Token is the spec.recovery.forceNewCluster it answers.
	Token string `json:"token"`
	// Phase: Restarting, Rejoining, Completed, or NotNeeded (the cluster had quorum).
	Phase string `json:"phase"`
	// Member the cluster was restarted from.
	// +optional
	Member string `json:"member,omitempty"`
	// Revision the member had applied: acknowledged writes after it may be lost.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// StartTime of the recovery.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
}

// EtcdCluster is an etcd cluster managed by Quorate.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=etcd;etcds,categories=quorate
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyMembers`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.currentVersion`
// +kubebuilder:printcolumn:name="Leader",type=string,JSONPath=`.status.leader`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40",message="metadata.name must be at most 40 characters: it prefixes the names of the member pods, services and secrets"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must start with a letter and contain only lowercase letters, digits and '-': it names Services, which need a DNS-1035 label"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.users) || self.spec.users.all(u, !(u.name.endsWith('-server') && u.name.substring(0, u.name.size() - 7) == self.metadata.name) && !(u.name.endsWith('-peer') && u.name.substring(0, u.name.size() - 5) == self.metadata.name))",message="spec.users cannot name <cluster>-server or <cluster>-peer: they are the common names of the cluster's own server and peer certificates, and the server's is an etcd administrator; choose another user name"
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdClusterSpec   `json:"spec"`
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of EtcdClusters.
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdCluster{}, &EtcdClusterList{})
}
