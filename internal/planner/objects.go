package planner

import (
	"fmt"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/mutant"
)

// ensureObjects gives every etcd member its PVC and Pod. A member that has lost its data is
// not given an empty volume (it is replaced instead), and a pod stuck terminating on a node
// that does not answer holds up only its own member.
func ensureObjects(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if !m.InEtcd || m.dataLost() != "" || m.Fenced != "" {
			continue
		}
		switch {
		case !m.HasPVC:
			return Action{Kind: CreatePVC, Member: m.Name, Reason: v1alpha1.ReasonMembersCreating, Message: "creating the volume of new member " + m.Name}, true
		case m.PVCTerminating:
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonTerminating, Message: "waiting for the volume of " + m.Name + " to be deleted"}, true
		case m.PodTerminating && m.TerminatingFor > s.Deadlines.Terminating:
			continue
		case m.PodTerminating:
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonTerminating, Message: "waiting for the old pod of " + m.Name + " to terminate"}, true
		case !m.HasPod && mutant.On("delete-voter-pvc"):
			return Action{Kind: DeletePVC, Member: m.Name, Reason: v1alpha1.ReasonGarbage, Message: "deleting the volume of " + m.Name + ", which has no pod"}, true
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

// repairPods replaces pods that cannot come back by themselves, even while other members are
// unhealthy: they are down already, so replacing them costs no availability. A pod that ended
// (an eviction, a node shutdown) never runs again; a pod built from an older spec that is not
// ready (the spec that broke it was reverted, or changed again) is given the current spec.
//
// A pod that served since its container started and lost readiness later was most likely not
// broken by its spec: a partition or a lost leader took its readiness, and its member may
// hold the vote that brings quorum back. Without quorum it is left alone for
// Deadlines.MemberStart (the health gate waits for it); with quorum, it is cut off from a
// healthy majority and replacing it costs nothing. Past the deadline it is replaced all the
// same: a spec that broke the cluster only once a majority ran it (timeouts, CPU limits) is
// reverted so, without a human.
func repairPods(s State) (Action, bool) {
	blocked := versionProblem(s) != ""
	withQuorum := s.hasQuorum()
	for _, m := range s.sorted() {
		if !m.repairable() {
			continue
		}
		if m.PodFailed {
			return Action{Kind: DeletePod, Member: m.Name, Reason: v1alpha1.ReasonPodEnded,
				Message: fmt.Sprintf("the pod of %s ended and will not run again: replacing it; the member restarts from its volume", m.Name)}, true
		}
		if m.outdatedDown(s) && !blocked && s.voteHeldFor(m, withQuorum) == 0 {
			why := "is down"
			switch {
			case m.ServedSinceStart && withQuorum:
				why = "is not ready beside a healthy majority"
			case m.ServedSinceStart:
				why = fmt.Sprintf("has not been ready for %s without quorum", m.UnreadyFor.Round(time.Second))
			case m.Reachable:
				why = "has not been ready since it started"
			}
			return Action{Kind: DeletePod, Member: m.Name, Reason: v1alpha1.ReasonRollingUpdate,
				Message: fmt.Sprintf("replacing the pod of %s, which %s, with the current spec", m.Name, why)}, true
		}
	}
	return Action{}, false
}

// repairable: the member's pod stands, and its data is there.
func (m Member) repairable() bool {
	return m.InEtcd && m.HasPod && !m.PodTerminating && m.dataLost() == ""
}

// outdatedDown: the member's pod is built from an older spec, and the member is neither ready
// nor healthy.
func (m Member) outdatedDown(s State) bool {
	return !m.PodCurrent && m.ReadyFor == 0 && !m.Healthy(s.ClusterID)
}

// voteHeldFor is how much longer repairPods keeps the member's outdated pod for its vote while
// the cluster has no quorum (heldVote), before giving it the current spec; 0 when it does not
// keep it so.
func (s State) voteHeldFor(m Member, withQuorum bool) time.Duration {
	if !m.repairable() || m.PodFailed || !m.outdatedDown(s) || versionProblem(s) != "" || !m.heldVote(s) || withQuorum {
		return 0
	}
	return s.Deadlines.MemberStart - m.UnreadyFor
}

// voteHeldNote names the first pod repairPods keeps for its vote, and for how long ("" when
// none is kept), for the message of the wait it causes.
func voteHeldNote(s State) string {
	withQuorum := s.hasQuorum()
	for _, m := range s.sorted() {
		if left := s.voteHeldFor(m, withQuorum); left > 0 {
			// Rounded up: a hold with half a second left is not "0s".
			left = (left + time.Second - 1).Truncate(time.Second)
			return fmt.Sprintf("; the pod of %s, built from an older spec, served since it started and is kept while the cluster has no quorum, since its vote may bring quorum back: it is given the current spec in %s if quorum is not back by then", m.Name, left)
		}
	}
	return ""
}

// heldVote: the member's pod served since it started and lost readiness less than
// Deadlines.MemberStart ago: a member cut off by a partition, whose vote may be what brings
// quorum back when it heals.
func (m Member) heldVote(s State) bool {
	return m.ServedSinceStart && m.UnreadyFor < s.Deadlines.MemberStart
}
