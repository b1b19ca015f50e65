package checker

import (
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/history"
)

// All's verdicts come in the order of Names, one per checker, each named as Names says.
func TestAllInReportOrder(t *testing.T) {
	vs, _ := All(&history.History{}, Input{LinearizabilityTimeout: time.Second, Dir: t.TempDir()})
	if len(vs) != len(Names) {
		t.Fatalf("%d verdicts for %d checkers", len(vs), len(Names))
	}
	for i, v := range vs {
		if v.Checker != Names[i] {
			t.Errorf("verdict %d is %s's, want %s's", i, v.Checker, Names[i])
		}
	}
}
