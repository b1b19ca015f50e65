package planner

import (
	"fmt"

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
		if why == "" && m.CorruptAtStart != "" && !disagree(s) {
			// Diverged while it was down: etcd's own check at its start compared it with the
			// serving peers, which are a quorum (checked below) and not known to disagree.
			why = "etcd's initial corruption check found its data differ from its peers' and etcd refuses to start it"
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

// disagree: the last comparison of the voters' data found no majority, when no member's data
// can be told good or bad.
func disagree(s State) bool {
	return s.Consistency != nil && Judge(*s.Consistency).Outcome == NoMajority
}
