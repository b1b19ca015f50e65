package planner

import (
	"fmt"
	"strings"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// hibernate stops every member pod while spec.hibernate is true, and holds every other change
// while it is. It keeps what a member restarts from: the volumes, the Secrets, the Services
// and etcd's membership (nothing is removed, replaced, repaired or forced). Pods stop one at a
// time, each through etcd's ordinary shutdown (the launcher hands leadership over on SIGTERM),
// followers first and the leader last; every write etcd acknowledged is on a majority of the
// volumes already, whatever the order. Waking is no step of its own: with the pods gone and
// the volumes marked as having held data, the members restart from them (planUnreachable,
// RequireData), never bootstrapped again.
func hibernate(s State) (Action, bool) {
	if !s.Hibernate {
		return Action{}, false
	}
	left := podsLeft(s)
	if s.ClusterID == 0 {
		if len(left) == 0 {
			return Action{Kind: Wait, Reason: v1alpha1.ReasonHibernated,
				Message: "spec.hibernate is true and the cluster has not formed: no member is created until it is set to false"}, true
		}
		// Bootstrap members that run form the cluster first: stopping them half-way would
		// leave volumes that neither bootstrap again nor hold a cluster to restart.
		return Action{Kind: Wait, Reason: v1alpha1.ReasonHibernating,
			Message: fmt.Sprintf("spec.hibernate is true, and the bootstrap members %s already run: no member is added; they stop once the cluster has formed and its ID is recorded", strings.Join(left, ", "))}, true
	}
	if s.Join != nil {
		return Action{Kind: Wait, Reason: v1alpha1.ReasonHibernating, Attention: true,
			Message: "spec.hibernate is not acted on while a join (spec.bootstrap.join) has not completed: the external members vote in the same cluster and would be left without the operator's members; complete the join first, or set spec.hibernate to false"}, true
	}
	if r := s.Recovery; r.Requested != "" && r.Requested == r.Token && (r.Phase == v1alpha1.RecoveryRestarting || r.Phase == v1alpha1.RecoveryRejoining) {
		return Action{Kind: Wait, Reason: v1alpha1.ReasonHibernating,
			Message: fmt.Sprintf("hibernation waits for the forced recovery %q (phase %s) to complete; spec.hibernate is acted on then", r.Token, r.Phase)}, true
	}
	var next, leader, stuck *Member
	for _, m := range s.sorted() {
		switch {
		case !m.HasPod:
		case m.Started && m.HasPVC && !m.PVCHasData && !m.PodTerminating:
			// The PVC's record that the member has run is what restarts it on waking, and
			// nothing writes it while the cluster is down: it is written first.
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonHibernating,
				Message: fmt.Sprintf("hibernating: waiting for the volume of %s to record that the member has run before its pod stops", m.Name)}, true
		case m.PodTerminating && m.TerminatingFor < s.Deadlines.Terminating:
			// One member stops at a time: the next waits for this one's shutdown.
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonHibernating,
				Message: fmt.Sprintf("hibernating: waiting for the pod of %s to stop before the next one (%d member pods left)", m.Name, len(left))}, true
		case m.PodTerminating:
			if stuck == nil {
				stuck = &m
			}
		case s.LeaderID != 0 && m.InEtcd && m.ID == s.LeaderID:
			leader = &m
		case next == nil:
			next = &m
		}
	}
	switch {
	case next != nil:
		return Action{Kind: DeletePod, Member: next.Name, Reason: v1alpha1.ReasonHibernating,
			Message: fmt.Sprintf("hibernating: stopping the pod of %s (%d member pods left, the leader last); its volume keeps its data", next.Name, len(left))}, true
	case leader != nil:
		return Action{Kind: DeletePod, Member: leader.Name, Reason: v1alpha1.ReasonHibernating,
			Message: fmt.Sprintf("hibernating: stopping the pod of the leader %s, the last member pod; its volume keeps its data", leader.Name)}, true
	case stuck != nil:
		return Action{Kind: Wait, Member: stuck.Name, Reason: v1alpha1.ReasonHibernating, Attention: true,
			Message: fmt.Sprintf("hibernating: the pod of %s has been terminating for %s; its node may not answer: the cluster is hibernated once it is gone (delete it with --force only if its node is down for good)", stuck.Name, stuck.TerminatingFor.Round(1e9))}, true
	}
	return Action{Kind: Wait, Reason: v1alpha1.ReasonHibernated,
		Message: "hibernated: every member pod is stopped; the volumes, Secrets, Services and membership are kept, and other spec changes wait; set spec.hibernate to false to wake the cluster"}, true
}

// podsLeft names the members that still have a pod, terminating or not.
func podsLeft(s State) []string {
	var left []string
	for _, m := range s.sorted() {
		if m.HasPod {
			left = append(left, m.Name)
		}
	}
	return left
}

// wake words the steps of a cluster woken from hibernation that has no quorum yet: its members
// restart from their volumes (planUnreachable), which is what waking is, and no lost quorum
// to alarm anyone about. A member that does not start, or a reason planUnreachable gives that
// is not only a wait, is still reported as it.
func wake(s State, a Action) Action {
	if !s.Waking {
		return a
	}
	switch {
	case a.Kind == CreatePod && a.Reason == v1alpha1.ReasonEtcdUnreachable:
		a.Reason = v1alpha1.ReasonWaking
		a.Message = fmt.Sprintf("waking from hibernation: restarting member %s from its volume", a.Member)
	case a.Kind == Wait && a.Reason == v1alpha1.ReasonEtcdUnreachable && len(s.fencedMembers()) == 0:
		for _, m := range s.sorted() {
			if m.HasPod && m.PodProblem != "" {
				return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonWaking, Attention: true,
					Message: fmt.Sprintf("waking from hibernation: member %s does not start: %s", m.Name, m.PodProblem)}
			}
		}
		return Action{Kind: Wait, Reason: v1alpha1.ReasonWaking,
			Message: "waking from hibernation: the members restarted from their volumes; waiting for them to elect a leader"}
	}
	return a
}
