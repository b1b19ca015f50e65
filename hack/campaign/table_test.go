package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker"
	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/report"
)

func writeReport(t *testing.T, path, version string, scenarios ...report.Scenario) {
	t.Helper()
	writeReportAt(t, path, version, time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC), scenarios...)
}

func writeReportAt(t *testing.T, path, version string, generated time.Time, scenarios ...report.Scenario) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(report.Report{Title: "conformance", K8sVersion: version, Generated: generated, Scenarios: scenarios})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func verdicts(failed map[checker.Name]history.VerdictStatus) []history.Verdict {
	var out []history.Verdict
	for _, c := range checker.Names {
		v := history.Verdict{Checker: c, Status: history.VerdictPass, Code: "ok"}
		if s, ok := failed[c]; ok {
			v.Status, v.Code = s, "bad"
		}
		out = append(out, v)
	}
	return out
}

func campaignRun(name, op, fault, moment, class string, total int, gap time.Duration, failed map[checker.Name]history.VerdictStatus) report.Scenario {
	seed, index, _ := strings.Cut(strings.TrimPrefix(name, "campaign-"), "-")
	return report.Scenario{Name: name, Class: class, Verdicts: verdicts(failed),
		Labels: map[string]string{"suite": "campaign", "seed": seed, "run": index, "operation": op, "fault": fault, "moment": moment,
			"draw-operations": "scale,roll", "draw-faults": "loss,delay"},
		Stats: availability.Stats{Total: total, MaxWriteGap: gap}}
}

// Two versions' reports, in nested directories: passes, a run that lost a write and went over
// its budget, one whose linearizability check was inconclusive, one skipped, one stopped by a
// failed step, and a scenario of another suite that is not the campaign's.
func TestTable(t *testing.T) {
	dir := t.TempDir()
	writeReport(t, filepath.Join(dir, "7-0", "v1.35.4", "report.json"), "v1.35.4",
		campaignRun("campaign-7-0", "scale", "pod-kill-leader", "3s", "fault", 1000, 80*time.Millisecond, nil),
		campaignRun("campaign-7-1", "roll", "partition-leader", "0s", "partition", 2000, 2500*time.Millisecond,
			map[checker.Name]history.VerdictStatus{checker.LostWrites: history.VerdictFail, checker.Availability: history.VerdictFail}),
		report.Scenario{Name: "steady", Labels: map[string]string{"suite": "core"}, Verdicts: verdicts(nil), Stats: availability.Stats{Total: 99999}},
	)
	skipped := campaignRun("campaign-7-2", "backup", "node-loss", "1s", "partition", 0, 0, nil)
	skipped.Verdicts, skipped.Skipped = nil, []string{"3 nodes of the etcd pool: 1 Ready"}
	writeReport(t, filepath.Join(dir, "7-2", "v1.35.4", "report.json"), "v1.35.4",
		skipped,
		campaignRun("campaign-7-3", "scale", "delay", "15s", "partition", 500, 300*time.Millisecond, nil),
		campaignRun("campaign-7-4", "upgrade", "pod-kill-leader", "2.5s", "fault", 700, 40*time.Millisecond,
			map[checker.Name]history.VerdictStatus{checker.Linearizability: history.VerdictInconclusive}),
	)
	// An older report of run 3 that failed: the newer one (its batch's) counts.
	writeReportAt(t, filepath.Join(dir, "7-3-1", "v1.35.4", "report.json"), "v1.35.4", time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC),
		campaignRun("campaign-7-3", "scale", "delay", "15s", "partition", 500, 9*time.Second, map[checker.Name]history.VerdictStatus{checker.SplitBrain: history.VerdictFail}))
	stopped := campaignRun("campaign-7-0", "restore", "loss", "4s", "partition", 300, 120*time.Millisecond, nil)
	stopped.Error = "scenario steps failed: operation restore:\nEtcdBackup campaign-0 Failed | no store"
	// loss needs netem: its replay asks make campaign not to leave it out.
	stopped.Labels["needs"] = "netem"
	writeReport(t, filepath.Join(dir, "7-0", "v1.33.13", "report.json"), "v1.33.13", stopped)

	runs, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := Table(runs)
	want := `# Randomized campaign

Written by ` + "`go run ./hack/campaign table`" + ` from the reports of ` + "`make campaign`" + ` (docs/conformance.md, "The randomized campaign"). Each run draws an operation, a fault and the moment the fault starts from its seed and index, and runs them on a cluster of 3 members (5 for a roll or an upgrade) under the workload; every checker judges it. A run counts once however many client profiles it had, by its newest report when it was replayed; a skipped run (a prerequisite missing) is counted apart and in nothing else, and the write gaps are of the runs that reached their end.

| Kubernetes | runs | passed | skipped | stopped before the end | operations | runs that lost an acknowledged write | linearizability violations | split brains | inconclusive | over the availability budget | longest write gap, fault class (max / median) | partition class (max / median) |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
| v1.33.13 | 1 | 0 | 0 | 1 | 300 | 0 | 0 | 0 | 0 | 0 | – | – |
| v1.35.4 | 4 | 2 | 1 | 0 | 4200 | 1 | 0 | 0 | 1 | 1 | 80ms / 40ms | 2.5s / 300ms |

## What the runs drew

| Kubernetes | operation | runs | passed |
|---|---|---|---|
| v1.33.13 | restore | 1 | 0 |
| v1.35.4 | roll | 1 | 0 |
| v1.35.4 | scale | 2 | 2 |
| v1.35.4 | upgrade | 1 | 0 |

| Kubernetes | fault | runs | passed |
|---|---|---|---|
| v1.33.13 | loss | 1 | 0 |
| v1.35.4 | delay | 1 | 1 |
| v1.35.4 | partition-leader | 1 | 0 |
| v1.35.4 | pod-kill-leader | 2 | 1 |

## Runs that did not pass

| Kubernetes | run | operation | fault, moment | why | replay |
|---|---|---|---|---|---|
| v1.33.13 | campaign-7-0 | restore | loss at 4s | scenario steps failed: operation restore: EtcdBackup campaign-0 Failed \| no store | ` + "`make campaign K8S_VERSION=v1.33.13 SEED=7 FROM=0 RUNS=1 CAMPAIGN_OPERATIONS=scale,roll CAMPAIGN_FAULTS=loss,delay CHAOS_SKIP_LABELS=`" + ` |
| v1.35.4 | campaign-7-1 | roll | partition-leader at 0s | campaign-7-1 lost-writes fail [bad]; campaign-7-1 availability fail [bad] | ` + "`make campaign K8S_VERSION=v1.35.4 SEED=7 FROM=1 RUNS=1 CAMPAIGN_OPERATIONS=scale,roll CAMPAIGN_FAULTS=loss,delay`" + ` |
| v1.35.4 | campaign-7-4 | upgrade | pod-kill-leader at 2.5s | campaign-7-4 linearizability inconclusive [bad] | ` + "`make campaign K8S_VERSION=v1.35.4 SEED=7 FROM=4 RUNS=1 CAMPAIGN_OPERATIONS=scale,roll CAMPAIGN_FAULTS=loss,delay`" + ` |
`
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestNoCampaignRun(t *testing.T) {
	dir := t.TempDir()
	writeReport(t, filepath.Join(dir, "v1.35.4", "report.json"), "v1.35.4", report.Scenario{Name: "steady", Labels: map[string]string{"suite": "core"}})
	err := run([]string{"table", "--reports", dir, "--out", filepath.Join(dir, "t.md")})
	if err == nil || err.Error() != "no campaign run (a scenario labelled suite=campaign) in any report.json under "+dir {
		t.Errorf("error %v", err)
	}
}
