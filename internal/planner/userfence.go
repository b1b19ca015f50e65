package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

// Fencing at the user's request: the EtcdCluster's names.AnnotationFenceMembers names members
// whose etcd is stopped while their pods stay, for investigation. A fenced member stays a
// voter; it is no failure: it is not replaced, removed, repaired or recovered, and the steps
// that would touch the members (membership changes, rolling updates, repairs, recoveries) wait
// until it is unfenced. A fence that would leave fewer healthy, unfenced voters than a quorum is
// refused (FenceRefusal). This is not the fencing of volumes by a forced recovery (Member.Fenced).

const (
	// FenceMember puts names.AnnotationStopEtcd on Member's pod: its launcher hands leadership
	// over and stops etcd.
	FenceMember Kind = "FenceMember"
	// UnfenceMember removes names.AnnotationStopEtcd from Member's pod: etcd starts again.
	UnfenceMember Kind = "UnfenceMember"
)

// ParseFenceMembers reads the annotation's comma-separated member names, in order, without
// blanks or repeats.
func ParseFenceMembers(value string) []string {
	var out []string
	for _, n := range strings.Split(value, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// UserFencedMembers are the members whose pods are fenced, by index.
func (s State) UserFencedMembers() []string {
	var out []string
	for _, m := range s.sorted() {
		if m.UserFenced && m.HasPod {
			out = append(out, m.Name)
		}
	}
	return out
}

// known: the name is one of the cluster's members (in etcd's list, or with a pod).
func (s State) knownMember(name string) (Member, bool) {
	m, ok := s.byName(name)
	return m, ok && (m.InEtcd || m.HasPod)
}

// fenceArithmetic says whether fencing m keeps a quorum of healthy, unfenced voters, and if
// not, why, with the numbers.
func (s State) fenceArithmetic(m Member) (bool, string) {
	if m.HasPod && !m.LauncherFences {
		return false, "its pod was created by an operator release whose launcher cannot stop etcd for a fence; it gets one at its next roll, or delete the pod (it is recreated at once)"
	}
	if s.Join != nil {
		return false, "a join (spec.bootstrap.join) is in progress: the external voters are not counted"
	}
	voters := s.voters()
	if !m.InEtcd || m.Learner {
		return true, ""
	}
	quorum := len(voters)/2 + 1
	var staying, unhealthy, fenced []string
	for _, v := range voters {
		switch {
		case v.Name == m.Name:
		case v.UserFenced:
			fenced = append(fenced, v.Name)
		case !v.Healthy(s.ClusterID) || v.PodTerminating || v.Unpublished:
			// A member stopping (its pod terminating, or taken out of the Service to be
			// stopped) still answers, but will not stay.
			unhealthy = append(unhealthy, v.Name)
		default:
			staying = append(staying, v.Name)
		}
	}
	if len(staying) >= quorum {
		return true, ""
	}
	why := fmt.Sprintf("it would leave %d healthy, unfenced voter(s) of %d (%s), fewer than a quorum of %d",
		len(staying), len(voters), listOrNone(staying), quorum)
	if len(unhealthy) > 0 {
		why += "; unhealthy or stopping: " + strings.Join(unhealthy, ", ")
	}
	if len(fenced) > 0 {
		why += "; fenced already: " + strings.Join(fenced, ", ")
	}
	return false, why + "; bring the unhealthy members back, or unfence others first"
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// FenceRefusal says which of the requested fences are refused and why ("" when none is):
// names that are no member of the cluster, and fences that would lose the quorum.
func FenceRefusal(s State) string {
	var unknown, refused []string
	for _, n := range s.FenceRequested {
		m, ok := s.knownMember(n)
		switch {
		case !ok:
			unknown = append(unknown, n)
		case m.UserFenced || !m.HasPod || !s.EtcdReachable:
		default:
			if allowed, why := s.fenceArithmetic(m); !allowed {
				refused = append(refused, fmt.Sprintf("fencing %s is refused: %s", n, why))
			}
		}
	}
	var parts []string
	if len(unknown) > 0 {
		var members []string
		for _, m := range s.sorted() {
			if m.InEtcd || m.HasPod {
				members = append(members, m.Name)
			}
		}
		parts = append(parts, fmt.Sprintf("%s: no member of this cluster (its members: %s); remove it from the annotation %s",
			strings.Join(unknown, ", "), listOrNone(members), names.AnnotationFenceMembers))
	}
	if len(refused) > 0 {
		parts = append(parts, strings.Join(refused, ". "))
	}
	return strings.Join(parts, ". ")
}

// planUserFence fences and unfences, one member a pass, and holds the other steps while a
// member is fenced.
func planUserFence(s State) (Action, bool) {
	requested := map[string]bool{}
	for _, n := range s.FenceRequested {
		requested[n] = true
	}
	// Unfencing only gives a member back: it is always allowed.
	for _, m := range s.sorted() {
		if m.UserFenced && m.HasPod && !m.PodTerminating && !requested[m.Name] {
			return Action{Kind: UnfenceMember, Member: m.Name, Reason: v1alpha1.ReasonUnfencing,
				Message: fmt.Sprintf("unfencing %s: it is no longer named in %s; its etcd starts again", m.Name, names.AnnotationFenceMembers)}, true
		}
	}
	if !s.EtcdReachable {
		// Nothing is known of the voters' health: no fence is added, and the other members are
		// restarted from their volumes as without a fence (planUnreachable; a fenced member
		// comes back fenced), since a quorum of them may restore the cluster.
		return Action{}, false
	}
	for _, n := range s.FenceRequested {
		m, ok := s.knownMember(n)
		if !ok || !m.HasPod || m.PodTerminating || m.UserFenced {
			continue
		}
		if allowed, _ := s.fenceArithmetic(m); allowed {
			return Action{Kind: FenceMember, Member: m.Name, Reason: v1alpha1.ReasonFencing,
				Message: fmt.Sprintf("fencing %s at the user's request (%s): its etcd stops, its pod stays", m.Name, names.AnnotationFenceMembers)}, true
		}
	}
	// A fenced member whose pod is gone gets it back fenced, if its fence is still allowed.
	for _, n := range s.FenceRequested {
		m, ok := s.knownMember(n)
		if !ok || m.HasPod {
			continue
		}
		if a, ok := ensureObjects(s); ok && a.Kind == CreatePod && a.Member == m.Name {
			if allowed, _ := s.fenceArithmetic(m); allowed {
				a.UserFenced = true
				a.Message += ", fenced (" + names.AnnotationFenceMembers + " names it)"
				return a, true
			}
		}
	}
	return holdWhileUserFenced(s)
}

// holdWhileUserFenced: while a member is fenced, only missing objects are created; everything
// else waits for the user to unfence it.
func holdWhileUserFenced(s State) (Action, bool) {
	fenced := s.UserFencedMembers()
	if len(fenced) == 0 {
		return Action{}, false
	}
	if s.EtcdReachable {
		if a, ok := ensureObjects(s); ok {
			return a, true
		}
	}
	return Action{Kind: Wait, Reason: v1alpha1.ReasonWaitingForUnfence, Message: fmt.Sprintf(
		"%s %s fenced at the user's request: membership changes, rolling updates, repairs and recoveries wait; remove %s from the annotation %s to unfence",
		strings.Join(fenced, ", "), verb(fenced), pronoun(fenced), names.AnnotationFenceMembers)}, true
}

func pronoun(members []string) string {
	if len(members) == 1 {
		return "it"
	}
	return "them"
}

func verb(members []string) string {
	if len(members) == 1 {
		return "is"
	}
	return "are"
}
