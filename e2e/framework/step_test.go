package framework

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// A failing step stops the steps, runs what they deferred, and is reported with the
// scenario's name and its own.
func TestStepFailureNamesTheStep(t *testing.T) {
	var did, logs []string
	step := func(name string, err error) Step {
		return Step{Name: name, Do: func(context.Context, *Run) error {
			did = append(did, name)
			return err
		}}
	}
	r := &Run{}
	deferring := Step{Name: "start a fault", Do: func(_ context.Context, r *Run) error {
		did = append(did, "start a fault")
		r.Defer(func() { did = append(did, "fault ended") })
		return nil
	}}
	steps := []Step{deferring, step("delete leader pod", errors.New("pods \"etcd-0\" is forbidden")), step("wait recovered", nil)}
	err := r.runSteps(context.Background(), "pod-deletion", steps, func(format string, args ...any) {
		logs = append(logs, fmt.Sprintf(format, args...))
	})
	if err == nil {
		t.Fatal("the failing step was not reported")
	}
	const want = `scenario steps failed: scenario pod-deletion, step 2/3 "delete leader pod": pods "etcd-0" is forbidden`
	if got := stepFailure(err); got != want {
		t.Errorf("failure reported as\n%s\nwant\n%s", got, want)
	}
	var se *StepError
	if !errors.As(err, &se) || se.Step != "delete leader pod" || se.Scenario != "pod-deletion" {
		t.Errorf("error %#v is not the StepError of the failing step", err)
	}
	if want := []string{"start a fault", "delete leader pod", "fault ended"}; !slices.Equal(did, want) {
		t.Errorf("ran %q, want %q", did, want)
	}
	if want := []string{`pod-deletion: step 1/3 "start a fault"`, `pod-deletion: step 2/3 "delete leader pod"`}; !slices.Equal(logs, want) {
		t.Errorf("logged %q, want %q", logs, want)
	}
	if len(r.deferred) != 0 {
		t.Errorf("%d deferred functions left after the steps", len(r.deferred))
	}
}

// Steps that all pass run in order and report nothing.
func TestStepsInOrder(t *testing.T) {
	var did []string
	var steps []Step
	for _, n := range []string{"a", "b", "c"} {
		steps = append(steps, Step{Name: n, Do: func(context.Context, *Run) error { did = append(did, n); return nil }})
	}
	if err := (&Run{}).runSteps(context.Background(), "s", steps, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(did, []string{"a", "b", "c"}) {
		t.Errorf("ran %q", did)
	}
}
