//go:build e2e

package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
)

var (
	testenv env.Environment
	suite   *framework.Suite
	opts    = framework.RegisterFlags()
)

func TestMain(m *testing.M) {
	var err error
	testenv, suite, err = framework.Setup(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if opts.Scorecard {
		// In a scorecard test pod (the scorecard sets SCORECARD_NAMESPACE) the pod log is stdout
		// and stderr together, and the scorecard reads it as the TestStatus JSON: everything
		// else goes to a file there.
		if os.Getenv("SCORECARD_NAMESPACE") != "" {
			if f, err := os.Create(filepath.Join(os.TempDir(), "quorate-conformance.log")); err == nil {
				os.Stderr = f
			}
		}
		// Test output to stderr: stdout carries only the scorecard's TestStatus JSON.
		os.Stdout = os.Stderr
	}
	os.Exit(testenv.Run(m))
}

// TestConformance runs every scenario; --labels (scenario=NAME, suite=core|negative|safety|chaos|
// chaos-negative|olm|migration|backup|bench|bench-rate|peers|nodes|campaign|failpoints, failpoint=NAME, operator=NAME, operation=NAME, fault=NAME, base=steady|scale, install-mode=NAME) and --feature pick
// some. The OLM scenarios install Quorate themselves, so they are part of the run only when
// their catalogs are given (--olm-catalogs or --install-olm).
func TestConformance(t *testing.T) {
	scenarios := append(append(append(All(opts), SafetyScenarios()...), ChaosScenarios(opts.OperatorNS)...), BackupScenarios()...)
	scenarios = append(scenarios, MigrateIn(), MigrateInFirewalled(), JoinAborted())
	// They power nodes off and cut them off, which only the local cluster's nodes can: on
	// another cluster, or one with too few nodes, they are reported skipped, saying so.
	scenarios = append(scenarios, NodeScenarios()...)
	if opts.Install {
		scenarios = append(scenarios, ScopeMigration(opts.OperatorNS), ClaimPruned(opts.OperatorNS))
	}
	if opts.BenchRuns > 0 {
		scenarios = append(scenarios, BenchScenarios(opts, opts.BenchRuns)...)
	}
	// The failpoint scenarios need an etcd built with failpoints: they are listed when it is
	// given, or asked for (and then skipped without it, saying so).
	if opts.FailpointImage != "" || slices.Contains(suite.Labels[label.Suite], label.SuiteFailpoints) {
		scenarios = append(scenarios, FailpointScenarios(opts)...)
	}
	// learner-budget needs an etcd release before 3.5.19: listed when one is given, or asked
	// for (and then skipped without it, saying so).
	if opts.LearnerReadyVersion != "" || slices.Contains(suite.Labels[label.Scenario], LearnerBudgetName) {
		scenarios = append(scenarios, LearnerBudget(opts))
	}
	if opts.CampaignRuns > 0 {
		runs, err := CampaignScenarios(opts, opts.CampaignSeed, opts.CampaignFrom, opts.CampaignRuns, opts.CampaignOperations, opts.CampaignFaults)
		if err != nil {
			t.Fatal(err)
		}
		scenarios = append(scenarios, runs...)
	}
	if opts.Peers != "" || slices.Contains(suite.Labels[label.Suite], label.SuitePeers) {
		scenarios = append(scenarios, PeerScenarios(opts)...)
	}
	if slices.Contains(suite.Labels[label.Suite], label.SuiteBenchRate) {
		var rates []float64
		for _, f := range strings.Split(opts.BenchRates, ",") {
			rate, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || rate <= 0 {
				t.Fatalf("--bench-rates: %q is not a rate", f)
			}
			rates = append(rates, rate)
		}
		scenarios = append(scenarios, RateScenarios(rates)...)
	}
	if from, to, ok := strings.Cut(opts.StorageClasses, ","); ok {
		scenarios = append(scenarios, StorageMigration(from, to))
	}
	if opts.ExpansionStorageClass != "" {
		scenarios = append(scenarios, VolumeExpansion(opts.ExpansionStorageClass))
	}
	if opts.OLMCatalogs != "" || opts.InstallOLM {
		scenarios = append(scenarios, OLMScenarios(opts)...)
	} else if slices.Contains(suite.Labels[label.Suite], label.SuiteOLM) {
		t.Fatal("--labels asks for the OLM scenarios (suite=olm): give their catalogs with --olm-catalogs=PREVIOUS,CURRENT, or --install-olm")
	}
	var fs []features.Feature
	for _, sc := range scenarios {
		fs = append(fs, suite.Feature(sc))
	}
	testenv.Test(t, fs...)
}
