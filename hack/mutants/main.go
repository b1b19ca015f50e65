// Command mutants serves `make mutants` (hack/mutants.sh): it lists the seeded mutants of
// internal/mutant and the scenarios expected to kill each, and writes the table of a run.
//
//	go run ./hack/mutants list                    every mutant's name, one a line
//	go run ./hack/mutants labels NAME             its scenarios as --labels: scenario=a,scenario=b
//	go run ./hack/mutants flags NAME              the suite flags its scenarios need (S3, nodes, Chaos Mesh, failpoints: FAILPOINT_ETCD)
//	go run ./hack/mutants table --reports DIR --out FILE [--mutants a,b]
//
// table reads DIR/<mutant>/*/report.json (one `make e2e` run per mutant, its REPORT_DIR
// DIR/<mutant>) and writes the Markdown table: each mutant killed or survived, by which
// scenario, checker and code, and the mutation score.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/quorate-dev/quorate/internal/mutant"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: mutants list | labels NAME | table --reports DIR --out FILE [--mutants a,b]")
	}
	switch args[0] {
	case "list":
		for _, n := range mutant.Names() {
			fmt.Println(n)
		}
		return nil
	case "labels":
		if len(args) != 2 {
			return fmt.Errorf("usage: mutants labels NAME")
		}
		m, ok := mutant.Lookup(args[1])
		if !ok {
			return fmt.Errorf("no mutant %q", args[1])
		}
		fmt.Println(labels(m))
		return nil
	case "flags":
		if len(args) != 2 {
			return fmt.Errorf("usage: mutants flags NAME")
		}
		m, ok := mutant.Lookup(args[1])
		if !ok {
			return fmt.Errorf("no mutant %q", args[1])
		}
		failpointEtcd := os.Getenv("FAILPOINT_ETCD")
		if failpointEtcd == "" && slices.ContainsFunc(m.Scenarios, func(s string) bool { return strings.HasPrefix(s, "failpoint-") }) {
			return fmt.Errorf("mutant %s runs failpoint scenarios: set FAILPOINT_ETCD to the etcd release of the failpoint image (hack/mutants.sh takes the Makefile's)", m.Name)
		}
		fmt.Println(strings.Join(suiteFlags(m, failpointEtcd), " "))
		return nil
	case "table":
		fs := flag.NewFlagSet("table", flag.ContinueOnError)
		reports := fs.String("reports", "", "directory of the run: one directory per mutant")
		out := fs.String("out", "", "the Markdown file to write")
		only := fs.String("mutants", "", "the mutants run (comma-separated; empty: every mutant)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *reports == "" || *out == "" {
			return fmt.Errorf("table needs --reports and --out")
		}
		ms, err := selected(*only)
		if err != nil {
			return err
		}
		results := make([]Result, 0, len(ms))
		for _, m := range ms {
			results = append(results, Judge(m, *reports))
		}
		return os.WriteFile(*out, []byte(Table(results)), 0o644)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// labels are the --labels that select m's scenarios.
func labels(m mutant.Mutant) string {
	parts := make([]string, len(m.Scenarios))
	for i, s := range m.Scenarios {
		parts[i] = "scenario=" + s
	}
	return strings.Join(parts, ",")
}

// suiteFlags are the conformance flags m's scenarios need: an S3 store for the backup
// scenarios, a cluster of four nodes for the node scenarios (node 1 and three for the
// members), Chaos Mesh for the chaos scenarios (a base scenario, steady or scale, and a fault),
// and for the failpoint scenarios etcd built with its failpoints at release failpointEtcd
// (hack/images.sh etcd-failpoints, as make e2e-failpoints gives it).
func suiteFlags(m mutant.Mutant, failpointEtcd string) []string {
	var s3, nodes, chaos, failpoints bool
	for _, s := range m.Scenarios {
		s3 = s3 || strings.HasPrefix(s, "backup-")
		nodes = nodes || strings.HasPrefix(s, "node-")
		failpoints = failpoints || strings.HasPrefix(s, "failpoint-")
		// The chaos scenarios are <base>-<fault> (steady-pod-kill, scale-partition-minority);
		// scale-down-leader is a planned operation.
		chaos = chaos || strings.HasPrefix(s, "steady-") || (strings.HasPrefix(s, "scale-") && s != "scale-down-leader")
	}
	var out []string
	if s3 {
		out = append(out, "--install-s3")
	}
	if nodes {
		out = append(out, "--nodes=4")
	}
	if chaos {
		out = append(out, "--install-chaos-mesh")
	}
	if failpoints {
		out = append(out, "--etcd-version="+strings.TrimPrefix(failpointEtcd, "v"), "--failpoint-etcd-image=localhost:5000/quorate/etcd:"+failpointEtcd+"-failpoints")
	}
	return out
}

// selected are the mutants named (comma-separated), in the registry's order; all for "".
func selected(names string) ([]mutant.Mutant, error) {
	if names == "" {
		return mutant.Registry, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		if _, ok := mutant.Lookup(n); !ok {
			return nil, fmt.Errorf("no mutant %q", n)
		}
		want[n] = true
	}
	var out []mutant.Mutant
	for _, m := range mutant.Registry {
		if want[m.Name] {
			out = append(out, m)
		}
	}
	return out, nil
}
