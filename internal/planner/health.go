package planner

import (
	"fmt"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/mutant"
)

// expireLearners removes a learner that is no longer needed (replicas were lowered before it
// was promoted), or that has not been promoted within the learner deadline (it could not
// start or catch up): it is added again on a later pass.
func expireLearners(s State) (Action, bool) {
	needed := len(s.voters()) < s.Replicas || len(s.retiring()) > 0
	for _, m := range s.sorted() {
		if !m.InEtcd || !m.Learner {
			continue
		}
		if !needed {
			return Action{Kind: Remove, Member: m.Name, ID: m.ID, Reason: v1alpha1.ReasonScaling,
				Message: fmt.Sprintf("removing learner %s: spec.replicas no longer needs it", m.Name)}, true
		}
		if s.Deadlines.Learner > 0 && m.Age > s.Deadlines.Learner {
			why := "did not catch up with the leader"
			if !m.Healthy(s.ClusterID) {
				why = "did not start" + problem(m)
			}
			return Action{Kind: Remove, Member: m.Name, ID: m.ID, Reason: v1alpha1.ReasonLearnerStuck, Attention: true,
				Message: fmt.Sprintf("learner %s %s within %s: removing it; a new learner takes its place", m.Name, why, s.Deadlines.Learner)}, true
		}
	}
	return Action{}, false
}

// CannotJoin is the PeersUnreachable message for a member whose launcher refused to start
// etcd because it could not reach its peers (refusal is the launcher's message).
func CannotJoin(member, refusal string) string {
	return fmt.Sprintf("member %s cannot join: %s; membership changes wait, and the member starts by itself once its peers answer", member, refusal)
}

func problem(m Member) string {
	if m.PodProblem == "" {
		return ""
	}
	return " (" + m.PodProblem + ")"
}

// gateHealth stops membership changes and rollouts until every member is healthy. A member
// whose pod runs the new spec of a rollout and will not become healthy stops the rollout with
// its cause, where the next step would otherwise wait without saying why.
func gateHealth(s State) (Action, bool) {
	rolling := false
	for _, m := range s.Members {
		rolling = rolling || m.InEtcd && m.HasPod && !m.PodCurrent
	}
	for _, m := range s.sorted() {
		if !m.InEtcd || m.Healthy(s.ClusterID) {
			continue
		}
		if mutant.On("promote-before-caught-up") && m.Learner {
			continue
		}
		if mutant.On("roll-two-at-once") && rolling {
			break
		}
		if m.PeersUnreachable != "" && !m.Started {
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonPeersUnreachable, Attention: true, Message: CannotJoin(m.Name, m.PeersUnreachable)}, true
		}
		if m.DiskFull != "" {
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonDiskFull, Attention: true, Message: DiskFullMessage(m.Name, m.DiskFull)}, true
		}
		what := "does not answer"
		switch {
		case m.Reachable && !m.HasLeader:
			what = "has no leader"
		case !m.Started:
			what = "has not started yet"
		}
		what += problem(m)
		what += voteHeldNote(s)
		stuck := m.HasPod && !m.PodTerminating && (m.PodProblem != "" || m.PodAge > s.Deadlines.MemberStart)
		if rolling && m.PodCurrent && stuck {
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonRolloutStuck, Attention: true,
				Message: fmt.Sprintf("the rollout is stopped: member %s runs the new spec but %s; correct the spec or set it back, and the operator replaces the pod of %s", m.Name, what, m.Name)}, true
		}
		return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonMemberUnhealthy, Attention: m.PodProblem != "",
			Message: fmt.Sprintf("member %s %s; membership changes wait until every member is healthy", m.Name, what)}, true
	}
	return Action{}, false
}
