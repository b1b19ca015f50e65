package v1alpha1

// Condition types of an EtcdCluster. They follow the Deployment convention, which kstatus
// understands together with status.observedGeneration.
const (
	// ConditionAvailable is True while the cluster has quorum and serves clients.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the operator is changing the cluster (bootstrap,
	// membership change, rolling replacement of members).
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True while something needs attention: an unhealthy member, a member
	// whose data was lost, a cluster-ID mismatch.
	ConditionDegraded = "Degraded"
	// ConditionAlarm is True while etcd has raised an alarm (NOSPACE, CORRUPT). Alarms are the
	// cluster's: every member reports them, and they do not make a member unhealthy.
	ConditionAlarm = "Alarm"
	// ConditionCertificatesValid is False while a certificate of the cluster expires soon
	// (within a quarter of the certificate lifetime, at most 21 days) or has expired.
	ConditionCertificatesValid = "CertificatesValid"
	// ConditionHibernated is True while spec.hibernate is true and no member pod is left; it
	// is set only once hibernation was asked for.
	ConditionHibernated = "Hibernated"
)

// Reasons of the Hibernated condition; Available and Degraded carry ReasonHibernated and
// ReasonWaking too, since an outage the user asked for is no failure.
const (
	// ReasonHibernating (False): spec.hibernate is true and member pods are being stopped, one
	// at a time, the leader last.
	ReasonHibernating = "Hibernating"
	// ReasonHibernated (True): every member pod is stopped; volumes, Secrets, Services and
	// membership are kept.
	ReasonHibernated = "Hibernated"
	// ReasonWaking (False): spec.hibernate went back to false; the members restart from their
	// volumes and the cluster waits for quorum.
	ReasonWaking = "Waking"
	// ReasonAwake (False): the woken cluster has quorum and a leader again.
	ReasonAwake = "Awake"
)

// Reasons of the CertificatesValid condition.
const (
	ReasonCertificatesValid   = "Valid"
	ReasonCertificateExpiring = "ExpiringSoon"
	ReasonCertificateExpired  = "Expired"
)

// Reasons of the Alarm condition (NoSpace and Corrupt are also Degraded reasons).
const (
	ReasonNoAlarm = "NoAlarm"
	// ReasonNoSpace: etcd raised NOSPACE; clients can read and delete but not write.
	ReasonNoSpace = "NoSpace"
	// ReasonCorrupt: etcd raised CORRUPT: a member's data differs from its peers'.
	ReasonCorrupt = "Corrupt"
)

// Reasons of the Available condition.
const (
	// ReasonQuorumHealthy: a quorum of voters is healthy and a leader is elected.
	ReasonQuorumHealthy = "QuorumHealthy"
	// ReasonNoLeader: a quorum is healthy but etcd is still electing a leader.
	ReasonNoLeader = "NoLeader"
	// ReasonQuorumLost: fewer than a quorum of voters is healthy; clients cannot write.
	ReasonQuorumLost = "QuorumLost"
)

// Reasons the planner gives for its step (Progressing), or for a halt or a risk (Degraded).
const (
	ReasonClusterIDMismatch = "ClusterIDMismatch"
	ReasonUnknownMember     = "UnknownMember"
	ReasonBootstrapping     = "Bootstrapping"
	ReasonEtcdUnreachable   = "EtcdUnreachable"
	ReasonMemberUnhealthy   = "MemberUnhealthy"
	ReasonQuorumAtRisk      = "QuorumAtRisk"
	ReasonMemberDataLost    = "MemberDataLost"
	ReasonTerminating       = "WaitingForTermination"
	ReasonScaling           = "Scaling"
	ReasonRollingUpdate     = "RollingUpdate"
	ReasonMembersCreating   = "CreatingMembers"
	ReasonGarbage           = "RemovingLeftovers"
	ReasonPaused            = "Paused"
	ReasonSettled           = "Settled"
	// ReasonReplacingMember: a member losing its volume is replaced add-first.
	ReasonReplacingMember = "ReplacingMember"
	// ReasonMemberCorrupt: the operator's consistency check found a voter whose data differ
	// from the majority's (HashKV at one revision); it is replaced add-first.
	ReasonMemberCorrupt = "MemberCorrupt"
	// ReasonDataInconsistent: the voters' data differ and no majority agrees; the operator
	// halts, since replacing any member could keep the bad data.
	ReasonDataInconsistent = "DataInconsistent"
	// ReasonMigratingStorage: spec.storage changed; volumes are expanded, or members move to
	// new volumes add-first.
	ReasonMigratingStorage = "MigratingStorage"
	// ReasonPodEnded: a member's pod ended (Failed or Succeeded) and is replaced.
	ReasonPodEnded = "PodEnded"
	// ReasonLearnerStuck: a learner did not start or catch up in time and is removed.
	ReasonLearnerStuck = "LearnerStuck"
	// ReasonRolloutStuck: the first member given a new spec does not become healthy; the
	// rollout goes no further until the spec is corrected or reverted.
	ReasonRolloutStuck = "RolloutStuck"
	// ReasonVersionChangeRefused: spec.version breaks etcd's upgrade rules or names a release
	// the operator does not know, or a member runs another version than its spec says.
	ReasonVersionChangeRefused = "VersionChangeRefused"
	// ReasonRetainedVolumes: volumes of an earlier EtcdCluster of the same name exist.
	ReasonRetainedVolumes = "RetainedVolumes"
	// ReasonAdoptingVolumes: the cluster restarts from retained volumes (spec.adoptRetainedVolumes).
	ReasonAdoptingVolumes = "AdoptingVolumes"
	// ReasonRecovery: a forced recovery from permanent quorum loss (spec.recovery).
	ReasonRecovery = "Recovery"
	// ReasonDefragmenting: spec.maintenance.defrag or defragNow returns free pages, one member
	// at a time.
	ReasonDefragmenting = "Defragmenting"
	// ReasonMovingLeader: leadership moves as spec.maintenance.moveLeader asks.
	ReasonMovingLeader = "MovingLeader"
	// ReasonLeaderMoveRefused: spec.maintenance.moveLeader cannot be met (its member is no
	// healthy voter, or no other voter exists); status.maintenance.moveLeader says why.
	ReasonLeaderMoveRefused = "LeaderMoveRefused"
	// ReasonJoining: the operator moves a running cluster in (spec.bootstrap.join).
	ReasonJoining = "Joining"
	// ReasonJoinRefused: the external cluster cannot be joined safely (it does not answer,
	// a member is unhealthy, it runs another etcd minor release, ...); nothing was changed.
	ReasonJoinRefused = "JoinRefused"
	// ReasonWaitingForGoAhead: the operator's members vote; the external members are removed
	// once spec.bootstrap.join.removeExternalMembers is true.
	ReasonWaitingForGoAhead = "WaitingForGoAhead"
	// ReasonExternalMemberUnhealthy: an external member does not answer or has no leader;
	// membership changes wait.
	ReasonExternalMemberUnhealthy = "ExternalMemberUnhealthy"
	// ReasonJoinAborting: the EtcdCluster was deleted before its join completed; the operator
	// removes its own members from the external cluster, one at a time, before the EtcdCluster
	// and its pods go (FinalizerJoin).
	ReasonJoinAborting = "JoinAborting"
	// ReasonJoinAbortBlocked: the abort of a join cannot go on (the external cluster's member
	// list cannot be read, or an external member is unhealthy); the EtcdCluster stays until it
	// can, or until FinalizerJoin is removed by hand.
	ReasonJoinAbortBlocked = "JoinAbortBlocked"
	// ReasonPeersUnreachable: a member joining the cluster cannot reach peers it must reach
	// (the launcher refused to start etcd and names them), or a peer cannot reach it; it
	// does not vote, and membership changes wait.
	ReasonPeersUnreachable = "PeersUnreachable"
	// ReasonDiskFull: a member's volume has too little room for etcd to start (the launcher
	// refused, DiskFull); its data is intact, and raising spec.storage.size brings it back.
	ReasonDiskFull = "DiskFull"
)

// Phases of a forced recovery (status.recovery.phase).
const (
	// RecoveryRestarting: the surviving member restarts with --force-new-cluster.
	RecoveryRestarting = "Restarting"
	// RecoveryRejoining: the survivor leads alone; its pod is replaced by an ordinary one.
	RecoveryRejoining = "Rejoining"
	// RecoveryCompleted: the survivor runs as an ordinary member; the cluster grows back.
	RecoveryCompleted = "Completed"
	// RecoveryNotNeeded: recovery was asked for while the cluster had quorum; nothing was done.
	RecoveryNotNeeded = "NotNeeded"
)

// Reasons of the Progressing and Degraded conditions that the controller sets itself.
const (
	// ReasonStepFailed (Progressing): the planned step returned an error and is retried.
	ReasonStepFailed = "StepFailed"
	// ReasonAllMembersHealthy (Degraded=False): nothing needs attention.
	ReasonAllMembersHealthy = "AllMembersHealthy"
	// ReasonUnknown stands in for a step that gave no reason (a condition needs one).
	ReasonUnknown = "Unknown"

	// Degraded reasons of a pass that stopped before it could plan.
	// ReasonInvalidSpec: the spec holds what the schema cannot check (label and annotation keys).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonImageNotAllowed: the etcd image (spec.image, or the version's) or the launcher is
	// outside the operator's image policy (--allowed-image-registries,
	// --require-image-digests); nothing is started or changed until it is within.
	ReasonImageNotAllowed  = "ImageNotAllowed"
	ReasonTLSNotReady      = "TLSNotReady"
	ReasonServicesNotReady = "ServicesNotReady"
	// ReasonNetworkPolicyNotReady: the cluster's NetworkPolicy could not be written (the API
	// server's message names what in spec.networkPolicy it refused).
	ReasonNetworkPolicyNotReady = "NetworkPolicyNotReady"
	ReasonObserveFailed         = "ObserveFailed"
	ReasonRecordClusterIDFailed = "RecordClusterIDFailed"
)

// Reasons of the Events the operator records on an EtcdCluster besides condition changes
// (whose Events carry the condition's reason).
const (
	EventClusterBootstrapped = "ClusterBootstrapped"
	EventClusterIDRecovered  = "ClusterIDRecovered"
	EventCertificateIssued   = "CertificateIssued"
	// EventCertificateRenewed: a generated certificate had a third of its lifetime left and
	// was replaced in its Secret.
	EventCertificateRenewed = "CertificateRenewed"
	// EventStatusRefused: the API server refused the cluster's status as invalid: a rule
	// of the CRD (one a newer CRD added, say) refuses the object as it is, so no status can be
	// recorded until the spec is corrected. The message says which rule.
	EventStatusRefused = "StatusRefused"
	// EventSecretCollision: a certificate Secret the cluster uses was made by another cluster
	// (their Secret names collide). A new cluster stops on it (TLSNotReady); a cluster that
	// formed with it before the operator checked keeps it, and this Event says so.
	EventSecretCollision = "SecretCollision"
	// EventUsersChanged: etcd's users, roles or authentication were changed to follow
	// spec.users, or a removed user's Secret was deleted.
	EventUsersChanged = "UsersChanged"
	// EventCARotation: a CA rotation (spec.tls.rotateCA) moved to a phase, or changed a Secret.
	EventCARotation = "CARotation"
	// EventNetworkPolicyDeleted: spec.networkPolicy.enabled was turned off.
	EventNetworkPolicyDeleted = "NetworkPolicyDeleted"
	EventMemberAdded          = "MemberAdded"
	EventMemberPromoted       = "MemberPromoted"
	EventMemberRemoved        = "MemberRemoved"
	EventLeaderMoved          = "LeaderMoved"
	EventMemberRestarting     = "MemberRestarting"
	EventVolumeDeleted        = "VolumeDeleted"
	EventVolumeExpanded       = "VolumeExpanded"
	EventPodReplaced          = "PodReplaced"
	EventAlarmDisarmed        = "AlarmDisarmed"
	EventDefragmented         = "Defragmented"
	// EventLeaderMoveRefused (Warning): spec.maintenance.moveLeader was refused; the message
	// says why and what to do.
	EventLeaderMoveRefused = "LeaderMoveRefused"
	EventVolumesAdopted    = "VolumesAdopted"
	EventRecoveryStarted   = "RecoveryStarted"
	EventRecoveryProgress  = "RecoveryProgress"
	// EventJoinStarted: the operator recorded the external cluster's ID and members and
	// starts adding its own (spec.bootstrap.join).
	EventJoinStarted = "JoinStarted"
	// EventJoinCompleted: the last external member was removed.
	EventJoinCompleted = "JoinCompleted"
	// EventJoinAborted: the EtcdCluster was deleted mid-join and none of the operator's members
	// is left in the external cluster: FinalizerJoin is removed, and the pods and volumes go.
	EventJoinAborted        = "JoinAborted"
	EventOwnershipAcquired  = "OwnershipAcquired"
	EventOwnershipTakenOver = "OwnershipTakenOver"
	EventOwnedElsewhere     = "OwnedElsewhere"
	// EventOwnershipLost: the install lost a claim it held (its Lease was deleted, or written by
	// another install): it stopped acting on the cluster in the middle of a pass.
	EventOwnershipLost = "OwnershipLost"
	// EventLeftoverRemoved: an object of one of the cluster's names was still there, controlled
	// by an earlier EtcdCluster of the same name (deleted, its dependents not yet collected):
	// the operator deleted it to create the cluster's own.
	EventLeftoverRemoved = "LeftoverRemoved"
	// EventServiceDrainRefused: the API server refused to relabel a member pod (an admission
	// policy on pod labels), so the member is not taken out of the client Service before it is
	// stopped, or pods of an earlier release could not be labelled and the client Service keeps
	// its selector.
	EventServiceDrainRefused = "ServiceDrainRefused"
	// EventDefragScheduleLimited (Warning): spec.maintenance.defrag.schedule runs more often
	// than the operator's --min-defrag-interval; scheduled rounds run no more often than that.
	EventDefragScheduleLimited = "DefragScheduleLimited"
)

// MembershipEvents are the Event reasons that mark a change of the cluster's membership or of
// a member's pod: the conformance suite draws them on its timelines.
var MembershipEvents = []string{
	EventClusterBootstrapped, EventMemberAdded, EventMemberPromoted, EventMemberRemoved, EventLeaderMoved, EventMemberRestarting,
	EventPodReplaced, EventAlarmDisarmed, EventDefragmented, EventRecoveryStarted, EventRecoveryProgress, EventJoinStarted, EventJoinCompleted,
	EventJoinAborted,
}

// Conditions of an EtcdBackup and an EtcdBackupSchedule.
const (
	// ConditionBackupComplete (EtcdBackup): True once the snapshot is stored and verified.
	ConditionBackupComplete = "Complete"
	// ConditionScheduleReady (EtcdBackupSchedule): the schedule is valid and its last backup
	// completed.
	ConditionScheduleReady = "Ready"
	// ConditionRestoreVerified (EtcdBackupSchedule): the last restore drill restored the last
	// backup and found the keyspace it recorded.
	ConditionRestoreVerified = "RestoreVerified"
	// ConditionArchiving (EtcdBackupSchedule with spec.archive): the archiver runs and has
	// stored every change older than the schedule's maxLag and a margin.
	ConditionArchiving = "Archiving"
)

// Reasons of the backup conditions.
const (
	// ReasonWaitingForCluster: the EtcdCluster does not exist, has no recorded cluster ID, is
	// not Available, or is managed by another Quorate install.
	ReasonWaitingForCluster = "WaitingForCluster"
	// ReasonBackupRunning: the backup Job runs.
	ReasonBackupRunning = "BackupRunning"
	// ReasonBackupStored: the snapshot is stored and was read back verified.
	ReasonBackupStored = "Stored"
	// ReasonBackupFailed: the backup Job failed; the message says why.
	ReasonBackupFailed = "BackupFailed"
	// ReasonIdentityNotFound: storage.identity names a ServiceAccount the namespace does not
	// have; the backup failed without starting a Job (which could never create its pod).
	ReasonIdentityNotFound = "IdentityNotFound"
	// ReasonStorageNotAllowed: the storage is not a location the operator's storage policy
	// allows (--allowed-storage), or uses the ambient identity the policy does not allow; a
	// backup fails, a schedule takes none, a restore waits.
	ReasonStorageNotAllowed = "StorageNotAllowed"
	// ReasonJobRefused: the API server refused the backup's Job (invalid, or an admission
	// policy); the backup failed, and the message carries the refusal.
	ReasonJobRefused = "JobRefused"
	// ReasonInvalidSchedule: spec.schedule does not parse.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonLastBackupCompleted and ReasonLastBackupFailed: the outcome of the schedule's
	// newest finished backup.
	ReasonLastBackupCompleted = "LastBackupCompleted"
	ReasonLastBackupFailed    = "LastBackupFailed"
	// ReasonNoBackupYet: the schedule has not completed a backup.
	ReasonNoBackupYet = "NoBackupYet"
	// ReasonDrilling: a restore drill is restoring the newest backup.
	ReasonDrilling = "Drilling"
	// ReasonDrillPassed and ReasonDrillFailed: the last drill's outcome.
	ReasonDrillPassed = "DrillPassed"
	ReasonDrillFailed = "DrillFailed"
	// Archiving reasons. ReasonArchiveCurrent: the archive keeps up. ReasonArchiveStarting:
	// the archiver's pod is not running or has not reported yet. ReasonArchiveBehind: changes
	// older than the bound wait unstored (the store is slow or refuses; the message carries
	// the archiver's last error). ReasonArchiveWaiting: the cluster cannot be archived yet
	// (not Available, another install holds it).
	ReasonArchiveCurrent  = "ArchiveCurrent"
	ReasonArchiveStarting = "ArchiveStarting"
	ReasonArchiveBehind   = "ArchiveBehind"
	ReasonArchiveWaiting  = "ArchiveWaiting"
	// Why a backup failed at its store (EtcdBackup, Complete=False), set by quorate-backup
	// (internal/backup/blobstore says what to do for each); other failures are BackupFailed.
	// ReasonStoreCertificateUntrusted: an authority the pod does not trust signs the store's
	// certificate (storage.caBundle names one).
	ReasonStoreCertificateUntrusted = "StoreCertificateUntrusted"
	// ReasonStoreCertificateInvalid: the store's certificate is not valid for its endpoint
	// (another host name, expired).
	ReasonStoreCertificateInvalid = "StoreCertificateInvalid"
	// ReasonStoreCredentialsRefused: the store refused the credentials.
	ReasonStoreCredentialsRefused = "StoreCredentialsRefused"
	// ReasonStoreBucketNotFound: the bucket does not exist; ReasonStoreObjectNotFound: the
	// object does not.
	ReasonStoreBucketNotFound = "StoreBucketNotFound"
	ReasonStoreObjectNotFound = "StoreObjectNotFound"
	// ReasonStoreOutOfSpace: the store is out of space or over its quota.
	ReasonStoreOutOfSpace = "StoreOutOfSpace"
	// ReasonStoreUnreachable: the store's endpoint does not answer.
	ReasonStoreUnreachable = "StoreUnreachable"
	// ReasonStoreTransferCutOff: a transfer ended before the object's end.
	ReasonStoreTransferCutOff = "StoreTransferCutOff"
	// ReasonStoreRequestRefused: the store refused the request (the URL's parameters).
	ReasonStoreRequestRefused = "StoreRequestRefused"
	// ReasonSnapshotDamaged: the stored object is not the snapshot that was written
	// (checksum or length mismatch).
	ReasonSnapshotDamaged = "SnapshotDamaged"
	// ReasonRestoreSourceNotReady (EtcdCluster, Degraded): spec.bootstrap.fromBackup names an
	// EtcdBackup that is not Completed; the cluster is not created until it is.
	ReasonRestoreSourceNotReady = "RestoreSourceNotReady"
)

// StoreReasons are the reasons of failures at a store, which a backup's result may name.
var StoreReasons = []string{ReasonStoreCertificateUntrusted, ReasonStoreCertificateInvalid, ReasonStoreCredentialsRefused,
	ReasonStoreBucketNotFound, ReasonStoreObjectNotFound, ReasonStoreOutOfSpace, ReasonStoreUnreachable,
	ReasonStoreTransferCutOff, ReasonStoreRequestRefused, ReasonSnapshotDamaged}

// Events of backups, schedules and restores.
const (
	EventBackupStarted   = "BackupStarted"
	EventBackupCompleted = "BackupCompleted"
	EventBackupFailed    = "BackupFailed"
	// EventBackupsExpired: a schedule's retention deleted backups.
	EventBackupsExpired = "BackupsExpired"
	// EventArchivePruned: a schedule's retention deleted archive segments no kept snapshot
	// needs.
	EventArchivePruned = "ArchivePruned"
	// EventRetentionFailed: a stored backup's retention (of snapshots or of the archive)
	// failed; the next backup tries again.
	EventRetentionFailed = "RetentionFailed"
	EventDrillStarted    = "DrillStarted"
	EventDrillPassed     = "DrillPassed"
	EventDrillFailed     = "DrillFailed"
	// EventArchiverStarted (EtcdBackupSchedule): the schedule's archiver was created.
	EventArchiverStarted = "ArchiverStarted"
	// EventRestoring (EtcdCluster): the bootstrap members restore a backup.
	EventRestoring = "RestoringBackup"
)

// Fencing members at the user's request (the EtcdCluster's etcd.quorate.dev/fence-members
// annotation): their etcd is stopped while their pods stay. Not to be confused with the
// volumes a forced recovery fences (spec.recovery).
const (
	// ConditionMembersFenced is True while members are fenced at the user's request, with
	// their names; False when none is. It is set once the annotation has been used.
	ConditionMembersFenced = "MembersFenced"
	// ReasonMembersFenced: the members the annotation names are fenced.
	ReasonMembersFenced = "Fenced"
	// ReasonNoMembersFenced: no member is fenced.
	ReasonNoMembersFenced = "NoneFenced"
	// ReasonFenceRefused: a name in the annotation is not fenced: it is no member of the
	// cluster, or fencing it would leave fewer healthy, unfenced voters than a quorum.
	ReasonFenceRefused = "FenceRefused"
	// ReasonFencing and ReasonUnfencing are the planner's steps that stop a member's etcd
	// and start it again.
	ReasonFencing   = "FencingMember"
	ReasonUnfencing = "UnfencingMember"
	// ReasonWaitingForUnfence: membership changes, rolling updates, repairs and recoveries
	// wait while a member is fenced.
	ReasonWaitingForUnfence = "WaitingForUnfence"

	EventMemberFenced   = "MemberFenced"
	EventMemberUnfenced = "MemberUnfenced"
)
