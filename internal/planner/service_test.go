package planner

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// A member the operator stops leaves the client Service first; one taken out for a stop that
// is not next goes back.
func TestServiceDrain(t *testing.T) {
	outdated := func(m *Member) { m.PodCurrent = false }
	unpublished := func(ago time.Duration, inService bool) func(*Member) {
		return func(m *Member) { m.Unpublished, m.UnpublishedFor, m.InService = true, ago, inService }
	}
	rolling := v1alpha1.ReasonRollingUpdate
	for _, tc := range []struct {
		name  string
		state State
		want  Action
	}{
		{"a follower leaves the Service before its pod is replaced", running(3, member(2, outdated)),
			Action{Kind: Unpublish, Member: "c-2", Reason: rolling,
				Message: "taking c-2 out of the client Service before replacing its pod, so that clients that know only the Service move to the other members first"}},
		{"then the operator waits for its endpoint to go", running(3, member(2, outdated, unpublished(2*time.Second, true))),
			Action{Kind: Wait, Member: "c-2", Reason: rolling, Retry: time.Second, Draining: true,
				Message: "waiting for the client Service to drop the endpoint of c-2 before replacing its pod (2s of at most 30s)"}},
		{"and replaces the pod once it went", running(3, member(2, outdated, unpublished(3*time.Second, false))),
			Action{Kind: DeletePod, Member: "c-2", Reason: rolling, Message: "replacing the pod of c-2 to apply the new spec"}},
		{"or once the wait is over, endpoint or not", running(3, member(2, outdated, unpublished(ServiceDrainLimit, true))),
			Action{Kind: DeletePod, Member: "c-2", Reason: rolling, Message: "replacing the pod of c-2 to apply the new spec"}},
		{"the leader leaves the Service before leadership leaves it", running(3, member(0, outdated)),
			Action{Kind: Unpublish, Member: "c-0", Reason: rolling,
				Message: "taking c-0 out of the client Service before moving leadership away from it and replacing its pod, so that clients that know only the Service move to the other members first"}},
		{"a member taken out for a rollout that was reverted goes back", running(3, member(1, unpublished(time.Minute, false))),
			Action{Kind: Publish, Member: "c-1", Reason: v1alpha1.ReasonSettled,
				Message: "putting c-1 back into the client Service: the step it was taken out for is not next (3 healthy voting members)"}},
		{"and while the cluster is paused", running(3, func(s *State) { s.Paused = true }, member(1, outdated, unpublished(time.Minute, false))),
			Action{Kind: Publish, Member: "c-1", Reason: v1alpha1.ReasonPaused,
				Message: "putting c-1 back into the client Service: the step it was taken out for is not next (spec.paused is true: the operator makes no changes; set it to false to resume)"}},
		{"and while another member's pod is not ready", running(3, settle, member(2, outdated, unpublished(time.Minute, false)), member(1, func(m *Member) { m.ReadyFor = 0 })),
			Action{Kind: Publish, Member: "c-2", Reason: rolling,
				Message: "putting c-2 back into the client Service: the step it was taken out for is not next (waiting until the pod of c-1 has been ready for 10s before replacing the next pod, so that clients reconnect to it first)"}},
		{"a member whose pod may not be relabelled is stopped without", running(3, member(2, outdated, func(m *Member) { m.DrainRefused = true })),
			Action{Kind: DeletePod, Member: "c-2", Reason: rolling, Message: "replacing the pod of c-2 to apply the new spec"}},
		{"a member taken out goes back while another wait names it", running(3, member(2, outdated, unpublished(time.Minute, false), func(m *Member) { m.HasLeader = false })),
			Action{Kind: Publish, Member: "c-2", Reason: v1alpha1.ReasonMemberUnhealthy}},
		{"a single member keeps its Service while it is replaced", running(1, member(0, outdated)),
			Action{Kind: DeletePod, Member: "c-0", Reason: rolling, Message: "replacing the pod of c-0 to apply the new spec"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Plan(tc.state, name)
			if tc.want.Message == "" {
				got.Message = ""
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Plan (-want +got):\n%s", d)
			}
		})
	}
}
