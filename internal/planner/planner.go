package planner

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// Member is everything observed about one member name, from etcd and from Kubernetes.
type Member struct {
	Name  string
	Index int

	// From the etcd member list.
	InEtcd  bool
	ID      uint64
	Started bool // the member has run at least once (etcd knows its name)
	Learner bool

	// From asking the member itself (and only when it answered as this member's ID).
	Reachable   bool
	ClusterID   uint64
	HasLeader   bool
	Version     string // etcd release it runs
	Revision    int64  // the revision it has applied
	DBSize      int64  // bytes of its backend file
	DBSizeInUse int64  // bytes of its backend in use (the rest is free pages defragmentation returns)

	// From Kubernetes.
	HasPod         bool
	PodTerminating bool
	// TerminatingFor is how long the pod has been terminating (0 when it is not).
	TerminatingFor time.Duration
	PodCurrent     bool // the Pod's spec hash matches the desired one
	// PodFailed: the pod ended (phase Failed or Succeeded, after an eviction or a node
	// shutdown); its containers never run again, so it must be replaced.
	PodFailed bool
	// PodProblem says why the pod does not run etcd (image pull error, crash loop,
	// unschedulable, stuck terminating, another member answering at its address); "" if none.
	PodProblem string
	// PodAge is how long ago the pod was created.
	PodAge time.Duration
	// PodForcesNewCluster: the pod starts etcd with --force-new-cluster (recovery).
	PodForcesNewCluster bool
	// DataDirLost: the launcher refused to start because the volume lost the member's data.
	DataDirLost bool
	// ForeignData: the launcher refused to start because the volume holds another cluster's data.
	ForeignData bool
	// PeersUnreachable: why the member cannot join (the launcher could not reach a peer it
	// must reach, and did not start etcd); "" if nothing says so.
	PeersUnreachable string
	// DiskFull: the launcher refused to start etcd because the volume is (nearly) full, and
	// says how full; "" if nothing says so.
	DiskFull string
	// CorruptAtStart: etcd's initial corruption check ended the member's last start, and its
	// etcd is not running (the launcher's report); CorruptPeers are the etcd IDs of the peers
	// whose data differed from its own.
	CorruptAtStart bool
	CorruptPeers   []uint64
	// Unpublished: the operator took the pod out of the client Service (names.LabelServing
	// "false") UnpublishedFor ago, to stop it.
	Unpublished    bool
	UnpublishedFor time.Duration
	// InService: the client Service's EndpointSlices still list the pod (read only while it
	// is unpublished).
	InService bool
	// DrainRefused: the API server refused to take the pod out of the client Service (an
	// admission policy on pod labels): it is stopped without.
	DrainRefused bool
	// ReadyFor is how long the pod has been Ready (0 when it is not).
	ReadyFor time.Duration
	// RunningFor is how long the etcd container (the launcher, then etcd) has been running (0
	// when it is not).
	RunningFor time.Duration
	// ServedSinceStart: the etcd container still runs, and its pod has been Ready since the
	// container last started. Such a member that is not ready now most likely lost its
	// readiness to the cluster (no leader, a partition), not to its pod's spec.
	ServedSinceStart bool
	// UnreadyFor is how long a pod that served since its start (ServedSinceStart) has not been
	// Ready (0 otherwise).
	UnreadyFor     time.Duration
	HasPVC         bool
	PVCTerminating bool
	PVCHasData     bool // the PVC is annotated with the cluster ID: it has held member data
	// Fenced is the forced recovery (token) that fenced this member's volume: it never runs
	// again ("" when not fenced).
	Fenced string
	// RecoveredBy is the forced recovery (token) that restarted this member alone ("" when
	// none did).
	RecoveredBy string
	// VolumeOutdated: the PVC does not match spec.storage and cannot be made to (another
	// StorageClass, or too small in a class that cannot expand): the member moves to a new
	// volume, add-first.
	VolumeOutdated bool
	// VolumeExpand: the PVC is smaller than spec.storage.size in a class that expands volumes.
	VolumeExpand bool
	// VolumeResizePending: the volume was expanded, and its file system grows when the pod
	// restarts.
	VolumeResizePending bool
	// Age is how long ago the member's first object (PVC or Pod) was created.
	Age time.Duration
	// UserFenced: the member's pod carries names.AnnotationStopEtcd, a fence the user asked
	// for (userfence.go); its etcd is stopped, and it is no failure.
	UserFenced bool
	// LauncherFences: the pod's launcher acts on names.AnnotationStopEtcd (a pod created by a
	// release before fencing does not).
	LauncherFences bool
}

// Healthy: reachable as itself, of the right cluster, following a leader. Alarms are the
// cluster's, not a member's, and do not make a member unhealthy.
func (m Member) Healthy(clusterID uint64) bool {
	return m.Reachable && m.ClusterID == clusterID && m.HasLeader
}

// dataLost: a member that has run lost its volume or its data, or is losing its volume.
func (m Member) dataLost() string {
	switch {
	case !m.Started:
		return ""
	case !m.HasPVC:
		return "its PersistentVolumeClaim is gone"
	case m.PVCTerminating:
		return "its PersistentVolumeClaim is being deleted"
	case m.DataDirLost:
		return "its data directory is gone from its volume"
	}
	return ""
}

// Deadlines bound how long a member may take before the operator reports it or gives up on it.
type Deadlines struct {
	// MemberStart: a member pod that has not become healthy this long after its creation is
	// reported as stuck (sooner when its pod shows why, such as an image pull error).
	MemberStart time.Duration
	// Learner: a learner not promoted this long after its first object was created is removed
	// and added again.
	Learner time.Duration
	// Terminating: a pod terminating this long (its node does not answer) no longer holds up
	// the steps that do not need it gone.
	Terminating time.Duration
}

// DefaultDeadlines are the operator's defaults.
var DefaultDeadlines = Deadlines{MemberStart: 3 * time.Minute, Learner: 10 * time.Minute, Terminating: 2 * time.Minute}

// Recovery is a forced recovery from permanent quorum loss.
type Recovery struct {
	// Requested is spec.recovery.forceNewCluster: a token the user sets to ask for one recovery.
	Requested string
	// Token is the token of the last recovery the operator started (status.recovery.token).
	Token string
	// Phase of that recovery: v1alpha1.RecoveryRestarting, RecoveryRejoining, RecoveryCompleted
	// or RecoveryNotNeeded.
	Phase string
	// Member restarted as the single member of the new cluster.
	Member string
}

// State is the snapshot the planner decides from.
type State struct {
	Cluster  string
	Replicas int
	Paused   bool
	// Hibernate is spec.hibernate: every member pod stops, and nothing else changes.
	Hibernate bool
	// Waking: spec.hibernate went back to false and the cluster has not had quorum since.
	Waking    bool
	ClusterID uint64 // recorded cluster ID, 0 before bootstrap
	// Version is spec.version.
	Version string
	// Image is spec.image ("" for the operator's image of the version).
	Image string
	// QuotaBytes is spec.etcd.quotaBackendBytes.
	QuotaBytes int64
	// EtcdReachable: a member list was read, so InEtcd/ID/Started/Learner are meaningful.
	EtcdReachable bool
	// LeaderID of the cluster, 0 when unknown.
	LeaderID uint64
	// Alarms raised in the cluster (NOSPACE, CORRUPT), as etcd lists them.
	Alarms []string
	// CorruptMembers are the members CORRUPT alarms were raised for (AlarmMember).
	CorruptMembers []string
	// Consistency is the last complete comparison of the voters' data (nil: none yet).
	Consistency *Consistency
	// BootstrapSize is the size recorded on existing bootstrap objects, 0 when there are none.
	BootstrapSize int
	// UnknownMembers are etcd members whose peer URL the operator did not create.
	UnknownMembers []string
	// RetainedVolumes are PVCs of members of an earlier EtcdCluster of the same name, kept
	// when it was deleted; AdoptVolumes is spec.adoptRetainedVolumes.
	RetainedVolumes []string
	AdoptVolumes    bool
	Members         []Member
	// RollSettle is how long every member's pod must have been Ready before a rolling update
	// replaces the next one (0: no wait). Clients reconnect to a replaced member with
	// exponential back-off; replacing members back to back can leave every connection of a
	// client backing off at once, an outage though the cluster never lost quorum.
	RollSettle time.Duration
	Deadlines  Deadlines
	Recovery   Recovery
	// Defrag is spec.maintenance.defrag.
	Defrag Defrag
	// DefragNow is spec.maintenance.defragNow while its round has not completed (nil
	// otherwise); MoveLeaderNow is spec.maintenance.moveLeader while it has not been answered.
	DefragNow     *DefragRequest
	MoveLeaderNow *LeaderRequest
	// Join is spec.bootstrap.join until the join completes (nil otherwise).
	Join *Join
	// Now is when the state was observed.
	Now time.Time
	// FenceRequested are the members the user asks to fence (names.AnnotationFenceMembers),
	// in the annotation's order (userfence.go).
	FenceRequested []string
}

// Kind is what to do next.
type Kind string

const (
	None       Kind = "None"       // steady state
	Wait       Kind = "Wait"       // nothing to do until something changes
	Halt       Kind = "Halt"       // unsafe to continue: a human must look
	Bootstrap  Kind = "Bootstrap"  // create the bootstrap members' PVCs and Pods
	CreatePVC  Kind = "CreatePVC"  //
	CreatePod  Kind = "CreatePod"  //
	DeletePod  Kind = "DeletePod"  //
	DeletePVC  Kind = "DeletePVC"  //
	AddLearner Kind = "AddLearner" // MemberAddAsLearner
	Promote    Kind = "Promote"    // MemberPromote
	Remove     Kind = "Remove"     // MemberRemove
	MoveLeader Kind = "MoveLeader" // hand leadership to Target
	// AdoptVolumes takes over the retained volumes (State.RetainedVolumes).
	AdoptVolumes Kind = "AdoptVolumes"
	// ExpandVolume asks for a larger volume for Member (spec.storage.size).
	ExpandVolume Kind = "ExpandVolume"
	// Disarm clears the cluster's alarms.
	Disarm Kind = "Disarm"
	// Defragment returns a member's free pages to the file system.
	Defragment Kind = "Defragment"
	// Unpublish takes Member's pod out of the client Service before it is stopped.
	Unpublish Kind = "Unpublish"
	// Publish puts Member's pod back into the client Service.
	Publish Kind = "Publish"
	// Fence marks Member's volume as fenced by the recovery Action.Token before the survivor
	// is forced: it never runs again.
	Fence Kind = "Fence"
	// MarkRecovered marks the survivor's volume with the recovery's Action.Token before it is
	// forced: the token is not acted on again if status is lost.
	MarkRecovered Kind = "MarkRecovered"
	// StartRecovery records a forced recovery from Member and stops its pod, which comes back
	// with --force-new-cluster.
	StartRecovery Kind = "StartRecovery"
	// RecoveryPhase records that a forced recovery reached Action.Phase.
	RecoveryPhase Kind = "RecoveryPhase"
	// StartJoin records the external cluster's ID and members (spec.bootstrap.join).
	StartJoin Kind = "StartJoin"
	// Finish ends the abort of a join (PlanAbort): none of the operator's members is left in
	// the external cluster, and the EtcdCluster may go.
	Finish Kind = "Finish"
)

// Action is the planner's decision.
type Action struct {
	Kind Kind
	// Member is the member acted on (for Bootstrap, empty: Members lists them).
	Member string
	// Members for Bootstrap: the names of all bootstrap members, in order.
	Members []string
	// ID of the etcd member acted on (Promote, Remove) or leader to move from (MoveLeader).
	ID uint64
	// Target of MoveLeader.
	Target     uint64
	TargetName string
	// RequireData for CreatePod: the member has run, so its pod must find data on its volume.
	RequireData bool
	// ForceNewCluster for CreatePod: start the member as the single member of a new cluster
	// that keeps its data and cluster ID (a forced recovery).
	ForceNewCluster bool
	// Revision for StartRecovery: what the surviving member has applied.
	Revision int64
	// Phase for RecoveryPhase; for AnswerMoveLeader, the answer (v1alpha1.LeaderMoveRefused
	// or LeaderMoveAlreadyLeader).
	Phase string
	// Token for Fence and MarkRecovered: the recovery that fences or restarts the member. For
	// Defragment and MoveLeader, the spec.maintenance.defragNow or moveLeader request the step
	// answers ("" for a step of the operator's own); for AnswerMoveLeader, the request answered.
	Token string
	// UserFenced for CreatePod: the pod is created with names.AnnotationStopEtcd (the member
	// is fenced at the user's request, userfence.go).
	UserFenced bool
	// Draining for Wait: the wait is the one for Member's endpoint to leave the client
	// Service before it is stopped (drainFromService).
	Draining bool
	// Retry for Wait: when the wait is known to end, if sooner than the usual re-check (a
	// rolling update waits out RollSettle to the moment, not to the next 5 s tick).
	Retry time.Duration
	// Attention: the step's reason is a problem that needs someone's attention (the
	// Degraded condition says so).
	Attention bool
	Reason    string
	Message   string
}

func (a Action) String() string {
	if a.Member != "" {
		return fmt.Sprintf("%s %s: %s", a.Kind, a.Member, a.Message)
	}
	return fmt.Sprintf("%s: %s", a.Kind, a.Message)
}

func (s State) byName(name string) (Member, bool) {
	for _, m := range s.Members {
		if m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}

func (s State) byID(id uint64) (Member, bool) {
	for _, m := range s.Members {
		if id != 0 && m.InEtcd && m.ID == id {
			return m, true
		}
	}
	return Member{}, false
}

func (s State) sorted() []Member {
	ms := slices.Clone(s.Members)
	sort.Slice(ms, func(i, j int) bool { return ms[i].Index < ms[j].Index })
	return ms
}

func (s State) voters() []Member {
	var v []Member
	for _, m := range s.sorted() {
		if m.InEtcd && !m.Learner {
			v = append(v, m)
		}
	}
	return v
}

// retiring are the voters to replace while they still serve: those losing their volume
// first, then those whose data diverged from the majority's, then those whose volume does not
// match spec.storage. They are replaced add-first, and removed only once their replacement is
// a voter.
func (s State) retiring() []Member {
	var losing, diverged, moving []Member
	for _, m := range s.voters() {
		switch {
		case !m.Healthy(s.ClusterID):
		case m.dataLost() != "":
			losing = append(losing, m)
		case s.divergence(m) != "":
			diverged = append(diverged, m)
		case m.VolumeOutdated:
			moving = append(moving, m)
		}
	}
	return append(append(losing, diverged...), moving...)
}

// why says why a retiring member is replaced.
func (s State) why(m Member) (reason, what string) {
	if m.dataLost() != "" {
		return v1alpha1.ReasonReplacingMember, "whose volume is being deleted"
	}
	if d := s.divergence(m); d != "" {
		return v1alpha1.ReasonMemberCorrupt, "because " + d
	}
	return v1alpha1.ReasonMigratingStorage, "whose volume does not match spec.storage"
}

// FreeName is the member name with the lowest index no etcd member, Pod or PVC uses.
func (s State) FreeName(name func(int) string) string {
	used := map[int]bool{}
	for _, m := range s.Members {
		used[m.Index] = true
	}
	for i := 0; ; i++ {
		if !used[i] {
			return name(i)
		}
	}
}

// rule is one step of the plan: it returns an action, or false to let the next rule decide.
type rule func(State) (Action, bool)

// Plan returns the next step. name maps an index to a member name.
func Plan(s State, name func(int) string) Action {
	return notePending(s, republish(s, plan(s, name)))
}

func plan(s State, name func(int) string) Action {
	if s.Paused {
		return Action{Kind: Wait, Reason: v1alpha1.ReasonPaused, Message: "spec.paused is true: the operator makes no changes; set it to false to resume"}
	}
	for _, r := range []rule{checkIdentity, checkVolumes, strayForcedPod, fencedPod} {
		if a, ok := r(s); ok {
			return a
		}
	}
	if a, ok := hibernate(s); ok {
		return a
	}
	if s.ClusterID == 0 && s.Join != nil {
		return planJoinStart(s)
	}
	if s.ClusterID == 0 {
		return planBootstrap(s, name)
	}
	// A larger volume asked for is asked for at once, whatever else waits: expanding a volume
	// needs no quorum, and a member whose disk is full comes back only so.
	if a, ok := expandVolumes(s); ok {
		return a
	}
	if a, ok := planUserFence(s); ok {
		return a
	}
	if a, ok := planRecovery(s); ok {
		return a
	}
	if !s.EtcdReachable {
		return wake(s, planUnreachable(s))
	}
	for _, r := range []rule{replaceGone, ensureObjects, collectGarbage, repairPods, expireLearners, gateConnected, gateHealth, gateExternal, haltDisagreement, changeMembership, handOver, rollPods, clearAlarms, moveLeaderNow, defragNow, defragment} {
		if a, ok := r(s); ok {
			return a
		}
	}
	return Action{Kind: None, Reason: v1alpha1.ReasonSettled, Message: fmt.Sprintf("%d healthy voting members", len(s.voters()))}
}
