// Package buildinfo holds the version stamped into binaries at build time.
package buildinfo

// Version of Quorate, set with -ldflags -X.
var Version = "dev"
