// Package version holds the rules about etcd releases: which are supported, which changes of
// version a running cluster may make, and which server flags differ between minor releases.
package version

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is an etcd release.
type Version struct{ Major, Minor, Patch int }

// Parse reads "3.6.16" (a leading "v" is accepted, as etcd reports versions without it).
func Parse(s string) (Version, error) {
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("etcd version %q is not of the form 3.N.N", s)
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || (len(p) > 1 && p[0] == '0') {
			return Version{}, fmt.Errorf("etcd version %q is not of the form 3.N.N", s)
		}
		v[i] = n
	}
	return Version{v[0], v[1], v[2]}, nil
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare returns -1, 0 or 1.
func (v Version) Compare(o Version) int {
	for _, d := range [][2]int{{v.Major, o.Major}, {v.Minor, o.Minor}, {v.Patch, o.Patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Less reports whether v is older than o.
func (v Version) Less(o Version) bool { return v.Compare(o) < 0 }

// SameMinor reports whether v and o share major and minor.
func (v Version) SameMinor(o Version) bool { return v.Major == o.Major && v.Minor == o.Minor }

// MinUpgradeFrom35 is the oldest 3.5 patch release from which etcd supports the rolling upgrade
// to 3.6 ("Upgrade etcd from v3.5 to v3.6": 3.5.24 to 3.5.26 fix several upgrade blockers).
var MinUpgradeFrom35 = Version{3, 5, 26}

// Releases is the operator's release table: for each supported minor release, the newest
// patch release it knows. A newer patch needs a newer operator, which knows its flags.
var Releases = []Version{{3, 5, 35}, {3, 6, 16}}

// Known reports whether v is in the release table, and if not, lists what is.
func Known(v Version) error {
	for _, r := range Releases {
		if r.SameMinor(v) && v.Patch <= r.Patch {
			return nil
		}
	}
	supported := make([]string, len(Releases))
	for i, r := range Releases {
		supported[i] = fmt.Sprintf("%d.%d.0 to %s", r.Major, r.Minor, r)
	}
	return fmt.Errorf("etcd %s is not a release this operator knows; it runs %s", v, strings.Join(supported, " and "))
}

// Supported reports whether the operator runs this release.
func Supported(v Version) error {
	if v.Major == 3 && (v.Minor == 5 || v.Minor == 6) {
		return nil
	}
	return fmt.Errorf("etcd %s is not supported: use a 3.5.x or 3.6.x release", v)
}

// CheckChange tells whether a running cluster at version from may move to version to, and if
// not, what the user should do. Patch changes within a minor are allowed both ways; a minor
// upgrade must go one step at a time and start from a recent enough patch; etcd cannot move
// back a minor release.
func CheckChange(from, to Version) error {
	if err := Supported(to); err != nil {
		return err
	}
	switch {
	case from.SameMinor(to):
		return nil
	case to.Less(from):
		return fmt.Errorf("etcd cannot be downgraded from %d.%d to %d.%d: set spec.version back to a %d.%d release", from.Major, from.Minor, to.Major, to.Minor, from.Major, from.Minor)
	case to.Major != from.Major || to.Minor != from.Minor+1:
		return fmt.Errorf("etcd upgrades one minor release at a time: upgrade from %s to the newest %d.%d first", from, from.Major, from.Minor+1)
	case from.Minor == 5 && from.Less(MinUpgradeFrom35):
		return fmt.Errorf("etcd %s cannot be upgraded to %d.%d directly: first upgrade to %s or a newer 3.5 release", from, to.Major, to.Minor, MinUpgradeFrom35)
	}
	return nil
}

// PeerSkipClientSANFlag is the flag that stops a member from checking that the certificate a
// peer presents names the peer's IP address. Members share one wildcard peer certificate and
// reach each other by DNS names whose addresses change with every pod restart, so the check
// is turned off; peers are still authenticated by the cluster CA.
func PeerSkipClientSANFlag(v Version) string {
	if v.Minor >= 6 {
		return "--peer-skip-client-san-verification=true"
	}
	return "--experimental-peer-skip-client-san-verification=true"
}

// SplitsClientHTTP reports whether the release serves its HTTP endpoints (the JSON gateway,
// /health, /version) on a listener of their own (--listen-client-http-urls, from 3.5.8). The
// client port then serves gRPC alone, and etcd stops it gracefully on SIGTERM, letting the
// requests in flight finish; a client port that also serves HTTP over TLS is closed at once,
// failing them (etcd's stopServers).
func SplitsClientHTTP(v Version) bool {
	return !v.Less(Version{3, 5, 8})
}

// InitialCorruptCheckFlag makes a member compare its data with its peers' before it serves.
func InitialCorruptCheckFlag(v Version) string {
	if v.Minor >= 6 {
		return "--feature-gates=InitialCorruptCheck=true"
	}
	return "--experimental-initial-corrupt-check=true"
}

// CorruptCheckInterval is how often a cluster's leader compares its followers' data with its
// own (etcd's periodic corruption check), raising CORRUPT on a difference.
const CorruptCheckInterval = "10m"

// CorruptCheckTimeFlag turns on etcd's periodic corruption check (renamed in 3.6).
func CorruptCheckTimeFlag(v Version) string {
	if v.Minor >= 6 {
		return "--corrupt-check-time=" + CorruptCheckInterval
	}
	return "--experimental-corrupt-check-time=" + CorruptCheckInterval
}
