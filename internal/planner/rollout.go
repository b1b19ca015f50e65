package planner

import (
	"fmt"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/version"
)

// rollPods replaces one outdated member pod: followers first, the leader last after leadership
// has moved, each only once every member's pod has been ready for RollSettle. A version
// change that etcd's rules forbid stops the rollout before it starts.
func rollPods(s State) (Action, bool) {
	var leader *Member
	ms := s.sorted()
	outdated := false
	for _, m := range ms {
		outdated = outdated || m.InEtcd && m.HasPod && m.needsRoll()
	}
	if !outdated {
		return Action{}, false
	}
	if p := versionProblem(s); p != "" {
		return Action{Kind: Wait, Reason: v1alpha1.ReasonVersionChangeRefused, Attention: true, Message: p}, true
	}
	for _, m := range ms {
		if m.InEtcd && m.HasPod && m.ReadyFor < s.RollSettle {
			a := Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonRollingUpdate,
				Message: fmt.Sprintf("waiting until the pod of %s has been ready for %s before replacing the next pod, so that clients reconnect to it first", m.Name, s.RollSettle)}
			if m.ReadyFor > 0 {
				// Ready already: the wait ends at a known moment (a pod that is not Ready yet
				// wakes the operator when it becomes Ready).
				a.Retry = s.RollSettle - m.ReadyFor
			}
			return a, true
		}
	}
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if !m.InEtcd || !m.HasPod || !m.needsRoll() {
			continue
		}
		if m.ID == s.LeaderID && len(s.voters()) > 1 && !mutant.On("skip-leader-move") {
			leader = &ms[i]
			continue
		}
		why := "to apply the new spec"
		if m.PodCurrent {
			why = "to grow its file system to the expanded volume"
		}
		if a, ok := drainFromService(s, m, v1alpha1.ReasonRollingUpdate, "replacing its pod"); ok {
			return a, true
		}
		return Action{Kind: DeletePod, Member: m.Name, Reason: v1alpha1.ReasonRollingUpdate,
			Message: "replacing the pod of " + m.Name + " " + why}, true
	}
	if leader != nil {
		if a, ok := drainFromService(s, *leader, v1alpha1.ReasonRollingUpdate, "moving leadership away from it and replacing its pod"); ok {
			return a, true
		}
		if a, ok := moveLeaderAway(s, *leader, "before replacing its pod"); ok {
			a.Reason = v1alpha1.ReasonRollingUpdate
			return a, true
		}
	}
	return Action{}, false
}

// needsRoll: the member's pod must be replaced: it was built from an older spec, or its volume
// was expanded and its file system grows at the next start.
func (m Member) needsRoll() bool { return !m.PodCurrent || m.VolumeResizePending }

// versionProblem says why spec.version cannot be rolled out, or "": the version must be a
// release the operator knows, a change must follow etcd's upgrade rules from the lowest
// version any member runs (which is etcd's own cluster version), and a member that runs the
// new spec must report the version the spec names.
func versionProblem(s State) string {
	want, err := version.Parse(s.Version)
	if err != nil {
		return fmt.Sprintf("spec.version %q: %v", s.Version, err)
	}
	if err := version.Known(want); err != nil {
		return err.Error()
	}
	var lowest *version.Version
	for _, m := range s.Members {
		if !m.InEtcd || !m.Reachable || m.Version == "" {
			continue
		}
		v, err := version.Parse(m.Version)
		if err != nil {
			continue
		}
		if m.PodCurrent && v != want {
			image := "the operator's image for " + s.Version
			if s.Image != "" {
				image = "spec.image " + s.Image
			}
			return fmt.Sprintf("member %s runs etcd %s from %s, but spec.version is %s: the rollout is stopped; set spec.version to %s, or use an image of etcd %s", m.Name, v, image, want, v, want)
		}
		if lowest == nil || v.Less(*lowest) {
			lowest = &v
		}
	}
	if lowest != nil && *lowest != want {
		if err := version.CheckChange(*lowest, want); err != nil {
			return fmt.Sprintf("spec.version %s cannot be rolled out while members run etcd %s: %v", want, lowest, err)
		}
	}
	return ""
}
