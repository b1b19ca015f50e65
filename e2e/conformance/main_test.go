//go:build e2e

package conformance

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/quorate-dev/quorate/e2e/framework"
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
		// Test output to stderr: stdout carries only the scorecard's TestStatus JSON.
		os.Stdout = os.Stderr
	}
	os.Exit(testenv.Run(m))
}

// TestConformance runs every scenario; --labels (scenario=NAME, suite=core|negative|chaos|
// chaos-negative, fault=NAME, base=steady|scale) and --feature pick some.
func TestConformance(t *testing.T) {
	var fs []features.Feature
	for _, sc := range append(All(), ChaosScenarios(opts.OperatorNS)...) {
		fs = append(fs, suite.Feature(sc))
	}
	testenv.Test(t, fs...)
}
