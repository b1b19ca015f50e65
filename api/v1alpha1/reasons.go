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
	ReasonTLSNotReady           = "TLSNotReady"
	ReasonServicesNotReady      = "ServicesNotReady"
	ReasonObserveFailed         = "ObserveFailed"
	ReasonRecordClusterIDFailed = "RecordClusterIDFailed"
)

// Reasons of the Events the operator records on an EtcdCluster besides condition changes
// (whose Events carry the condition's reason).
const (
	EventClusterBootstrapped = "ClusterBootstrapped"
	EventClusterIDRecovered  = "ClusterIDRecovered"
	EventCertificateIssued   = "CertificateIssued"
	EventMemberAdded         = "MemberAdded"
	EventMemberPromoted      = "MemberPromoted"
	EventMemberRemoved       = "MemberRemoved"
	EventLeaderMoved         = "LeaderMoved"
	EventMemberRestarting    = "MemberRestarting"
	EventVolumeDeleted       = "VolumeDeleted"
)

// MembershipEvents are the Event reasons that mark a change of the cluster's membership or of
// a member's pod: the conformance suite draws them on its timelines.
var MembershipEvents = []string{
	EventClusterBootstrapped, EventMemberAdded, EventMemberPromoted, EventMemberRemoved, EventLeaderMoved, EventMemberRestarting,
}
