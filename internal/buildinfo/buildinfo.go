// Package buildinfo holds the version stamped into binaries at build time.
package buildinfo

import (
	"fmt"
	"runtime"
)

// Version of Quorate, set with -ldflags -X.
var Version = "dev"

// String is what a binary's --version prints: its name, Version, and the platform and Go
// release it was built for ("quorate-operator 0.3.0 linux/arm64 go1.26.8").
func String(name string) string {
	return fmt.Sprintf("%s %s %s/%s %s", name, Version, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
