// Command quorate-report combines the reports of several conformance runs (one per Kubernetes
// version, each in its own subdirectory) into one matrix page, JUnit file and Markdown table.
//
//	quorate-report combine reports/matrix
package main

import (
	"fmt"
	"os"

	"github.com/quorate-dev/quorate/e2e/report"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "combine" {
		fmt.Fprintln(os.Stderr, "usage: quorate-report combine DIR")
		os.Exit(64)
	}
	reports, err := report.Combine(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
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
	fmt.Printf("\n%d reports combined into %s/index.html; %d scenario runs failed\n", len(reports), os.Args[2], failed)
	if failed > 0 {
		os.Exit(1)
	}
}
