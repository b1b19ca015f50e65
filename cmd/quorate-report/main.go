// Command quorate-report combines the reports of several conformance runs (one per Kubernetes
// version, each in its own subdirectory) into one matrix page, JUnit file and Markdown table,
// and summarises the repeated runs of the benchmark scenarios.
//
//	quorate-report combine reports/matrix
//	quorate-report bench reports/bench/v1.35.4
//	quorate-report peers reports/peers/v1.35.4 [LATER_DIR...]
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/report"
)

func main() {
	if len(os.Args) < 3 || (len(os.Args) > 3 && os.Args[1] != "peers") {
		usage()
	}
	switch os.Args[1] {
	case "combine":
		combine(os.Args[2])
	case "bench":
		bench(os.Args[2])
	case "peers":
		peers(os.Args[2], os.Args[3:])
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: quorate-report combine DIR | quorate-report bench DIR | quorate-report peers DIR [LATER_DIR...]")
	os.Exit(64)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}

func combine(dir string) {
	reports, err := report.Combine(dir)
	if err != nil {
		fail(err)
	}
	fmt.Print(report.Matrix(reports))
	failed := 0
	for _, r := range reports {
		for _, s := range r.Scenarios {
			if !s.Passed() {
				failed++
			}
		}
	}
	fmt.Printf("\n%d reports combined into %s/index.html; %d scenario runs failed\n", len(reports), dir, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

// bench writes DIR/bench.md (and prints it) from DIR/report.json.
func bench(dir string) {
	r, err := report.Load(filepath.Join(dir, "report.json"))
	if err != nil {
		fail(err)
	}
	sums, rates := report.Bench(r), report.Rates(r)
	if len(sums) == 0 && len(rates) == 0 {
		fail(fmt.Errorf("%s/report.json holds no benchmark scenario (suite=bench or bench-rate)", dir))
	}
	if err := report.WithHandovers(sums, func(f string) (*history.History, error) { return history.Load(filepath.Join(dir, f)) }); err != nil {
		fail(fmt.Errorf("reading the runs' histories for their leader handovers: %w", err))
	}
	md := report.BenchMarkdown(r, sums)
	if len(rates) > 0 {
		md += report.RatesMarkdown(rates)
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.md"), []byte(md), 0o644); err != nil {
		fail(err)
	}
	fmt.Print(md)
}

// peers writes DIR/peers.md and DIR/peers.html (and prints the Markdown) from DIR/report.json:
// the side-by-side benchmark, one table per operation. The side-by-side scenarios of later
// runs (an operation run again) replace the same operator's result for that operation.
func peers(dir string, later []string) {
	r, err := report.Load(filepath.Join(dir, "report.json"))
	if err != nil {
		fail(err)
	}
	for _, d := range later {
		l, err := report.Load(filepath.Join(d, "report.json"))
		if err != nil {
			fail(err)
		}
		r.Scenarios = append(r.Scenarios, l.Scenarios...)
	}
	rows, operators := report.Peers(r)
	if len(rows) == 0 {
		fail(fmt.Errorf("%s/report.json holds no side-by-side scenario (suite=peers)", dir))
	}
	md := report.PeersMarkdown(r, rows, operators)
	if err := os.WriteFile(filepath.Join(dir, "peers.md"), []byte(md), 0o644); err != nil {
		fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "peers.html"), []byte(report.PeersHTML(r, rows, operators)), 0o644); err != nil {
		fail(err)
	}
	fmt.Print(md)
}
