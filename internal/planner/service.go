package planner

import (
	"fmt"
	"slices"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// ServiceDrainLimit bounds the wait for the client Service to drop the endpoint of a member
// taken out of it: past it (no EndpointSlice controller, or one far behind), the stop goes
// ahead, and the launcher's stop delay is what is left to clients.
const ServiceDrainLimit = 30 * time.Second

// drainFromService takes a member out of the client Service before the operator stops it or
// moves leadership away from it: clients that know only the Service connect to the other
// members from then on. It waits until the Service's EndpointSlices no longer list the pod
// (kube-proxy stops sending new connections to it a sync later, which the launcher's stop
// delay covers), and returns false once the member may be stopped.
func drainFromService(s State, m Member, reason, before string) (Action, bool) {
	if !m.HasPod || m.PodTerminating || !m.Reachable || m.DrainRefused {
		return Action{}, false // nobody is served by it, or it cannot be taken out
	}
	if !slices.ContainsFunc(s.Members, func(o Member) bool {
		return o.Name != m.Name && o.HasPod && !o.PodTerminating && !o.Unpublished && o.Reachable
	}) {
		return Action{}, false // no other member would serve its clients: the Service keeps it
	}
	if !m.Unpublished {
		return Action{Kind: Unpublish, Member: m.Name, Reason: reason,
			Message: fmt.Sprintf("taking %s out of the client Service before %s, so that clients that know only the Service move to the other members first", m.Name, before)}, true
	}
	if m.InService && m.UnpublishedFor < ServiceDrainLimit {
		return Action{Kind: Wait, Member: m.Name, Reason: reason, Retry: time.Second, Draining: true,
			Message: fmt.Sprintf("waiting for the client Service to drop the endpoint of %s before %s (%s of at most %s)", m.Name, before, m.UnpublishedFor.Round(time.Second), ServiceDrainLimit)}, true
	}
	return Action{}, false
}

// republish puts back into the client Service a member taken out of it that the next step
// does not stop after all (the rollout it was taken out for was reverted, or something else
// must happen first), before that step: a member must not stay out of the Service while the
// operator waits for something else. It acts even while the cluster is paused, restoring
// what a pause interrupted.
func republish(s State, next Action) Action {
	for _, m := range s.Members {
		if !m.Unpublished || !m.HasPod || m.PodTerminating {
			continue
		}
		if next.Member == m.Name && (next.Kind == Unpublish || next.Kind == Wait && next.Draining ||
			next.Kind == MoveLeader || next.Kind == DeletePod || next.Kind == Remove) {
			continue // its stop is under way
		}
		reason := next.Reason
		if reason == "" {
			reason = v1alpha1.ReasonRollingUpdate
		}
		return Action{Kind: Publish, Member: m.Name, Reason: reason,
			Message: fmt.Sprintf("putting %s back into the client Service: the step it was taken out for is not next (%s)", m.Name, next.Message)}
	}
	return next
}
