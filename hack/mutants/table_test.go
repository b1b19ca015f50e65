package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/quorate-dev/quorate/e2e/checker"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/report"
	"github.com/quorate-dev/quorate/internal/mutant"
)

func writeReport(t *testing.T, dir, name string, scenarios ...report.Scenario) {
	t.Helper()
	p := filepath.Join(dir, name, "v1.35.4")
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(report.Report{Title: "conformance", K8sVersion: "v1.35.4", Scenarios: scenarios})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "report.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func pass(c checker.Name) history.Verdict {
	return history.Verdict{Checker: c, Status: history.VerdictPass, Code: "ok"}
}

// A run of four mutants on fake reports: one killed by a checker, one killed by a scenario that
// did not run to its end (and a scenario that passed), an equivalent survivor, a survivor
// without an argument (a missing scenario), and one without a report.
func TestTable(t *testing.T) {
	dir := t.TempDir()
	writeReport(t, dir, "replace-remove-first",
		report.Scenario{Name: "pvc-loss", Verdicts: []history.Verdict{pass(checker.Linearizability),
			{Checker: checker.Availability, Status: history.VerdictFail, Code: "unavailable-too-long", Reason: "down 40s"}}},
		report.Scenario{Name: "storage-migration", Verdicts: []history.Verdict{pass(checker.Linearizability), pass(checker.Availability)}})
	writeReport(t, dir, "skip-leader-move",
		report.Scenario{Name: "etcd-upgrade", Error: "waiting for 3 members settled:\n timed out | after 5m"},
		report.Scenario{Name: "scale-down-leader", Verdicts: []history.Verdict{pass(checker.Availability)}})
	writeReport(t, dir, "promote-before-caught-up",
		report.Scenario{Name: "scale", Verdicts: []history.Verdict{pass(checker.Availability)}})
	writeReport(t, dir, "pdb-counts-learners",
		report.Scenario{Name: "scale", Verdicts: []history.Verdict{pass(checker.Availability)}})

	ms, err := selected("pdb-counts-learners,skip-leader-move,replace-remove-first,promote-before-caught-up,drop-expectations")
	if err != nil {
		t.Fatal(err)
	}
	var results []Result
	for _, m := range ms {
		results = append(results, Judge(m, dir))
	}
	reg := func(n string) mutant.Mutant { m, _ := mutant.Lookup(n); return m }
	want := "# Mutants\n\n" +
		"Seeded operator bugs (internal/mutant), each run against the scenarios expected to kill it (`make mutants`; docs/conformance.md, \"Mutants\"). " +
		"Killed: a scenario did not pass with the mutant active; by: the scenario, the checker that missed its expected verdict, and the verdict's code.\n\n" +
		"| Mutant | Bug class | Where | Result | Killed by | Scenarios run | Notes |\n" +
		"|---|---|---|---|---|---|---|\n" +
		"| replace-remove-first | membership: remove before add | internal/planner changeMembership | killed | pvc-loss: availability fail [unavailable-too-long] | pvc-loss, storage-migration | – |\n" +
		"| skip-leader-move | planned stop of the leader | internal/planner rollPods, removeVoter | killed | etcd-upgrade: did not run to its end (waiting for 3 members settled: timed out \\| after 5m) | etcd-upgrade, scale-down-leader | – |\n" +
		"| promote-before-caught-up | membership: promote a lagging learner | internal/planner gateHealth | survived | – | scale | equivalent: " + reg("promote-before-caught-up").Equivalent + " |\n" +
		"| pdb-counts-learners | disruption budget counts non-voters | internal/resources PDB | survived | – | scale | expected scenarios not in the report: node-drain, learner-budget; a scenario is missing: add one that fails under this bug, then run again |\n" +
		"| drop-expectations | acting on a stale cache | internal/expectations Satisfied | not run | – | – | no report.json under " + filepath.Join(dir, "drop-expectations") + " |\n" +
		"\nMutation score: 2 killed / 5 mutants = 40% (1 survivor(s) argued equivalent: 2 killed / 4 non-equivalent).\n"
	if got := Table(results); got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestLabels(t *testing.T) {
	m, _ := mutant.Lookup("replace-remove-first")
	if got, want := labels(m), "scenario=pvc-loss,scenario=storage-migration"; got != want {
		t.Fatalf("labels %q, want %q", got, want)
	}
	for name, want := range map[string][]string{
		"replace-remove-first":        nil,
		"restore-skip-hash":           {"--install-s3"},
		"ready-before-answers":        {"--nodes=4"},
		"remove-without-quorum-probe": {"--install-chaos-mesh", "--etcd-version=3.6.16", "--failpoint-etcd-image=localhost:5000/quorate/etcd:v3.6.16-failpoints"},
	} {
		m, _ := mutant.Lookup(name)
		if got := suiteFlags(m, "v3.6.16"); !slices.Equal(got, want) {
			t.Errorf("%s: flags %q, want %q", name, got, want)
		}
	}
	if _, err := selected("replace-remove-first,nope"); err == nil {
		t.Fatal("an unknown mutant was accepted")
	}
}

// TestSkippedScenarioKillsNothing: a scenario whose prerequisite was missing did not run; it
// neither kills the mutant nor counts as run (with --missing-prerequisites=fail it carries an
// Error too), and the mutant is not run rather than a survivor.
func TestSkippedScenarioKillsNothing(t *testing.T) {
	dir := t.TempDir()
	writeReport(t, dir, "delete-voter-pvc",
		report.Scenario{Name: "node-drain", Skipped: []string{"3 nodes for members: 0"}, Error: "a prerequisite is missing (--missing-prerequisites=fail): 3 nodes for members: 0"},
		report.Scenario{Name: "pod-deletion", Verdicts: []history.Verdict{pass(checker.Availability)}})
	m, _ := mutant.Lookup("delete-voter-pvc")
	r := Judge(m, dir)
	if r.Outcome != NotRun || r.Problem != "skipped for a missing prerequisite: node-drain (3 nodes for members: 0)" || len(r.Kills) != 0 || !slices.Equal(r.Ran, []string{"pod-deletion"}) || !slices.Contains(r.Missing, "node-drain") {
		t.Errorf("judged %+v", r)
	}
}
