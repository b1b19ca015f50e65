package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

// planBootstrap creates the bootstrap members once; a volume that has held data forbids it.
func planBootstrap(s State, name func(int) string) Action {
	for _, m := range s.Members {
		if m.PVCHasData {
			// Status lost its cluster ID but a volume remembers it; the controller adopts it.
			return Action{Kind: Wait, Reason: v1alpha1.ReasonBootstrapping, Message: fmt.Sprintf("volume of %s holds data of an existing cluster: recovering its cluster ID instead of bootstrapping", m.Name)}
		}
	}
	size := s.BootstrapSize
	if size == 0 {
		size = s.Replicas
	}
	all := make([]string, size)
	missing := false
	for i := range all {
		all[i] = name(i)
		m, ok := s.byName(all[i])
		if !ok || !m.HasPVC || !m.HasPod {
			missing = true
		}
	}
	if missing {
		return Action{Kind: Bootstrap, Members: all, Reason: v1alpha1.ReasonBootstrapping,
			Message: fmt.Sprintf("creating the %d bootstrap members", size)}
	}
	// A bootstrap member whose pod cannot start (an image that does not pull, a restore that
	// refuses its snapshot) stops the bootstrap, and says why.
	for _, n := range all {
		if m, _ := s.byName(n); m.PodProblem != "" {
			return Action{Kind: Wait, Member: n, Reason: v1alpha1.ReasonBootstrapping, Attention: true,
				Message: fmt.Sprintf("bootstrap member %s does not start: %s", n, m.PodProblem)}
		}
	}
	return Action{Kind: Wait, Reason: v1alpha1.ReasonBootstrapping, Message: fmt.Sprintf("waiting for the %d bootstrap members to elect a leader", size)}
}

// planUnreachable: while no member answers with quorum, only the pods of members whose
// volumes hold data are brought back; a pod that ended is replaced.
func planUnreachable(s State) Action {
	for _, m := range s.sorted() {
		if m.HasPVC && m.PVCHasData && !m.PVCTerminating && !m.HasPod && m.Fenced == "" {
			a := Action{Kind: CreatePod, Member: m.Name, RequireData: true, Reason: v1alpha1.ReasonEtcdUnreachable,
				Message: fmt.Sprintf("etcd is unreachable; restarting member %s from its volume to restore quorum", m.Name)}
			if slices.Contains(s.FenceRequested, m.Name) {
				// The user fenced it: it comes back fenced (its etcd does not start).
				a.UserFenced = true
				a.Message = fmt.Sprintf("etcd is unreachable; restarting member %s from its volume, fenced (%s names it): unfence it if the others do not make a quorum", m.Name, names.AnnotationFenceMembers)
			}
			return a
		}
		if m.HasPod && m.PodFailed && !m.PodTerminating {
			return Action{Kind: DeletePod, Member: m.Name, Reason: v1alpha1.ReasonEtcdUnreachable,
				Message: fmt.Sprintf("etcd is unreachable; replacing the pod of %s, which ended, so that the member restarts from its volume", m.Name)}
		}
	}
	if a, ok := waitDiskFull(s); ok {
		// Not a lost quorum to force past: the data is on the full volumes.
		return a
	}
	for _, m := range s.sorted() {
		if m.DataDirLost {
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonMemberDataLost, Attention: true,
				Message: fmt.Sprintf("no member answers with quorum, and member %s refused to start: it has run before but its volume lost its data, and it will neither rejoin with an empty log nor start a new cluster; bring the other members back, or recover from the one with the most data (spec.recovery.forceNewCluster); if %s held the only copy, restore a backup into a new EtcdCluster", m.Name, m.Name)}
		}
	}
	if fenced := s.fencedMembers(); len(fenced) > 0 {
		return Action{Kind: Wait, Reason: v1alpha1.ReasonEtcdUnreachable, Attention: true,
			Message: fmt.Sprintf("no member answers with quorum, and members %s were fenced by a forced recovery that did not complete (their volumes are marked %s and never run again): set a new spec.recovery.forceNewCluster token to restart from the member that has the most data; only if you know that no member was forced, remove the annotation from their PVCs to bring them back", strings.Join(fenced, ", "), names.AnnotationFenced)}
	}
	return Action{Kind: Wait, Reason: v1alpha1.ReasonEtcdUnreachable, Attention: true,
		Message: "no member answers with quorum: waiting for members to come back from their volumes; if a majority of volumes is lost for good, set spec.recovery.forceNewCluster to restart from the member that has the most data (writes it had not applied are lost)"}
}
