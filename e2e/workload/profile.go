package workload

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Profile is how the workload's clients find the cluster's members and what they ask of them
// besides the load. Every profile has the same timeouts (KeepAliveTime below): only how the client
// learns its endpoints differs, so that a difference in the results is the cluster's.
type Profile string

const (
	// MemberAware clients are given the client Service (and any endpoints besides it), learn the
	// members' own client URLs from the member list before the history starts and every
	// AutoSyncInterval after, and balance over them: a production client tuned for etcd.
	MemberAware Profile = "member-aware"
	// ServiceOnly clients know exactly one endpoint, the client Service
	// (<cluster>-client.<namespace>.svc:2379), and never ask for the member list (no
	// AutoSync, no Sync): how most applications in a cluster are configured, which reach a
	// member only through the Service's endpoints (kube-proxy picks one per connection).
	ServiceOnly Profile = "service-only"
)

// DefaultProfile is the profile the workload runs when none is given.
const DefaultProfile = MemberAware

// Profiles are every profile, in the order the reports list them.
var Profiles = []Profile{MemberAware, ServiceOnly}

// AutoSyncInterval is how often a MemberAware client refreshes its endpoints from the member
// list.
const AutoSyncInterval = 5 * time.Second

// The etcd client settings of every profile, what an application of the cluster would set: a
// dial gives up after Config.OpTimeout, each request after Config.OpTimeout too
// (DefaultOpTimeout, 2 s; the operation is then recorded as unknown or failed), and a
// connection that answers no keepalive ping within KeepAliveTimeout of one sent every
// KeepAliveTime is closed.
const (
	KeepAliveTime    = 2 * time.Second
	KeepAliveTimeout = 2 * time.Second
)

// ParseProfile returns the profile named s.
func ParseProfile(s string) (Profile, error) {
	p := Profile(strings.TrimSpace(s))
	if !slices.Contains(Profiles, p) {
		return "", fmt.Errorf("unknown client profile %q: want one of %s", s, profileList(Profiles))
	}
	return p, nil
}

// ParseProfiles parses a comma-separated list of profiles ("member-aware,service-only"): at
// least one, each known and named once, in the order given.
func ParseProfiles(s string) ([]Profile, error) {
	var out []Profile
	for _, f := range strings.Split(s, ",") {
		p, err := ParseProfile(f)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("client profile %q named twice in %q", p, s)
		}
		out = append(out, p)
	}
	return out, nil
}

// FormatProfiles is the comma-separated list ParseProfiles reads.
func FormatProfiles(ps []Profile) string { return profileList(ps) }

func profileList(ps []Profile) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = string(p)
	}
	return strings.Join(names, ",")
}

// IsDefault reports whether ps is the default: DefaultProfile alone (or nothing).
func IsDefault(ps []Profile) bool {
	return len(ps) == 0 || len(ps) == 1 && ps[0] == DefaultProfile
}

// Prefix is the key prefix of the profile's load when several profiles run beside each other
// under base: each its own keys, watches and filler, so that every history stands alone.
func (p Profile) Prefix(base string) string { return base + string(p) + "/" }
