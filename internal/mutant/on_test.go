//go:build mutants

package mutant

import (
	"os"
	"os/exec"
	"testing"
)

// A build with the mutants tag activates the mutant $QUORATE_MUTANT names at start, and that
// one alone.
func TestMutantFromEnvironment(t *testing.T) {
	if name := os.Getenv(EnvVar); name != "" {
		if Active() != name || !On(name) {
			t.Fatalf("%s=%s: Active() = %q, On = %v", EnvVar, name, Active(), On(name))
		}
		for _, m := range Registry {
			if m.Name != name && On(m.Name) {
				t.Fatalf("%s=%s: %s is on too", EnvVar, name, m.Name)
			}
		}
		return
	}
	if Active() != "" {
		t.Fatalf("no %s: Active() = %q", EnvVar, Active())
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMutantFromEnvironment$", "-test.count=1")
	cmd.Env = append(os.Environ(), EnvVar+"="+Registry[0].Name)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("with %s=%s: %v\n%s", EnvVar, Registry[0].Name, err, out)
	}
}

// An unknown name stops the process at start rather than run an unchanged operator.
func TestUnknownMutantStops(t *testing.T) {
	if os.Getenv("QUORATE_MUTANT_CHILD") != "" {
		return // init already ran; reaching here means it did not panic
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnknownMutantStops$", "-test.count=1")
	cmd.Env = append(os.Environ(), EnvVar+"=no-such-mutant", "QUORATE_MUTANT_CHILD=1")
	if err := cmd.Run(); err == nil {
		t.Fatalf("%s=no-such-mutant: the process started", EnvVar)
	}
}

func TestSet(t *testing.T) {
	restore := Set("drop-expectations")
	if !On("drop-expectations") || On("replace-remove-first") {
		t.Fatal("Set did not make drop-expectations the one active mutant")
	}
	restore()
	if Active() != "" {
		t.Fatalf("after restore: Active() = %q", Active())
	}
}
