package checker

import (
	"time"

	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/checker/linearizability"
	"github.com/quorate-dev/quorate/e2e/checker/lostwrites"
	"github.com/quorate-dev/quorate/e2e/checker/splitbrain"
	"github.com/quorate-dev/quorate/e2e/checker/watch"
	"github.com/quorate-dev/quorate/e2e/history"
)

// Name names a checker in verdicts, expectations and reports.
type Name = history.CheckerName

// Code names the reason of a verdict; each checker's package defines its codes.
type Code = history.Code

// The checkers.
const (
	Linearizability = linearizability.Name
	LostWrites      = lostwrites.Name
	Availability    = availability.Name
	SplitBrain      = splitbrain.Name
	Watch           = watch.Name
)

// Names are the checkers in report order: the order of All's verdicts.
var Names = []Name{Linearizability, LostWrites, Availability, SplitBrain, Watch}

// Input is what the checkers judge a history against.
type Input struct {
	// Budget is the availability budget.
	Budget availability.Budget
	// LinearizabilityTimeout bounds the linearizability search (inconclusive after it).
	LinearizabilityTimeout time.Duration
	// Dir receives the checkers' artifacts (the linearizability visualization).
	Dir string
}

// All judges h with every checker, as the suite and the corpus do, and returns the verdicts in
// report order (Names) with the availability checker's statistics.
func All(h *history.History, in Input) ([]history.Verdict, availability.Stats) {
	lin := linearizability.Check(h, in.LinearizabilityTimeout, in.Dir)
	av, stats := availability.Check(h, in.Budget)
	return []history.Verdict{lin, lostwrites.Check(h), av, splitbrain.Check(h, splitbrain.DefaultBounds), watch.Check(h)}, stats
}
