// Package envflag gives command-line flags their defaults from the environment, as OLM and
// the Makefile pass settings.
package envflag

import "os"

// Or returns the environment variable name, or fallback when it is unset or empty.
func Or(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
