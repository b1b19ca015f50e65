// Package envflag gives command-line flags their defaults from the environment, as OLM and
// the Makefile pass settings.
package envflag

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Or returns the environment variable name, or fallback when it is unset or empty.
func Or(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// Bool reads the environment variable name as a boolean (false when unset or empty). A value
// that is not one is an error, never read as false: a setting that turns a safeguard on must
// not be left off by a typo.
func Bool(name string) (bool, error) {
	v := os.Getenv(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q is not true or false", name, v)
	}
	return b, nil
}

// List reads a comma-separated list, as flags and environment variables give one: its items
// trimmed of spaces, empty ones left out (nil for an empty list).
func List(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
