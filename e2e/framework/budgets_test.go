package framework

import (
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker/availability"
)

func TestPartitionBudget(t *testing.T) {
	et := time.Second
	for _, tc := range []struct {
		name   string
		class  Class
		cutOff int
		want   availability.Budget
	}{
		{"leader cut off: two election timeouts and a second", Partition, 1,
			availability.Budget{MaxWriteGap: 3 * time.Second, MaxFirstWrite: 5 * time.Second, MinSuccessRatio: 0.95}},
		{"no partition injected", Partition, 0,
			availability.Budget{MaxWriteGap: 3 * time.Second, MaxFirstWrite: 5 * time.Second, MinSuccessRatio: 0.95}},
		{"two of five cut off: two request timeouts and a second", Partition, 2,
			availability.Budget{MaxWriteGap: 5 * time.Second, MaxFirstWrite: 5 * time.Second, MinSuccessRatio: 0.95}},
		{"a fault class keeps its budget", Fault, 2,
			availability.Budget{MaxWriteGap: 2 * time.Second, MaxFirstWrite: 5 * time.Second, MinSuccessRatio: 0.99}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rule, _ := DefaultBudgets.Rule(tc.class)
			if got := partitionBudget(rule.Budget(et), rule, tc.class, tc.cutOff); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
