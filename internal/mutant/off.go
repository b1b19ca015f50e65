//go:build !mutants

package mutant

// Enabled: this build can activate mutants. Shipped builds cannot.
const Enabled = false

// On reports whether the named mutant is active: never, in a build without the mutants tag.
// A constant false, so that every `if mutant.On(...)` branch is dead code the compiler drops.
func On(string) bool { return false }

// Active is the active mutant's name: none in a build without the mutants tag.
func Active() string { return "" }
