//go:build !mutants

package mutant

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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

// The member launcher, built as it ships (no mutants tag), holds neither the variable's name
// nor any mutant's: the linker dropped the registry with the branches that would read it.
func TestShippedBinaryHoldsNoMutant(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the launcher")
	}
	bin := filepath.Join(t.TempDir(), "quorate-launcher")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/quorate-launcher")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(Names(), EnvVar) {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("the shipped launcher holds %q", s)
		}
	}
}
