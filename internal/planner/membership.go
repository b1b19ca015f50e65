package planner

import (
	"fmt"
	"strings"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/mutant"
)

// changeMembership makes one membership change: promote a learner, add a learner (to scale up,
// or to replace a member that is losing its volume, add-first), or remove a voter (to scale
// down, or the replaced member once its replacement votes), moving leadership away first.
func changeMembership(s State) (Action, bool) {
	if mutant.On("add-two-learners") && s.learners() == 1 && len(s.voters())+1 < s.Replicas {
		return Action{Kind: AddLearner, Reason: v1alpha1.ReasonScaling, Message: "adding a second learner"}, true
	}
	for _, m := range s.sorted() {
		if m.InEtcd && m.Learner {
			return Action{Kind: Promote, Member: m.Name, ID: m.ID, Reason: v1alpha1.ReasonScaling, Message: "promoting learner " + m.Name + " to voter"}, true
		}
	}
	voters, retiring := s.voters(), s.retiring()
	switch {
	case len(retiring) > 0 && len(voters) <= s.Replicas:
		if mutant.On("replace-remove-first") {
			return removeVoter(s, voters, retiring)
		}
		reason, what := s.why(retiring[0])
		if a, ok := leaveDivergentLeader(s); ok {
			return a, true
		}
		return Action{Kind: AddLearner, Reason: reason, Attention: reason == v1alpha1.ReasonReplacingMember || reason == v1alpha1.ReasonMemberCorrupt,
			Message: fmt.Sprintf("adding a member to replace %s, %s; it keeps serving until its replacement votes", retiring[0].Name, what)}, true
	case len(voters) < s.Replicas:
		return Action{Kind: AddLearner, Reason: v1alpha1.ReasonScaling,
			Message: fmt.Sprintf("scaling up from %d to %d voting members", len(voters), s.Replicas)}, true
	case len(voters) > s.Replicas:
		return removeVoter(s, voters, retiring)
	}
	return Action{}, false
}

// removeVoter removes a retiring member first (a follower before the leader), else the highest
// follower; leadership moves away from the member before it is removed.
func removeVoter(s State, voters, retiring []Member) (Action, bool) {
	victim, reason := voters[len(voters)-1], v1alpha1.ReasonScaling
	msg := fmt.Sprintf("scaling down from %d to %d voting members: removing %s", len(voters), s.Replicas, victim.Name)
	if len(retiring) > 0 {
		victim = retiring[0]
		for _, r := range retiring {
			if r.ID != s.LeaderID {
				victim = r
				break
			}
		}
		var what string
		reason, what = s.why(victim)
		msg = fmt.Sprintf("removing %s, %s, now that its replacement votes", victim.Name, what)
	}
	if victim.ID == s.LeaderID && !mutant.On("skip-leader-move") {
		if a, ok := moveLeaderAway(s, victim, "before removing it"); ok {
			a.Reason = reason
			return a, true
		}
	}
	return Action{Kind: Remove, Member: victim.Name, ID: victim.ID, Reason: reason, Message: msg}, true
}

// leaveDivergentLeader moves leadership off a leader whose data diverged before a member is
// added: a new member catches up from the leader's snapshot, and would copy its bad data.
func leaveDivergentLeader(s State) (Action, bool) {
	leader, ok := s.byID(s.LeaderID)
	if !ok || s.divergence(leader) == "" {
		return Action{}, false
	}
	a, ok := moveLeaderAway(s, leader, "before a new member catches up from the leader: its data differ from the majority's")
	if !ok {
		return Action{Kind: Wait, Member: leader.Name, Reason: v1alpha1.ReasonMemberCorrupt, Attention: true,
			Message: fmt.Sprintf("leader %s must be replaced because %s, but no healthy voter can take over leadership: waiting", leader.Name, s.divergence(leader))}, true
	}
	a.Reason, a.Attention = v1alpha1.ReasonMemberCorrupt, true
	return a, true
}

// moveLeaderAway hands leadership to a healthy voter that keeps its volume, preferring the
// lowest index.
func moveLeaderAway(s State, from Member, why string) (Action, bool) {
	retiring := map[string]bool{}
	for _, r := range s.retiring() {
		retiring[r.Name] = true
	}
	var fallback *Member
	for _, v := range s.voters() {
		if v.Name == from.Name || !v.Healthy(s.ClusterID) {
			continue
		}
		if retiring[v.Name] {
			if fallback == nil {
				fallback = &v
			}
			continue
		}
		return moveLeader(from, v, why), true
	}
	if fallback != nil {
		return moveLeader(from, *fallback, why), true
	}
	return Action{}, false
}

func moveLeader(from, to Member, why string) Action {
	return Action{Kind: MoveLeader, Member: from.Name, ID: from.ID, Target: to.ID, TargetName: to.Name, Reason: v1alpha1.ReasonScaling,
		Message: strings.TrimSpace(fmt.Sprintf("moving leadership from %s to %s %s", from.Name, to.Name, why))}
}

// learners counts the learners in etcd's member list.
func (s State) learners() int {
	n := 0
	for _, m := range s.Members {
		if m.InEtcd && m.Learner {
			n++
		}
	}
	return n
}
