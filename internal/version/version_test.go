package version

import (
	"strings"
	"testing"
)

func mustParse(t *testing.T, s string) Version {
	t.Helper()
	v, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
		err  bool
	}{
		{"3.6.16", Version{3, 6, 16}, false},
		{"v3.5.0", Version{3, 5, 0}, false},
		{"3.6", Version{}, true},
		{"3.6.x", Version{}, true},
		{"3.06.1", Version{}, true},
		{"3.6.1.2", Version{}, true},
		{"", Version{}, true},
	} {
		got, err := Parse(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, err=%v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestCheckChange(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		errHas   string
	}{
		{"3.6.15", "3.6.16", ""},
		{"3.6.16", "3.6.15", ""},
		{"3.5.35", "3.6.16", ""},
		{"3.5.26", "3.6.0", ""},
		{"3.5.25", "3.6.16", "first upgrade to 3.5.26"},
		{"3.6.16", "3.5.35", "cannot be downgraded from 3.6 to 3.5"},
		{"3.5.35", "3.7.0", "not supported"},
		{"3.4.30", "3.6.1", "one minor release at a time"},
	} {
		err := CheckChange(mustParse(t, tc.from), mustParse(t, tc.to))
		switch {
		case tc.errHas == "" && err != nil:
			t.Errorf("%s -> %s: unexpected error %v", tc.from, tc.to, err)
		case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
			t.Errorf("%s -> %s: error %v, want one containing %q", tc.from, tc.to, err, tc.errHas)
		}
	}
}

func TestCompare(t *testing.T) {
	a, b := mustParse(t, "3.5.35"), mustParse(t, "3.6.0")
	if !a.Less(b) || b.Less(a) || a.Compare(a) != 0 {
		t.Errorf("ordering of %v and %v is wrong", a, b)
	}
}

func TestVersionDependentFlags(t *testing.T) {
	v35, v36 := mustParse(t, "3.5.35"), mustParse(t, "3.6.16")
	if PeerSkipClientSANFlag(v35) == PeerSkipClientSANFlag(v36) || !strings.HasPrefix(PeerSkipClientSANFlag(v35), "--experimental-") {
		t.Errorf("3.5 needs the experimental flag, 3.6 the promoted one: %q %q", PeerSkipClientSANFlag(v35), PeerSkipClientSANFlag(v36))
	}
	if InitialCorruptCheckFlag(v36) != "--feature-gates=InitialCorruptCheck=true" {
		t.Errorf("3.6 corrupt check flag = %q", InitialCorruptCheckFlag(v36))
	}
	if CorruptCheckTimeFlag(v35) != "--experimental-corrupt-check-time=10m" || CorruptCheckTimeFlag(v36) != "--corrupt-check-time=10m" {
		t.Errorf("periodic corruption check flags: 3.5 %q, 3.6 %q", CorruptCheckTimeFlag(v35), CorruptCheckTimeFlag(v36))
	}
}

func TestKnown(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want string
	}{
		{"3.5.0", ""}, {"3.5.35", ""}, {"3.6.16", ""}, {"3.6.0", ""},
		{"3.6.17", "etcd 3.6.17 is not a release this operator knows; it runs 3.5.0 to 3.5.35 and 3.6.0 to 3.6.16"},
		{"3.5.99", "etcd 3.5.99 is not a release this operator knows; it runs 3.5.0 to 3.5.35 and 3.6.0 to 3.6.16"},
		{"3.4.30", "etcd 3.4.30 is not a release this operator knows; it runs 3.5.0 to 3.5.35 and 3.6.0 to 3.6.16"},
	} {
		v, err := Parse(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if err := Known(v); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Known(%s) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
