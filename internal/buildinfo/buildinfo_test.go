package buildinfo

import (
	"runtime"
	"testing"
)

func TestString(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "1.2.3"
	want := "quorate-operator 1.2.3 " + runtime.GOOS + "/" + runtime.GOARCH + " " + runtime.Version()
	if got := String("quorate-operator"); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}
