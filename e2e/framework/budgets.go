package framework

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker/availability"
)

// Class is the kind of disruption a scenario causes, which decides its availability budget.
type Class string

const (
	// Planned: what the operator does on purpose (steady state, scaling, an etcd upgrade,
	// storage and install-scope migrations, member replacement, an operator upgrade through
	// OLM, a pod deleted by anyone, which hands leadership over before it stops).
	Planned Class = "planned"
	// Fault: a single unplanned fault that keeps a quorum, such as the leader's pod or
	// container killed: an election, and the requests in flight to the member hit.
	Fault Class = "fault"
	// Partition: members cut off from the network. The side with a quorum elects a leader
	// after an election timeout that etcd draws between one and two times the configured
	// one, and the clients of the cut-off members wait out their request timeout, on each
	// of them in turn (Run.budget allows for that).
	Partition Class = "partition"
)

// BudgetRule is a class's budget in the form users write it: the longest write gap as a
// duration, or as a number of election timeouts plus a duration (the cluster's own election
// timeout is known only when the scenario runs), and the lowest share of successful
// operations.
type BudgetRule struct {
	Gap             time.Duration
	ElectionTimeout float64 // how many election timeouts Gap adds
	MinSuccessRatio float64
	FirstWrite      time.Duration
}

// Budget resolves the rule for a cluster whose election timeout is et.
func (b BudgetRule) Budget(et time.Duration) availability.Budget {
	return availability.Budget{
		MaxWriteGap:     b.Gap + time.Duration(b.ElectionTimeout*float64(et)),
		MaxFirstWrite:   b.FirstWrite,
		MinSuccessRatio: b.MinSuccessRatio,
	}
}

// String renders the rule as its flag parses it: gap=[N*election+]D,ok=P.
func (b BudgetRule) String() string {
	gap := b.Gap.String()
	if b.ElectionTimeout != 0 {
		gap = strconv.FormatFloat(b.ElectionTimeout, 'g', -1, 64) + "*election+" + gap
	}
	return fmt.Sprintf("gap=%s,ok=%s", gap, strconv.FormatFloat(100*b.MinSuccessRatio, 'g', -1, 64))
}

// Set parses gap=1s,ok=99.9 or gap=2*election+1s,ok=99 (either part may be left out, keeping
// the default).
func (b *BudgetRule) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%q: want gap=DURATION or gap=N*election+DURATION, and ok=PERCENT", part)
		}
		switch k {
		case "gap":
			n, rest := 0.0, v
			if head, tail, found := strings.Cut(v, "*election+"); found {
				f, err := strconv.ParseFloat(head, 64)
				if err != nil || f < 0 {
					return fmt.Errorf("gap=%s: %q is not a number of election timeouts", v, head)
				}
				n, rest = f, tail
			} else if head, found := strings.CutSuffix(v, "*election"); found {
				f, err := strconv.ParseFloat(head, 64)
				if err != nil || f < 0 {
					return fmt.Errorf("gap=%s: %q is not a number of election timeouts", v, head)
				}
				n, rest = f, "0s"
			}
			d, err := time.ParseDuration(rest)
			if err != nil || d < 0 {
				return fmt.Errorf("gap=%s: %q is not a duration such as 1s or 500ms", v, rest)
			}
			b.Gap, b.ElectionTimeout = d, n
		case "ok":
			p, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if err != nil || p < 0 || p > 100 {
				return fmt.Errorf("ok=%s: want a percentage between 0 and 100, such as 99.9", v)
			}
			b.MinSuccessRatio = p / 100
		default:
			return fmt.Errorf("%q: unknown budget field %q (gap, ok)", part, k)
		}
	}
	return nil
}

// Budgets are the budgets of the classes.
type Budgets struct {
	Planned, Fault, Partition BudgetRule
}

// DefaultBudgets: a planned operation may not stop writes for more than a second nor fail
// more than one operation in a thousand; a single unplanned fault costs at most an election
// timeout and a second; a partition two election timeouts (etcd's randomised timeout) and a
// second. Every scenario gets 5 s to its first write.
var DefaultBudgets = Budgets{
	Planned:   BudgetRule{Gap: time.Second, MinSuccessRatio: 0.999, FirstWrite: 5 * time.Second},
	Fault:     BudgetRule{Gap: time.Second, ElectionTimeout: 1, MinSuccessRatio: 0.99, FirstWrite: 5 * time.Second},
	Partition: BudgetRule{Gap: time.Second, ElectionTimeout: 2, MinSuccessRatio: 0.95, FirstWrite: 5 * time.Second},
}

func (b *Budgets) register() {
	*b = DefaultBudgets
	flag.Var(&b.Planned, "budget-planned", "availability budget of planned operations (steady state, scaling, etcd and operator upgrades, migrations, member replacement, pod deletion): gap=DURATION,ok=PERCENT")
	flag.Var(&b.Fault, "budget-fault", "availability budget of a single unplanned fault (a member's pod or container killed): gap=[N*election+]DURATION,ok=PERCENT, where election is the cluster's election timeout")
	flag.Var(&b.Partition, "budget-partition", "availability budget of a member cut off from the network: gap=[N*election+]DURATION,ok=PERCENT")
}

// Rule is the budget rule of a class.
func (b Budgets) Rule(c Class) (BudgetRule, bool) {
	switch c {
	case Planned:
		return b.Planned, true
	case Fault:
		return b.Fault, true
	case Partition:
		return b.Partition, true
	}
	return BudgetRule{}, false
}
