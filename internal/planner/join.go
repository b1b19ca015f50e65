package planner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/version"
)

// Join is a running etcd cluster moving in (spec.bootstrap.join), until its last external
// member is removed.
type Join struct {
	// Started: status records the external cluster's ID and members.
	Started bool
	// RemoveExternal is spec.bootstrap.join.removeExternalMembers.
	RemoveExternal bool
	// Unreachable says why the external cluster's member list could not be read ("" when it
	// was).
	Unreachable string
	// ListedClusterID is the cluster ID the member list reported.
	ListedClusterID uint64
	// External are the external members etcd lists: before the join starts, every member;
	// after, those status recorded that are still members.
	External []External
	// Alarms raised in the external cluster, before the join starts.
	Alarms []string
}

// External is one member of the external cluster.
type External struct {
	Name     string
	ID       uint64
	Learner  bool
	Endpoint bool // spec.bootstrap.join.endpoints has an endpoint that answers as this member
	// From asking the member itself.
	Reachable bool
	ClusterID uint64
	HasLeader bool
	Version   string
	// Problem is the error of the endpoint that did not answer.
	Problem string
	// Connected are the peers this member reports a working connection to, by ID (etcd's
	// etcd_network_active_peers); nil when its metrics could not be read.
	Connected map[uint64]bool
}

// ConnectGrace is how long etcd's container of a member of the operator's may run before every
// external member must report a working connection to it: etcd dials a new peer as soon as it
// starts, and again every 100 ms; the launcher's own checks come first.
const ConnectGrace = 30 * time.Second

// Healthy: the member answered as itself, of the joined cluster, following a leader.
func (e External) Healthy(clusterID uint64) bool {
	return e.Reachable && e.ClusterID == clusterID && e.HasLeader
}

func (e External) label() string {
	if e.Name != "" {
		return e.Name + " (" + names.FormatID(e.ID) + ")"
	}
	return names.FormatID(e.ID)
}

// planJoinStart checks the external cluster before anything is changed, and starts the join
// when it is safe: every member answers, is healthy and runs the spec's minor release, none
// is a learner, and no alarm is raised. A refusal changes nothing and says what to fix.
func planJoinStart(s State) Action {
	refuse := func(format string, args ...any) Action {
		return Action{Kind: Halt, Reason: v1alpha1.ReasonJoinRefused, Attention: true,
			Message: "the external cluster is not joined: " + fmt.Sprintf(format, args...) + "; nothing was changed, and the join starts once this is fixed"}
	}
	j := s.Join
	if j.Unreachable != "" {
		return refuse("its member list could not be read through spec.bootstrap.join.endpoints (%s)", j.Unreachable)
	}
	if len(s.Members) > 0 {
		// Objects of this cluster's members exist but no ID is recorded: a status lost after
		// the join started. The volumes recover the ID (identify); never start a second join.
		return Action{Kind: Wait, Reason: v1alpha1.ReasonJoining, Message: "members of this cluster exist but status records no join: waiting for their volumes to tell the cluster ID"}
	}
	want, err := version.Parse(s.Version)
	if err != nil {
		return refuse("spec.version %q: %v", s.Version, err)
	}
	if len(j.Alarms) > 0 {
		return refuse("it has the alarms %s raised; clear them (etcdctl alarm disarm) after fixing their cause", strings.Join(j.Alarms, ", "))
	}
	for _, e := range j.External {
		switch {
		case e.Learner:
			return refuse("member %s is a learner; promote or remove it first", e.label())
		case !e.Endpoint:
			return refuse("member %s has no endpoint in spec.bootstrap.join.endpoints that answers as it; list the client URL of every member", e.label())
		case !e.Reachable:
			return refuse("member %s does not answer: %s", e.label(), e.Problem)
		case e.ClusterID != j.ListedClusterID:
			return refuse("member %s reports cluster ID %s, the member list %s", e.label(), names.FormatID(e.ClusterID), names.FormatID(j.ListedClusterID))
		case !e.HasLeader:
			return refuse("member %s has no leader", e.label())
		}
		v, err := version.Parse(e.Version)
		if err != nil {
			return refuse("member %s reports etcd version %q: %v", e.label(), e.Version, err)
		}
		if !v.SameMinor(want) {
			return refuse("member %s runs etcd %s and spec.version is %s: the new members must run the external cluster's minor release; set spec.version to a %d.%d release, and upgrade once the move is done", e.label(), v, want, v.Major, v.Minor)
		}
	}
	if len(j.External) == 0 {
		return refuse("it lists no members")
	}
	return Action{Kind: StartJoin, Reason: v1alpha1.ReasonJoining,
		Message: fmt.Sprintf("joining etcd cluster %s of %d members: its cluster ID and members are recorded, then members are added one at a time", names.FormatID(j.ListedClusterID), len(j.External))}
}

// gateExternal stops membership changes while an external member is unhealthy: it votes, and
// the quorum counts it.
func gateExternal(s State) (Action, bool) {
	if s.Join == nil {
		return Action{}, false
	}
	for _, e := range s.Join.External {
		if e.Healthy(s.ClusterID) {
			continue
		}
		return Action{Kind: Wait, Member: e.Name, Reason: v1alpha1.ReasonExternalMemberUnhealthy, Attention: true,
			Message: fmt.Sprintf("external member %s %s; membership changes wait until it is healthy; if it is gone for good, remove it with etcdctl member remove", e.label(), e.trouble())}, true
	}
	return Action{}, false
}

// trouble says why an external member is not healthy.
func (e External) trouble() string {
	if e.Reachable && !e.HasLeader {
		return "has no leader"
	}
	if e.Problem != "" {
		return "does not answer (" + e.Problem + ")"
	}
	return "does not answer"
}

// NotConnected is the PeersUnreachable message for an external member that has no working
// connection to the operator's member.
func (e External) NotConnected(member string) string {
	return fmt.Sprintf("external member %s has no working connection to member %s (etcd_network_active_peers on %s); the external members must reach the peer URL of %s from where they run; membership changes wait, and go on once they connect",
		e.label(), member, e.Name, member)
}

// gateConnected stops membership changes while an external member has no working connection
// to a member of the operator's whose etcd runs: the external members must reach the new
// members as much as the reverse (the launcher checks that direction before etcd starts). A
// member they cannot reach does not become healthy (it cannot confirm reads with the leader),
// so this comes before the health gate, which could only say that it does not answer.
func gateConnected(s State) (Action, bool) {
	if s.Join == nil {
		return Action{}, false
	}
	for _, m := range s.sorted() {
		if !m.InEtcd || !m.Started {
			continue
		}
		for _, e := range s.Join.External {
			if e.Connected == nil || e.Connected[m.ID] {
				continue
			}
			if m.RunningFor >= ConnectGrace {
				return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonPeersUnreachable, Attention: true, Message: e.NotConnected(m.Name)}, true
			}
			if m.Healthy(s.ClusterID) {
				return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonJoining, Retry: time.Second,
					Message: fmt.Sprintf("waiting for external member %s to connect to member %s", e.label(), m.Name)}, true
			}
		}
	}
	return Action{}, false
}

// handOver removes the external members once the operator's own vote, on the go-ahead: a
// follower first, the leader last, after leadership moved to one of the operator's members.
func handOver(s State) (Action, bool) {
	if s.Join == nil || len(s.Join.External) == 0 {
		return Action{}, false
	}
	if !s.Join.RemoveExternal {
		return Action{Kind: Wait, Reason: v1alpha1.ReasonWaitingForGoAhead,
			Message: fmt.Sprintf("the operator's %d members vote beside %d external members; set spec.bootstrap.join.removeExternalMembers to true to remove the external members, one at a time", len(s.voters()), len(s.Join.External))}, true
	}
	ext := slices.Clone(s.Join.External)
	slices.SortFunc(ext, func(a, b External) int { return strings.Compare(a.Name, b.Name) })
	victim := ext[0]
	for _, e := range ext {
		if e.ID != s.LeaderID {
			victim = e
			break
		}
	}
	msg := fmt.Sprintf("removing external member %s (%d external members left)", victim.label(), len(ext))
	if victim.ID == s.LeaderID {
		for _, v := range s.voters() {
			if v.Healthy(s.ClusterID) {
				return Action{Kind: MoveLeader, Member: victim.Name, ID: victim.ID, Target: v.ID, TargetName: v.Name, Reason: v1alpha1.ReasonJoining,
					Message: fmt.Sprintf("moving leadership from external member %s to %s before removing it", victim.label(), v.Name)}, true
			}
		}
		return Action{Kind: Wait, Reason: v1alpha1.ReasonJoining, Message: "waiting for a healthy member to move leadership to, before removing the external leader"}, true
	}
	return Action{Kind: Remove, Member: victim.Name, ID: victim.ID, Reason: v1alpha1.ReasonJoining, Message: msg}, true
}

// AbortForce says what removing FinalizerJoin by hand does, for the messages of a blocked abort.
const AbortForce = "to delete the EtcdCluster anyway, remove its members from the external cluster yourself (etcdctl member remove, one at a time), then the finalizer " + v1alpha1.FinalizerJoin + " (kubectl patch etcdcluster <name> --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'); removing the finalizer first deletes pods that still vote, and the external cluster loses its quorum unless its healthy members alone are a majority of all the voters"

// PlanAbort is the step of a join aborted by deleting the EtcdCluster before it completed: the
// operator's members leave the external cluster one at a time, re-derived from the member list
// of each pass, before their pods go. Learners go first (they change no quorum); then voters,
// once no external member is unhealthy and leadership is outside the operator's members; an
// unhealthy voter of the operator's before a healthy one, else the highest index first. Finish
// (the finalizer goes) once none of the operator's members is in etcd, or no external voter is
// left (the cluster is the operator's alone, and is deleted as any other).
func PlanAbort(s State) Action {
	blocked := func(format string, args ...any) Action {
		return Action{Kind: Wait, Reason: v1alpha1.ReasonJoinAbortBlocked, Attention: true,
			Message: "the EtcdCluster is being deleted before its join completed, and its members stay in the external cluster until they are removed one at a time: " + fmt.Sprintf(format, args...) + "; " + AbortForce}
	}
	if s.Paused {
		return Action{Kind: Wait, Reason: v1alpha1.ReasonPaused, Message: "spec.paused is true: the abort of the join waits, and the EtcdCluster stays; set it to false to go on"}
	}
	j := s.Join
	if j == nil {
		return Action{Kind: Finish, Reason: v1alpha1.ReasonJoinAborting, Message: "no join is under way: the EtcdCluster is deleted as any other"}
	}
	if !s.EtcdReachable || j.Unreachable != "" {
		why := j.Unreachable
		if why == "" {
			why = "no member answered"
		}
		return blocked("the member list cannot be read (%s), so nothing is removed; the abort goes on once the external cluster answers", why)
	}
	var voters []External
	for _, e := range j.External {
		if !e.Learner {
			voters = append(voters, e)
		}
	}
	var ours []Member
	for _, m := range s.sorted() {
		if m.InEtcd {
			ours = append(ours, m)
		}
	}
	if len(ours) == 0 {
		return Action{Kind: Finish, Reason: v1alpha1.ReasonJoinAborting,
			Message: fmt.Sprintf("the join was aborted: none of the operator's members is left in the external cluster, whose %d members remain; the EtcdCluster, its pods and volumes go", len(j.External))}
	}
	if len(voters) == 0 {
		return Action{Kind: Finish, Reason: v1alpha1.ReasonJoinAborting,
			Message: "no external voter is left in the cluster: it is the operator's alone, and is deleted with the EtcdCluster as any other"}
	}
	for _, e := range voters {
		if !e.Healthy(s.ClusterID) && !slices.ContainsFunc(ours, func(m Member) bool { return m.Learner }) {
			return blocked("external member %s %s, and removing a voter of the operator's could leave the external cluster without a quorum; the abort goes on once it is healthy, or once it is removed with etcdctl member remove", e.label(), e.trouble())
		}
	}
	return abortStep(s, ours, voters[0])
}

// abortStep removes one of the operator's members (ours, sorted by index) from the external
// cluster: the highest learner; else, leadership moved to the external voter target first, an
// unhealthy voter, else the highest.
func abortStep(s State, ours []Member, target External) Action {
	left := fmt.Sprintf("%d of the operator's members are in it", len(ours))
	if len(ours) == 1 {
		left = "the last of the operator's members in it"
	}
	victim := ours[len(ours)-1]
	for _, m := range slices.Backward(ours) {
		if m.Learner {
			return Action{Kind: Remove, Member: m.Name, ID: m.ID, Reason: v1alpha1.ReasonJoinAborting,
				Message: fmt.Sprintf("aborting the join: removing learner %s from the external cluster (%s)", m.Name, left)}
		}
		if !m.Healthy(s.ClusterID) {
			victim = m
		}
	}
	if s.LeaderID == 0 {
		return Action{Kind: Wait, Reason: v1alpha1.ReasonJoinAborting, Message: "aborting the join: waiting for a leader before removing a voter of the operator's"}
	}
	for _, m := range ours {
		if m.ID == s.LeaderID {
			return Action{Kind: MoveLeader, Member: m.Name, ID: m.ID, Target: target.ID, TargetName: target.Name, Reason: v1alpha1.ReasonJoinAborting,
				Message: fmt.Sprintf("aborting the join: moving leadership from %s to external member %s before removing the operator's voters", m.Name, target.label())}
		}
	}
	return Action{Kind: Remove, Member: victim.Name, ID: victim.ID, Reason: v1alpha1.ReasonJoinAborting,
		Message: fmt.Sprintf("aborting the join: removing member %s from the external cluster (%s)", victim.Name, left)}
}
