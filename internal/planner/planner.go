package planner

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/quorum"
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

	// From asking the member itself.
	Reachable bool
	ClusterID uint64
	HasLeader bool
	Alarms    bool // the member reports errors such as NOSPACE

	// From Kubernetes.
	HasPod         bool
	PodTerminating bool
	PodCurrent     bool // the Pod's spec hash matches the desired one
	// DataDirLost: the launcher refused to start because the volume lost the member's data.
	DataDirLost bool
	// ForeignData: the launcher refused to start because the volume holds another cluster's data.
	ForeignData bool
	// ReadyFor is how long the pod has been Ready (0 when it is not).
	ReadyFor       time.Duration
	HasPVC         bool
	PVCTerminating bool
	PVCHasData     bool // the PVC is annotated with the cluster ID: it has held member data
}

// Healthy: reachable, of the right cluster, following a leader, without alarms.
func (m Member) Healthy(clusterID uint64) bool {
	return m.Reachable && m.ClusterID == clusterID && m.HasLeader && !m.Alarms
}

// dataLost: a member that has run lost its volume or its data.
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

// State is the snapshot the planner decides from.
type State struct {
	Cluster   string
	Replicas  int
	Paused    bool
	ClusterID uint64 // recorded cluster ID, 0 before bootstrap
	// EtcdReachable: a member list was read, so InEtcd/ID/Started/Learner are meaningful.
	EtcdReachable bool
	// LeaderID of the cluster, 0 when unknown.
	LeaderID uint64
	// BootstrapSize is the size recorded on existing bootstrap objects, 0 when there are none.
	BootstrapSize int
	// UnknownMembers are etcd members whose peer URL the operator did not create.
	UnknownMembers []string
	Members        []Member
	// RollSettle is how long every member's pod must have been Ready before a rolling update
	// replaces the next one (0: no wait). Clients reconnect to a replaced member with
	// exponential back-off; replacing members back to back can leave every connection of a
	// client backing off at once, an outage though the cluster never lost quorum.
	RollSettle time.Duration
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
	Reason      string
	Message     string
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

// Plan returns the next step. name maps an index to a member name.
func Plan(s State, name func(int) string) Action {
	if s.Paused {
		return Action{Kind: Wait, Reason: v1alpha1.ReasonPaused, Message: "spec.paused is true: the operator makes no changes; set it to false to resume"}
	}
	if a, stop := checkIdentity(s); stop {
		return a
	}
	if s.ClusterID == 0 {
		return planBootstrap(s, name)
	}
	if !s.EtcdReachable {
		return planUnreachable(s)
	}
	for _, step := range []func(State) (Action, bool){replaceLost, ensureObjects, collectGarbage, gateHealth, changeMembership, rollPods} {
		if a, ok := step(s); ok {
			return a
		}
	}
	return Action{Kind: None, Reason: v1alpha1.ReasonSettled, Message: fmt.Sprintf("%d healthy voting members", len(s.voters()))}
}

func checkIdentity(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if s.ClusterID != 0 && m.Reachable && m.ClusterID != s.ClusterID {
			return Action{Kind: Halt, Member: m.Name, Reason: v1alpha1.ReasonClusterIDMismatch,
				Message: fmt.Sprintf("member %s reports cluster ID %x but this cluster is %x: membership changes are stopped; find out where the member's data came from, then delete its Pod and PVC so it is replaced", m.Name, m.ClusterID, s.ClusterID)}, true
		}
		if m.ForeignData {
			return Action{Kind: Halt, Member: m.Name, Reason: v1alpha1.ReasonClusterIDMismatch,
				Message: fmt.Sprintf("member %s refused to start: its volume holds data of another etcd cluster; membership changes are stopped; delete its PVC if that data is not needed", m.Name)}, true
		}
	}
	if len(s.UnknownMembers) > 0 {
		return Action{Kind: Halt, Reason: v1alpha1.ReasonUnknownMember,
			Message: fmt.Sprintf("etcd has members the operator did not create (%v): membership changes are stopped; remove them with etcdctl member remove", s.UnknownMembers)}, true
	}
	return Action{}, false
}

func planBootstrap(s State, name func(int) string) Action {
	for _, m := range s.Members {
		if m.PVCHasData {
			// Status lost its cluster ID but a volume remembers it; the controller adopts it.
			return Action{Kind: Wait, Reason: v1alpha1.ReasonBootstrapping, Message: fmt.Sprintf("volume of %s holds data of an existing cluster: recovering its cluster ID instead of bootstrapping", m.Name)}
		}
	}
	size := s.BootstrapSize
	if size == 0 {
		size = s.Replicas
	}
	all := make([]string, size)
	missing := false
	for i := range all {
		all[i] = name(i)
		m, ok := s.byName(all[i])
		if !ok || !m.HasPVC || !m.HasPod {
			missing = true
		}
	}
	if missing {
		return Action{Kind: Bootstrap, Members: all, Reason: v1alpha1.ReasonBootstrapping,
			Message: fmt.Sprintf("creating the %d bootstrap members", size)}
	}
	return Action{Kind: Wait, Reason: v1alpha1.ReasonBootstrapping, Message: fmt.Sprintf("waiting for the %d bootstrap members to elect a leader", size)}
}

func planUnreachable(s State) Action {
	for _, m := range s.sorted() {
		if m.HasPVC && m.PVCHasData && !m.PVCTerminating && !m.HasPod {
			return Action{Kind: CreatePod, Member: m.Name, RequireData: true, Reason: v1alpha1.ReasonEtcdUnreachable,
				Message: fmt.Sprintf("etcd is unreachable; restarting member %s from its volume to restore quorum", m.Name)}
		}
	}
	return Action{Kind: Wait, Reason: v1alpha1.ReasonEtcdUnreachable, Message: "no member answers with quorum; waiting for members to come back (the operator recreates missing member pods from their volumes)"}
}

// replaceLost removes a started member whose data is gone, when the rest keep quorum.
func replaceLost(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if !m.InEtcd {
			continue
		}
		why := m.dataLost()
		if why == "" {
			continue
		}
		if !m.Learner {
			voters := s.voters()
			healthy := 0
			for _, v := range voters {
				if v.Name != m.Name && v.Healthy(s.ClusterID) {
					healthy++
				}
			}
			if healthy < quorum.Of(len(voters)-1) {
				return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonQuorumAtRisk,
					Message: fmt.Sprintf("member %s must be replaced because %s, but only %d other voters are healthy: waiting for them before removing it", m.Name, why, healthy)}, true
			}
		}
		if m.ID == s.LeaderID && m.Healthy(s.ClusterID) {
			// It still leads (its volume is going, not gone): hand leadership over first.
			if a, ok := moveLeaderAway(s, m, "before removing it"); ok {
				a.Reason = v1alpha1.ReasonMemberDataLost
				return a, true
			}
		}
		return Action{Kind: Remove, Member: m.Name, ID: m.ID, Reason: v1alpha1.ReasonMemberDataLost,
			Message: fmt.Sprintf("removing member %s because %s; a new member will take its place", m.Name, why)}, true
	}
	return Action{}, false
}

// ensureObjects gives every etcd member its PVC and Pod.
func ensureObjects(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if !m.InEtcd {
			continue
		}
		switch {
		case !m.HasPVC:
			// Only a member that never ran gets a fresh volume (replaceLost handles the others).
			return Action{Kind: CreatePVC, Member: m.Name, Reason: v1alpha1.ReasonMembersCreating, Message: "creating the volume of new member " + m.Name}, true
		case m.PVCTerminating:
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonTerminating, Message: "waiting for the volume of " + m.Name + " to be deleted"}, true
		case m.PodTerminating:
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonTerminating, Message: "waiting for the old pod of " + m.Name + " to terminate"}, true
		case !m.HasPod:
			return Action{Kind: CreatePod, Member: m.Name, RequireData: m.Started, Reason: v1alpha1.ReasonMembersCreating, Message: "creating the pod of member " + m.Name}, true
		}
	}
	return Action{}, false
}

// collectGarbage deletes Pods, then PVCs, of names that are no longer etcd members.
func collectGarbage(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if m.InEtcd {
			continue
		}
		if m.HasPod && !m.PodTerminating {
			return Action{Kind: DeletePod, Member: m.Name, Reason: v1alpha1.ReasonGarbage, Message: "deleting the pod of removed member " + m.Name}, true
		}
		if m.HasPVC && !m.HasPod && !m.PVCTerminating {
			return Action{Kind: DeletePVC, Member: m.Name, Reason: v1alpha1.ReasonGarbage, Message: "deleting the volume of removed member " + m.Name}, true
		}
	}
	return Action{}, false
}

// gateHealth stops membership changes and rollouts until every member is healthy.
func gateHealth(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if m.InEtcd && !m.Healthy(s.ClusterID) {
			what := "does not answer"
			switch {
			case m.Reachable && !m.HasLeader:
				what = "has no leader"
			case m.Reachable && m.Alarms:
				what = "reports an alarm"
			case !m.Started:
				what = "has not started yet"
			}
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonMemberUnhealthy,
				Message: fmt.Sprintf("member %s %s; membership changes wait until every member is healthy", m.Name, what)}, true
		}
	}
	return Action{}, false
}

func changeMembership(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if m.InEtcd && m.Learner {
			return Action{Kind: Promote, Member: m.Name, ID: m.ID, Reason: v1alpha1.ReasonScaling, Message: "promoting learner " + m.Name + " to voter"}, true
		}
	}
	voters := s.voters()
	switch {
	case len(voters) < s.Replicas:
		return Action{Kind: AddLearner, Reason: v1alpha1.ReasonScaling,
			Message: fmt.Sprintf("scaling up from %d to %d voting members", len(voters), s.Replicas)}, true
	case len(voters) > s.Replicas:
		victim := voters[len(voters)-1]
		if victim.ID == s.LeaderID {
			if a, ok := moveLeaderAway(s, victim, "before removing it"); ok {
				return a, true
			}
		}
		return Action{Kind: Remove, Member: victim.Name, ID: victim.ID, Reason: v1alpha1.ReasonScaling,
			Message: fmt.Sprintf("scaling down from %d to %d voting members: removing %s", len(voters), s.Replicas, victim.Name)}, true
	}
	return Action{}, false
}

func moveLeaderAway(s State, from Member, why string) (Action, bool) {
	for _, v := range s.voters() {
		if v.Name != from.Name && v.Healthy(s.ClusterID) {
			return Action{Kind: MoveLeader, Member: from.Name, ID: from.ID, Target: v.ID, TargetName: v.Name, Reason: v1alpha1.ReasonScaling,
				Message: fmt.Sprintf("moving leadership from %s to %s %s", from.Name, v.Name, why)}, true
		}
	}
	return Action{}, false
}

// rollPods replaces one outdated member pod: followers first, the leader last.
func rollPods(s State) (Action, bool) {
	var leader *Member
	ms := s.sorted()
	outdated := false
	for _, m := range ms {
		outdated = outdated || m.InEtcd && m.HasPod && !m.PodCurrent
	}
	if !outdated {
		return Action{}, false
	}
	for _, m := range ms {
		if m.InEtcd && m.HasPod && m.ReadyFor < s.RollSettle {
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonRollingUpdate,
				Message: fmt.Sprintf("waiting until the pod of %s has been ready for %s before replacing the next pod, so that clients reconnect to it first", m.Name, s.RollSettle)}, true
		}
	}
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if !m.InEtcd || !m.HasPod || m.PodCurrent {
			continue
		}
		if m.ID == s.LeaderID && len(s.voters()) > 1 {
			leader = &ms[i]
			continue
		}
		return Action{Kind: DeletePod, Member: m.Name, Reason: v1alpha1.ReasonRollingUpdate,
			Message: "replacing the pod of " + m.Name + " to apply the new spec"}, true
	}
	if leader != nil {
		if a, ok := moveLeaderAway(s, *leader, "before replacing its pod"); ok {
			a.Reason = v1alpha1.ReasonRollingUpdate
			return a, true
		}
	}
	return Action{}, false
}
