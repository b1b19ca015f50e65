// Command campaign writes the reliability tables of the randomized campaign (make campaign,
// hack/campaign.sh; the runs are the suite's suite=campaign scenarios):
//
//	go run ./hack/campaign table --reports DIR --out FILE
//
// It reads every report.json under DIR (one per suite invocation and Kubernetes version) and
// writes, per Kubernetes version, the runs, their operations, the runs that lost an
// acknowledged write, broke linearizability or saw two leaders, and the longest write gap per
// budget class; then every run that did not pass, with what replays it.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/e2e/report"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "campaign:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || args[0] != "table" {
		return fmt.Errorf("usage: campaign table --reports DIR --out FILE")
	}
	fl := flag.NewFlagSet("table", flag.ContinueOnError)
	dir := fl.String("reports", "reports/campaign", "directory holding the campaign's report.json files, at any depth")
	out := fl.String("out", "docs/reports/campaign.md", "the Markdown table to write")
	if err := fl.Parse(args[1:]); err != nil {
		return err
	}
	runs, err := Load(*dir)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		return fmt.Errorf("no campaign run (a scenario labelled %s=%s) in any report.json under %s", label.Suite, label.SuiteCampaign, *dir)
	}
	return os.WriteFile(*out, []byte(Table(runs)), 0o644)
}

// Load reads the campaign's runs from every report.json under dir, in path order; a run
// reported more than once (replayed: the same Kubernetes version, seed and index) counts by
// its newest report.
func Load(dir string) ([]Run, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "report.json" {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var runs []Run
	newest := map[string]int{} // version/seed/index -> index in runs
	generated := map[string]time.Time{}
	for _, p := range paths {
		rep, err := report.Load(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		version := rep.K8sVersion
		if version == "" {
			version = filepath.Base(filepath.Dir(p))
		}
		for _, s := range rep.Scenarios {
			if s.Labels[label.Suite] != label.SuiteCampaign {
				continue
			}
			run := Run{Kubernetes: version, Report: p, Scenario: s}
			key := version + "/" + s.Labels[label.Seed] + "/" + s.Labels[label.Run]
			i, seen := newest[key]
			switch {
			case !seen:
				newest[key], generated[key] = len(runs), rep.Generated
				runs = append(runs, run)
			case rep.Generated.After(generated[key]):
				runs[i], generated[key] = run, rep.Generated
			}
		}
	}
	return runs, nil
}
