package workload

import (
	"crypto/tls"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Profiles are read from their names, in the order given; an unknown or repeated name is
// refused with an error that lists the known ones.
func TestParseProfiles(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Profile
		err  string
	}{
		{in: "member-aware", want: []Profile{MemberAware}},
		{in: "service-only", want: []Profile{ServiceOnly}},
		{in: "member-aware,service-only", want: []Profile{MemberAware, ServiceOnly}},
		{in: "service-only, member-aware", want: []Profile{ServiceOnly, MemberAware}},
		{in: "", err: `unknown client profile "": want one of member-aware,service-only`},
		{in: "service", err: `unknown client profile "service": want one of member-aware,service-only`},
		{in: "member-aware,", err: `unknown client profile "": want one of member-aware,service-only`},
		{in: "service-only,service-only", err: `client profile "service-only" named twice in "service-only,service-only"`},
	} {
		got, err := ParseProfiles(tc.in)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("ParseProfiles(%q) = %v, %q; want %v, %q", tc.in, got, gotErr, tc.want, tc.err)
		}
		if err == nil && FormatProfiles(got) != strings.ReplaceAll(tc.in, " ", "") {
			t.Errorf("FormatProfiles(%v) = %q, want %q", got, FormatProfiles(got), tc.in)
		}
	}
	if !IsDefault(nil) || !IsDefault([]Profile{MemberAware}) || IsDefault([]Profile{ServiceOnly}) || IsDefault([]Profile{MemberAware, ServiceOnly}) {
		t.Error("IsDefault: only member-aware alone (or nothing) is the default")
	}
}

// The profiles' etcd clients differ only in AutoSync: the same endpoints given, TLS and
// timeouts.
func TestClientConfig(t *testing.T) {
	tlsConf := &tls.Config{ServerName: "etcd-client.ns.svc"}
	base := Config{Endpoints: []string{"https://etcd-client.ns.svc:2379"}, TLS: tlsConf, OpTimeout: 2 * time.Second}
	want := clientv3.Config{Endpoints: []string{"https://etcd-client.ns.svc:2379"}, TLS: tlsConf, DialTimeout: 2 * time.Second,
		DialKeepAliveTime: 2 * time.Second, DialKeepAliveTimeout: 2 * time.Second}
	for _, tc := range []struct {
		profile  Profile
		autoSync time.Duration
	}{{MemberAware, 5 * time.Second}, {ServiceOnly, 0}} {
		cfg := base
		cfg.Profile = tc.profile
		got := clientConfig(cfg)
		if got.Logger == nil {
			t.Errorf("%s: no logger (the client would log to stderr)", tc.profile)
		}
		got.Logger = nil
		w := want
		w.AutoSyncInterval = tc.autoSync
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: client config\n%+v\nwant\n%+v", tc.profile, got, w)
		}
	}
}

// A Service-only runner takes exactly one endpoint.
func TestServiceOnlyTakesOneEndpoint(t *testing.T) {
	r := New(Config{Profile: ServiceOnly, Endpoints: []string{"https://a:2379", "https://b:2379"}})
	err := r.Start()
	if err == nil {
		r.Stop()
		t.Fatal("a Service-only runner started with two endpoints")
	}
	if want := "client profile service-only takes exactly one endpoint, the client Service, not 2: [https://a:2379 https://b:2379]"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if err := New(Config{Profile: "dns", Endpoints: []string{"https://a:2379"}}).Start(); err == nil || !strings.Contains(err.Error(), `unknown client profile "dns"`) {
		t.Errorf("an unknown profile started: %v", err)
	}
}

// After the warm-up, a member-aware client talks to the URLs the members advertise; a
// Service-only client still to the one endpoint it was given. The etcd here advertises
// 127.0.0.1 and is given as localhost, as a Service name differs from a member's URL.
func TestWarmUpLearnsMembersOnlyWhenMemberAware(t *testing.T) {
	advertised := realEtcd(t)
	given := strings.Replace(advertised, "127.0.0.1", "localhost", 1)
	for _, tc := range []struct {
		profile Profile
		want    []string
	}{{MemberAware, []string{advertised}}, {ServiceOnly, []string{given}}} {
		r := New(Config{Profile: tc.profile, Endpoints: []string{given}, Prefix: "wl/"})
		c, err := r.newClient()
		if err != nil {
			t.Fatal(err)
		}
		if err := r.warmUp([]*clientv3.Client{c}); err != nil {
			c.Close()
			t.Fatal(err)
		}
		if got := c.Endpoints(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: endpoints after the warm-up %v, want %v", tc.profile, got, tc.want)
		}
		c.Close()
	}
}

// Each profile has its own keys under the base prefix.
func TestProfilePrefix(t *testing.T) {
	if got := ServiceOnly.Prefix("/quorate-conformance/"); got != "/quorate-conformance/service-only/" {
		t.Errorf("prefix %q", got)
	}
}
