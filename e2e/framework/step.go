package framework

import (
	"context"
	"fmt"
)

// Step is one named action of a scenario's steps: a failure names the scenario and the step.
type Step struct {
	Name string
	Do   func(ctx context.Context, r *Run) error
}

// StepError is a failed step: which scenario, which step (1-based, of how many), and why.
type StepError struct {
	Scenario string
	Step     string
	Index, N int
	Err      error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("scenario %s, step %d/%d %q: %v", e.Scenario, e.Index, e.N, e.Step, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Defer registers f to run when the scenario's steps end, whether they all passed or one
// failed, newest first: a fault that spans several steps ends there, as a defer in one
// closure ended it when that closure returned.
func (r *Run) Defer(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deferred = append(r.deferred, f)
}

// runSteps runs the steps in order and stops at the first that fails, logging each step as it
// starts; then it runs what the steps deferred (Defer), newest first.
func (r *Run) runSteps(ctx context.Context, scenario string, steps []Step, logf func(format string, args ...any)) error {
	defer func() {
		r.mu.Lock()
		deferred := r.deferred
		r.deferred = nil
		r.mu.Unlock()
		for i := len(deferred) - 1; i >= 0; i-- {
			deferred[i]()
		}
	}()
	for i, s := range steps {
		logf("%s: step %d/%d %q", scenario, i+1, len(steps), s.Name)
		if err := s.Do(ctx, r); err != nil {
			return &StepError{Scenario: scenario, Step: s.Name, Index: i + 1, N: len(steps), Err: err}
		}
	}
	return nil
}

// stepFailure is how a failed step is reported: in the test's error and in the report's
// record of the scenario.
func stepFailure(err error) string {
	return "scenario steps failed: " + err.Error()
}
