//go:build !mutants

package mutant

import (
	"os"
	"os/exec"
	"testing"
)

// A build without the mutants tag has no active mutant, even with $QUORATE_MUTANT naming one
// before the process starts: the test runs itself again with the variable set, and the child
// asks for every mutant.
func TestShippedBuildHasNoMutant(t *testing.T) {
	if name := os.Getenv(EnvVar); name != "" {
		for _, m := range Registry {
			if On(m.Name) {
				t.Fatalf("%s=%s: mutant %s is on in a build without the mutants tag", EnvVar, name, m.Name)
			}
		}
		if Active() != "" || Enabled {
			t.Fatalf("%s=%s: Active() = %q, Enabled = %v in a build without the mutants tag", EnvVar, name, Active(), Enabled)
		}
		return
	}
	for _, m := range Registry {
		cmd := exec.Command(os.Args[0], "-test.run=^TestShippedBuildHasNoMutant$", "-test.count=1")
		cmd.Env = append(os.Environ(), EnvVar+"="+m.Name)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("with %s=%s: %v\n%s", EnvVar, m.Name, err, out)
		}
	}
}
