package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// Maintenance asked for on demand: spec.maintenance.defragNow (a round that defragments every
// healthy voter once) and spec.maintenance.moveLeader (one leadership transfer). Both are
// tokens, acted on once, and run only on a settled cluster: their rules come after every gate
// and every other change in plan(), so nothing of them happens during a membership change, a
// rolling update, a recovery, or while the cluster is paused, hibernated or has a fenced
// member; until then they wait, and the wait says so (PendingNote).

// AnswerMoveLeader records the answer to spec.maintenance.moveLeader that needs no transfer:
// Action.Phase is v1alpha1.LeaderMoveRefused or LeaderMoveAlreadyLeader, Action.Token the
// request's token.
const AnswerMoveLeader Kind = "AnswerMoveLeader"

// DefragRequest is spec.maintenance.defragNow while its round has not completed.
type DefragRequest struct {
	// Token is spec.maintenance.defragNow.
	Token string
	// Done are the members this round defragmented already (status.maintenance.defrag): each
	// member is defragmented once, so a busy cluster whose free pages grow again does not keep
	// the round going forever.
	Done []string
}

// LeaderRequest is spec.maintenance.moveLeader while it has not been answered.
type LeaderRequest struct {
	Token string
	// To is the member to hand leadership to; "" for any healthy voter but the leader.
	To string
}

// defragNow defragments every healthy voter the round has not done yet, one a pass: followers
// first, then the leader after leadership moved to a healthy voter (a one-member cluster's
// leader is defragmented as it is). MinFree and the threshold do not apply. When no healthy
// voter is left undone it lets the plan settle, and the pass that settles completes the round
// (DefragRoundComplete).
func defragNow(s State) (Action, bool) {
	r := s.DefragNow
	if r == nil {
		return Action{}, false
	}
	voters := s.voters()
	done := 0
	for _, m := range voters {
		if slices.Contains(r.Done, m.Name) {
			done++
		}
	}
	var leader *Member
	for _, m := range voters {
		if !m.Healthy(s.ClusterID) || slices.Contains(r.Done, m.Name) {
			continue
		}
		if m.ID == s.LeaderID && len(voters) > 1 {
			leader = &m
			continue
		}
		return Action{Kind: Defragment, Member: m.Name, Token: r.Token, Reason: v1alpha1.ReasonDefragmenting,
			Message: fmt.Sprintf("defragmenting %s (%d of %d members done), as spec.maintenance.defragNow %q asks", m.Name, done, len(voters), r.Token)}, true
	}
	if leader == nil {
		return Action{}, false
	}
	if a, ok := moveLeaderAway(s, *leader, "before defragmenting it (spec.maintenance.defragNow)"); ok {
		a.Reason = v1alpha1.ReasonDefragmenting
		return a, true
	}
	return Action{Kind: Wait, Member: leader.Name, Reason: v1alpha1.ReasonDefragmenting,
		Message: fmt.Sprintf("the leader %s is defragmented last, after leadership moved away, but no other voter is healthy: waiting", leader.Name)}, true
}

// DefragRoundComplete: the pass that planned a completes the round of spec.maintenance.defragNow:
// the plan settled (a is None), so no healthy voter is left undone.
func DefragRoundComplete(s State, a Action) bool {
	return s.DefragNow != nil && a.Kind == None
}

// EveryVoterIn: every voting member of s is named in names (and there is one).
func EveryVoterIn(s State, names []string) bool {
	voters := s.voters()
	for _, v := range voters {
		if !slices.Contains(names, v.Name) {
			return false
		}
	}
	return len(voters) > 0
}

// moveLeaderNow hands leadership over as spec.maintenance.moveLeader asks, or refuses to: the
// member asked for must be a healthy, unfenced voter, and without one, another healthy voter
// must exist. A refusal is recorded (AnswerMoveLeader) and not retried until a new token.
func moveLeaderNow(s State) (Action, bool) {
	r := s.MoveLeaderNow
	if r == nil {
		return Action{}, false
	}
	leader, ok := s.byID(s.LeaderID)
	if !ok || leader.Learner {
		return Action{Kind: Wait, Reason: v1alpha1.ReasonMovingLeader,
			Message: fmt.Sprintf("spec.maintenance.moveLeader %q waits for a leader among the cluster's members", r.Token)}, true
	}
	answer := func(result, to, msg string) (Action, bool) {
		reason := v1alpha1.ReasonMovingLeader
		if result == v1alpha1.LeaderMoveRefused {
			reason = v1alpha1.ReasonLeaderMoveRefused
		}
		return Action{Kind: AnswerMoveLeader, Phase: result, Member: leader.Name, TargetName: to, Token: r.Token, Reason: reason, Message: msg}, true
	}
	refuse := func(why string) (Action, bool) {
		return answer(v1alpha1.LeaderMoveRefused, r.To, fmt.Sprintf("spec.maintenance.moveLeader %q is refused: %s; set a new token to ask again", r.Token, why))
	}
	why := fmt.Sprintf("as spec.maintenance.moveLeader %q asks", r.Token)
	if r.To == "" {
		a, ok := moveLeaderAway(s, leader, why)
		if !ok {
			return refuse(fmt.Sprintf("no healthy voting member other than the leader %s can take over (healthy voters: %s); scale the cluster up first", leader.Name, listOrNone(s.healthyVoters())))
		}
		a.Token, a.Reason = r.Token, v1alpha1.ReasonMovingLeader
		return a, true
	}
	to, known := s.knownMember(r.To)
	switch {
	case !known:
		return refuse(fmt.Sprintf("%s is no member of this cluster; name a healthy voter in moveLeader.to (healthy voters: %s)", r.To, listOrNone(s.healthyVoters())))
	case !to.InEtcd || to.Learner:
		return refuse(fmt.Sprintf("%s is not a voting member (a learner, or not in etcd's member list yet); name a healthy voter (healthy voters: %s), or wait until it votes", r.To, listOrNone(s.healthyVoters())))
	case to.UserFenced:
		return refuse(fmt.Sprintf("%s is fenced at the user's request: its etcd is stopped; unfence it first", r.To))
	case !to.Healthy(s.ClusterID):
		return refuse(fmt.Sprintf("%s is not healthy; name a healthy voter (healthy voters: %s)", r.To, listOrNone(s.healthyVoters())))
	case to.ID == s.LeaderID:
		return answer(v1alpha1.LeaderMoveAlreadyLeader, to.Name, fmt.Sprintf("%s is the leader already: nothing to move (spec.maintenance.moveLeader %q)", to.Name, r.Token))
	}
	a := moveLeader(leader, to, why)
	a.Token, a.Reason = r.Token, v1alpha1.ReasonMovingLeader
	return a, true
}

// healthyVoters names the healthy voters, by index.
func (s State) healthyVoters() []string {
	var out []string
	for _, v := range s.voters() {
		if v.Healthy(s.ClusterID) {
			out = append(out, v.Name)
		}
	}
	return out
}

// PendingNote says which maintenance asked for on demand waits, and for what ("" when none
// does): a Wait of another rule carries it, so that the condition says why a round or a
// transfer asked for has not run (a hibernated cluster defragments nobody until it is woken).
func PendingNote(s State) string {
	var pending []string
	if s.DefragNow != nil {
		pending = append(pending, fmt.Sprintf("the defragmentation asked for (spec.maintenance.defragNow %q)", s.DefragNow.Token))
	}
	if s.MoveLeaderNow != nil {
		pending = append(pending, fmt.Sprintf("the leadership transfer asked for (spec.maintenance.moveLeader %q)", s.MoveLeaderNow.Token))
	}
	if len(pending) == 0 {
		return ""
	}
	what := "waits"
	if len(pending) > 1 {
		what = "wait"
	}
	note := fmt.Sprintf("%s %s for a settled cluster", strings.Join(pending, " and "), what)
	switch {
	case s.Paused:
		note += ": resume it (spec.paused false) first"
	case s.Hibernate:
		note += ": wake it (spec.hibernate false) first"
	}
	return note
}

// notePending adds PendingNote to a wait of another rule.
func notePending(s State, a Action) Action {
	if a.Kind != Wait || a.Reason == v1alpha1.ReasonDefragmenting || a.Reason == v1alpha1.ReasonMovingLeader {
		return a
	}
	if note := PendingNote(s); note != "" {
		a.Message += "; " + note
	}
	return a
}
