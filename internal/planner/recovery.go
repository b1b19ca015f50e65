package planner

import (
	"fmt"
	"slices"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/quorum"
)

// planRecovery carries out a recovery from permanent quorum loss that the user asked for with
// a new spec.recovery.forceNewCluster token; it never starts one on its own. The member that
// has applied the most restarts with --force-new-cluster, keeping its data and the cluster ID
// as the single member of the cluster; its pod is then replaced by an ordinary one, and the
// cluster grows back to spec.replicas through learners. Writes the lost members had applied
// beyond the survivor's revision are gone, and status and an Event say so.
func planRecovery(s State) (Action, bool) {
	r := s.Recovery
	if r.Requested == "" {
		return Action{}, false
	}
	if r.Requested != r.Token {
		if s.Join != nil {
			// The external members are voters of the same cluster that the operator may not
			// reach, and fences none of: they may hold a quorum and go on taking writes, and a
			// forced member would make a second cluster with the same ID beside them.
			return Action{Kind: Halt, Reason: v1alpha1.ReasonRecovery, Attention: true,
				Message: fmt.Sprintf("spec.recovery.forceNewCluster %q is not acted on while a join (spec.bootstrap.join) has not completed: the external members vote in the same cluster, the operator cannot fence them, and they may still hold a quorum; restore quorum with the external cluster's members, or abort the join by deleting this EtcdCluster", r.Requested)}, true
		}
		return startRecovery(s)
	}
	switch r.Phase {
	case v1alpha1.RecoveryRestarting:
		return restartSurvivor(s)
	case v1alpha1.RecoveryRejoining:
		return rejoinSurvivor(s)
	}
	return Action{}, false
}

// hasQuorum: a majority of the voters etcd lists is healthy.
func (s State) hasQuorum() bool {
	voters := s.voters()
	healthy := 0
	for _, v := range voters {
		if v.Healthy(s.ClusterID) {
			healthy++
		}
	}
	return s.EtcdReachable && len(voters) > 0 && healthy >= quorum.Of(len(voters))
}

func startRecovery(s State) (Action, bool) {
	if s.hasQuorum() {
		return Action{Kind: RecoveryPhase, Phase: v1alpha1.RecoveryNotNeeded, Reason: v1alpha1.ReasonRecovery,
			Message: fmt.Sprintf("spec.recovery.forceNewCluster is %q but the cluster has quorum: nothing to recover; the request is recorded and will not act later", s.Recovery.Requested)}, true
	}
	if a, ok := wakeBeforeRecovery(s); ok {
		return a, true
	}
	for _, m := range s.sorted() {
		if m.RecoveredBy == s.Recovery.Requested || m.Fenced == s.Recovery.Requested {
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonRecovery, Attention: true,
				Message: fmt.Sprintf("spec.recovery.forceNewCluster %q was acted on before (the volume of %s records it), and the cluster's status does not say how it ended: a token forces at most once; set a new token to ask for another recovery", s.Recovery.Requested, m.Name)}, true
		}
	}
	var best *Member
	for _, m := range s.sorted() {
		if !m.Reachable || m.ClusterID != s.ClusterID || !m.HasPVC || m.PVCTerminating || m.DataDirLost || m.Fenced != "" {
			continue
		}
		if best == nil || m.Revision > best.Revision {
			best = &m
		}
	}
	if best == nil {
		for _, m := range s.sorted() {
			if m.HasPVC && m.PVCHasData && !m.PVCTerminating && !m.HasPod && m.Fenced == "" {
				return Action{Kind: CreatePod, Member: m.Name, RequireData: true, Reason: v1alpha1.ReasonRecovery,
					Message: fmt.Sprintf("recovery requested: starting member %s from its volume to learn how much it has applied", m.Name)}, true
			}
		}
		return Action{Kind: Wait, Reason: v1alpha1.ReasonRecovery, Attention: true,
			Message: "recovery requested, but no member with data answers: there is nothing to restart the cluster from; restore a backup into a new EtcdCluster"}, true
	}
	return Action{Kind: StartRecovery, Member: best.Name, Revision: best.Revision, Reason: v1alpha1.ReasonRecovery, Attention: true,
		Message: fmt.Sprintf("forcing a new cluster from member %s, which has applied revision %d (the most of the members that answer): writes acknowledged after revision %d that it had not applied are lost", best.Name, best.Revision, best.Revision)}, true
}

// wakeBeforeRecovery: a cluster waking from hibernation has no quorum only because its
// members are starting (followers stopped first, so the first to answer may lack writes the
// leader acknowledged): a recovery asked for meanwhile restarts every member with data and
// gives each its start deadline to rejoin; a cluster that regains quorum records the request
// as not needed.
func wakeBeforeRecovery(s State) (Action, bool) {
	if !s.Waking {
		return Action{}, false
	}
	for _, m := range s.sorted() {
		if m.HasPVC && m.PVCHasData && !m.PVCTerminating && !m.HasPod && m.Fenced == "" {
			return Action{Kind: CreatePod, Member: m.Name, RequireData: true, Reason: v1alpha1.ReasonWaking,
				Message: fmt.Sprintf("waking from hibernation: restarting member %s from its volume before spec.recovery.forceNewCluster %q is considered", m.Name, s.Recovery.Requested)}, true
		}
	}
	for _, m := range s.sorted() {
		if m.HasPod && !m.Healthy(s.ClusterID) && m.PodAge < s.Deadlines.MemberStart {
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonWaking,
				Message: fmt.Sprintf("waking from hibernation: spec.recovery.forceNewCluster %q waits until every member restarted from its volume has had %s to rejoin (%s has not answered yet); if quorum comes back, the request is recorded as not needed", s.Recovery.Requested, s.Deadlines.MemberStart, m.Name)}, true
		}
	}
	return Action{}, false
}

// restartSurvivor fences the other members, then replaces the survivor's pod by one that
// starts etcd with --force-new-cluster and waits until it leads a cluster of itself alone.
func restartSurvivor(s State) (Action, bool) {
	name := s.Recovery.Member
	if a, ok := fenceOthers(s, name); ok && !mutant.On("force-without-fence") {
		return a, true
	}
	m, _ := s.byName(name)
	switch {
	case !m.HasPVC || m.PVCTerminating:
		return Action{Kind: Halt, Member: name, Reason: v1alpha1.ReasonRecovery, Attention: true,
			Message: fmt.Sprintf("the recovery lost its survivor: the volume of %s is gone; restore a backup into a new EtcdCluster", name)}, true
	case m.RecoveredBy != s.Recovery.Token:
		return Action{Kind: MarkRecovered, Member: name, Token: s.Recovery.Token, Reason: v1alpha1.ReasonRecovery,
			Message: fmt.Sprintf("recording the recovery %q on the volume of %s before it is forced", s.Recovery.Token, name)}, true
	case m.PodTerminating:
		return Action{Kind: Wait, Member: name, Reason: v1alpha1.ReasonRecovery, Message: "waiting for the old pod of " + name + " to stop"}, true
	case m.HasPod && !m.PodForcesNewCluster:
		return Action{Kind: DeletePod, Member: name, Reason: v1alpha1.ReasonRecovery,
			Message: fmt.Sprintf("stopping %s to restart it with --force-new-cluster", name)}, true
	case !m.HasPod:
		return Action{Kind: CreatePod, Member: name, RequireData: true, ForceNewCluster: true, Reason: v1alpha1.ReasonRecovery,
			Message: fmt.Sprintf("restarting %s with --force-new-cluster: it becomes the single member of the cluster, with its data and the cluster ID", name)}, true
	}
	voters := s.voters()
	if s.EtcdReachable && m.Healthy(s.ClusterID) && m.ID == s.LeaderID && len(voters) == 1 && voters[0].Name == name {
		return Action{Kind: RecoveryPhase, Member: name, Phase: v1alpha1.RecoveryRejoining, Reason: v1alpha1.ReasonRecovery,
			Message: fmt.Sprintf("%s leads the cluster alone: replacing its pod by one without --force-new-cluster", name)}, true
	}
	return Action{Kind: Wait, Member: name, Reason: v1alpha1.ReasonRecovery,
		Message: fmt.Sprintf("waiting for %s to start as the single member of the cluster", name)}, true
}

// fenceOthers stops every member but the survivor for good before the survivor is forced to
// lead alone. A member the operator cannot reach is not necessarily down: partitioned from
// the operator, or paused, a majority of the old membership would go on as a cluster with the
// same ID beside the forced one. So every volume is marked first (the mark outlives the
// recovery's record in status: no later pass gives it a pod), then every pod is deleted, and
// the survivor is forced only once every other pod is gone, not merely terminating: a pod
// whose node does not answer may still run.
func fenceOthers(s State, survivor string) (Action, bool) {
	token := s.Recovery.Token
	others := slices.DeleteFunc(s.sorted(), func(m Member) bool { return m.Name == survivor })
	for _, m := range others {
		if m.HasPVC && !m.PVCTerminating && m.Fenced != token {
			return Action{Kind: Fence, Member: m.Name, Token: token, Reason: v1alpha1.ReasonRecovery,
				Message: fmt.Sprintf("fencing %s before %s is forced to lead alone: its volume is marked so that it never runs again", m.Name, survivor)}, true
		}
	}
	for _, m := range others {
		if m.HasPod && !m.PodTerminating {
			return Action{Kind: DeletePod, Member: m.Name, Reason: v1alpha1.ReasonRecovery,
				Message: fmt.Sprintf("stopping %s (fenced) before %s is forced to lead alone: a member the operator cannot reach may still run with a majority of the old membership", m.Name, survivor)}, true
		}
	}
	for _, m := range others {
		switch {
		case m.PodTerminating && m.TerminatingFor > s.Deadlines.Terminating:
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonRecovery, Attention: true,
				Message: fmt.Sprintf("the recovery waits for the pod of %s to stop before %s is forced to lead alone, and its node does not finish it (terminating for %s): if the node is gone for good, delete the pod with kubectl delete pod --force --grace-period=0; forcing while it may still run could make two clusters", m.Name, survivor, m.TerminatingFor.Round(time.Second))}, true
		case m.PodTerminating:
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonRecovery,
				Message: fmt.Sprintf("waiting for the pod of %s (fenced) to stop before %s is forced to lead alone", m.Name, survivor)}, true
		}
	}
	return Action{}, false
}

// fencedPod deletes at once any pod of a fenced member (a pod created from a cache that had
// not seen the mark yet, or by hand): its data may be a quorum of the membership before the
// recovery, which must never run again.
func fencedPod(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if m.Fenced != "" && m.HasPod && !m.PodTerminating {
			return Action{Kind: DeletePod, Member: m.Name, Reason: v1alpha1.ReasonRecovery, Attention: true,
				Message: fmt.Sprintf("deleting the pod of %s: its volume was fenced by the recovery %q and never runs again", m.Name, m.Fenced)}, true
		}
	}
	return Action{}, false
}

// fencedMembers names the members fenced by a recovery, for the message of a cluster that
// waits without quorum.
func (s State) fencedMembers() []string {
	var out []string
	for _, m := range s.sorted() {
		if m.Fenced != "" {
			out = append(out, m.Name)
		}
	}
	return out
}

// rejoinSurvivor replaces the forced pod by an ordinary one, so that no later restart forces a
// new cluster again, before any member is added.
func rejoinSurvivor(s State) (Action, bool) {
	name := s.Recovery.Member
	m, _ := s.byName(name)
	switch {
	case m.PodTerminating:
		return Action{Kind: Wait, Member: name, Reason: v1alpha1.ReasonRecovery, Message: "waiting for the forced pod of " + name + " to stop"}, true
	case m.HasPod && m.PodForcesNewCluster:
		return Action{Kind: DeletePod, Member: name, Reason: v1alpha1.ReasonRecovery,
			Message: fmt.Sprintf("replacing the pod of %s by one without --force-new-cluster", name)}, true
	case !m.HasPod:
		return Action{Kind: CreatePod, Member: name, RequireData: true, Reason: v1alpha1.ReasonRecovery,
			Message: fmt.Sprintf("restarting %s without --force-new-cluster", name)}, true
	case m.Healthy(s.ClusterID):
		return Action{Kind: RecoveryPhase, Member: name, Phase: v1alpha1.RecoveryCompleted, Reason: v1alpha1.ReasonRecovery,
			Message: fmt.Sprintf("recovered from %s: the cluster grows back to %d members", name, s.Replicas)}, true
	}
	return Action{Kind: Wait, Member: name, Reason: v1alpha1.ReasonRecovery, Message: "waiting for " + name + " to answer again"}, true
}

// strayForcedPod replaces at once the pod of a member that starts etcd with
// --force-new-cluster when no recovery is restarting that member: the recovery's record was
// lost (status lost, the token changed or removed mid-recovery), or an earlier recovery left
// it. Its next container restart would otherwise make a one-member cluster, with the cluster's
// ID, beside the members that rejoined: a split brain. The replacement is an ordinary pod.
func strayForcedPod(s State) (Action, bool) {
	r := s.Recovery
	for _, m := range s.sorted() {
		if !m.HasPod || !m.PodForcesNewCluster || m.PodTerminating {
			continue
		}
		if r.Requested != "" && r.Requested == r.Token && r.Member == m.Name &&
			(r.Phase == v1alpha1.RecoveryRestarting || r.Phase == v1alpha1.RecoveryRejoining) {
			continue // the recovery's own survivor: restartSurvivor and rejoinSurvivor drive it
		}
		return Action{Kind: DeletePod, Member: m.Name, Reason: v1alpha1.ReasonRecovery, Attention: true,
			Message: fmt.Sprintf("the pod of %s starts etcd with --force-new-cluster, but no recovery is restarting it (spec.recovery.forceNewCluster %q, last recovery %q in phase %q of member %q): replacing it by an ordinary pod, so that a restart cannot make a second cluster",
				m.Name, r.Requested, r.Token, r.Phase, r.Member)}, true
	}
	return Action{}, false
}
