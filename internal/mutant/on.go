//go:build mutants

package mutant

import (
	"fmt"
	"os"
)

// Enabled: this build can activate mutants (built with -tags mutants, for `make mutants`).
const Enabled = true

// active is read once, at start; an unknown name stops the process, so that a typo does not
// run the scenarios against the unchanged operator and count the mutant as survived.
var active = func() string {
	name := os.Getenv(EnvVar)
	if name == "" {
		return ""
	}
	if _, ok := Lookup(name); !ok {
		panic(fmt.Sprintf("%s=%q: no such mutant (internal/mutant.Registry)", EnvVar, name))
	}
	return name
}()

// On reports whether the named mutant is the active one.
func On(name string) bool { return active != "" && active == name }

// Active is the active mutant's name, "" when none is.
func Active() string { return active }

// Set makes name the active mutant ("" for none) and returns a function that restores the
// previous one; for tests.
func Set(name string) (restore func()) {
	if _, ok := Lookup(name); name != "" && !ok {
		panic("no such mutant " + name)
	}
	prev := active
	active = name
	return func() { active = prev }
}
