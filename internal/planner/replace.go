package planner

import (
	"fmt"
	"slices"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/quorum"
)

// replaceGone removes a started member whose data is gone and that no longer serves, when the
// rest keep quorum: it comes back as a new member through a learner, never by bootstrapping
// again. A member that still serves from a volume being deleted is not removed here: it is
// replaced add-first (changeMembership), so redundancy never drops to make the repair.
func replaceGone(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if !m.InEtcd {
			continue
		}
		why := m.dataLost()
		if d := s.divergence(m); why == "" && d != "" {
			// Found divergent while it served, it serves no more (etcd's initial corruption
			// check refuses to start it): its data are worth nothing, like lost ones.
			why = d + ", and it does not serve"
		}
		if why == "" && m.CorruptAtStart && s.outvoted(m) {
			// Diverged while it was down: etcd's own check at its start found its data differ
			// from a majority of the other voters', which are not known to disagree.
			why = "etcd's initial corruption check found its data differ from those of a majority of the other voters, and etcd refuses to start it"
		}
		if why == "" || (!m.Learner && m.Healthy(s.ClusterID)) {
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
				return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonQuorumAtRisk, Attention: true,
					Message: fmt.Sprintf("member %s must be replaced because %s, but only %d other voters are healthy: waiting for them before removing it", m.Name, why, healthy)}, true
			}
		}
		reason := v1alpha1.ReasonMemberDataLost
		if m.dataLost() == "" {
			reason = v1alpha1.ReasonMemberCorrupt
		}
		return Action{Kind: Remove, Member: m.Name, ID: m.ID, Reason: reason, Attention: true,
			Message: fmt.Sprintf("removing member %s because %s; a new member will take its place", m.Name, why)}, true
	}
	return Action{}, false
}

// outvoted: m's data differed, at its start, from those of a majority of the other voters
// (etcd's check fails on a single peer that differs, which may be the bad one), and nothing
// says the others are wrong: no comparison without a majority, none naming another voter, no
// CORRUPT alarm raised for another member.
func (s State) outvoted(m Member) bool {
	if s.Consistency != nil {
		v := Judge(*s.Consistency)
		if v.Outcome == NoMajority || slices.ContainsFunc(v.Divergent, func(h MemberHash) bool { return h.ID != m.ID }) {
			return false
		}
	}
	if slices.ContainsFunc(s.CorruptMembers, func(n string) bool { return n != m.Name }) {
		return false
	}
	others, differ := 0, 0
	for _, v := range s.voters() {
		if v.ID == m.ID {
			continue
		}
		others++
		if slices.Contains(m.CorruptPeers, v.ID) {
			differ++
		}
	}
	// A majority of all the voters, the member itself counted, must differ from it: with two
	// voters, or two against two, nobody can tell which copy is the good one.
	return others > 0 && differ >= quorum.Of(others+1)
}
