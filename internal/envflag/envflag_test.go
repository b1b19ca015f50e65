package envflag

import (
	"slices"
	"testing"
)

func TestBool(t *testing.T) {
	for v, want := range map[string]struct {
		b   bool
		err string
	}{
		"": {false, ""}, "true": {true, ""}, "1": {true, ""}, "TRUE": {true, ""}, "false": {false, ""},
		"yes":   {false, `QUORATE_TEST_BOOL="yes" is not true or false`},
		"true ": {false, `QUORATE_TEST_BOOL="true " is not true or false`},
	} {
		t.Setenv("QUORATE_TEST_BOOL", v)
		b, err := Bool("QUORATE_TEST_BOOL")
		got := ""
		if err != nil {
			got = err.Error()
		}
		if b != want.b || got != want.err {
			t.Errorf("%q: %v, %q; want %v, %q", v, b, got, want.b, want.err)
		}
	}
}

func TestList(t *testing.T) {
	for in, want := range map[string][]string{
		"":     nil,
		" , ,": nil,
		"a":    {"a"},
		" registry.example.com , ghcr.io/quorate-dev/,,": {"registry.example.com", "ghcr.io/quorate-dev/"},
	} {
		if got := List(in); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, want %q", in, got, want)
		}
	}
}
