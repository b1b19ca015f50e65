package report

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/quorate-dev/quorate/e2e/checker"
)

// Combine loads the report.json of every subdirectory of root and writes one page, one JUnit
// file and one Markdown table for all of them into root.
func Combine(root string) ([]*Report, error) {
	paths, err := filepath.Glob(filepath.Join(root, "*", "report.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var reports []*Report
	for _, p := range paths {
		r, err := Load(p)
		if err != nil {
			return nil, err
		}
		reports = append(reports, r)
	}
	if err := os.WriteFile(filepath.Join(root, "index.html"), []byte(HTML(reports)), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(root, "junit.xml"), junitOf(reports), 0o644); err != nil {
		return nil, err
	}
	return reports, os.WriteFile(filepath.Join(root, "summary.md"), []byte(Matrix(reports)), 0o644)
}

// Matrix is the version x scenario x verdict table in Markdown.
func Matrix(reports []*Report) string {
	out := "# Quorate conformance matrix\n\n| Kubernetes | scenario | result | " + strings.Join(checkerColumns(), " | ") + " |\n|---|---|---|" + strings.Repeat("---|", len(checker.Names)) + "\n"
	for _, r := range reports {
		for _, sc := range r.Scenarios {
			for _, p := range sc.Profiles() {
				s := sc.ForProfile(p)
				out += "| " + r.K8sVersion + " | " + s.Label() + " | " + string(s.profileResult())
				for _, c := range checker.Names {
					out += " | " + verdictCell(s, c)
				}
				out += " |\n"
			}
		}
	}
	return out
}
