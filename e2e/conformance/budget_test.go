//go:build !e2e

package conformance

import (
	"reflect"
	"testing"
)

// learner-budget runs at the release given for it, on the node, needing that release: without
// the flag it is skipped, saying so, not run at the suite's etcd version (where a learner is
// never Ready and the budget's learner margin is never tested).
func TestLearnerBudgetScenario(t *testing.T) {
	opts := campaignOptions()
	opts.LearnerReadyVersion = "3.5.17"
	sc := LearnerBudget(opts)
	var steps []string
	for _, s := range sc.Steps {
		steps = append(steps, s.Name)
	}
	got := []any{sc.Name, sc.Labels["suite"], sc.Replicas, sc.Version, sc.NeedsNode, needs(sc), steps}
	want := []any{"learner-budget", "safety", int32(3), "3.5.17", true, []string{LearnerReadyRelease.Name}, []string{
		"ask for 5 members and stop the operator once it added a learner",
		"the learner's pod becomes Ready and the budget counts it",
		"evict two followers: the first is allowed, the budget refuses the second",
		"start the operator again: the evicted member comes back and the learner is promoted",
		"wait for 5 members settled",
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("learner-budget: %v\nwant %v", got, want)
	}
}
