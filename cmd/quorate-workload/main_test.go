package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/workload"
	"github.com/quorate-dev/quorate/e2e/workloadapi"
	"github.com/quorate-dev/quorate/internal/diskcheck"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

func testFlags(profiles, endpoints, service string) flags {
	return flags{endpoints: endpoints, profiles: profiles, serviceEndpoint: service, mix: "put=4,get=4,cas=2", prefix: "/quorate-conformance/",
		clients: 16, keys: 8, rate: 500, watchers: 2, opTimeout: 2 * time.Second, watchRestart: 10 * time.Second}
}

// One profile keeps the prefix as it always was; several get one load each, under their own
// prefix, the service-only one on the client Service alone.
func TestConfigs(t *testing.T) {
	svc := "https://etcd-client.ns.svc:2379"
	base := workload.Config{Endpoints: []string{svc}, Clients: 16, Rate: 500, Keys: 8, Prefix: "/quorate-conformance/", OpTimeout: 2 * time.Second,
		Watchers: 2, WatchRestart: 10 * time.Second, PutWeight: 4, GetWeight: 4, CASWeight: 2}
	with := func(p workload.Profile, seed int64, prefix string, endpoints ...string) workload.Config {
		c := base
		c.Profile, c.Seed, c.Prefix = p, seed, prefix
		if len(endpoints) > 0 {
			c.Endpoints = endpoints
		}
		return c
	}
	for _, tc := range []struct {
		name string
		f    flags
		want []workload.Config
		err  string
	}{
		{name: "default", f: testFlags("member-aware", svc, ""), want: []workload.Config{with(workload.MemberAware, 7, "/quorate-conformance/")}},
		{name: "service-only alone", f: testFlags("service-only", svc, ""), want: []workload.Config{with(workload.ServiceOnly, 7, "/quorate-conformance/")}},
		{name: "both", f: testFlags("member-aware,service-only", "https://ext:2379,"+svc, svc), want: []workload.Config{
			with(workload.MemberAware, 7, "/quorate-conformance/member-aware/", "https://ext:2379", svc),
			with(workload.ServiceOnly, 7+1<<32, "/quorate-conformance/service-only/", svc)}},
		{name: "no service endpoint", f: testFlags("member-aware,service-only", "https://ext:2379,"+svc, ""),
			err: "--profiles=member-aware,service-only: the service-only profile needs --service-endpoint (the client Service's URL) when --endpoints names 2 URLs"},
		{name: "unknown", f: testFlags("dns", svc, ""), err: `--profiles: unknown client profile "dns": want one of member-aware,service-only`},
		{name: "bad mix", f: func() flags { f := testFlags("member-aware", svc, ""); f.mix = "put=4"; return f }(), err: `--mix "put=4": want put=N,get=N,cas=N`},
	} {
		got, err := tc.f.configs(7)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tc.err || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: configs\n%+v, %q\nwant\n%+v, %q", tc.name, got, gotErr, tc.want, tc.err)
		}
	}
}

// ?profile= picks the load /history answers for; a profile the workload does not run, or
// does not know, is refused with the reason. /stats gives each profile's counts when there
// are several.
func TestRoutesByProfile(t *testing.T) {
	rs := runners{workload.New(workload.Config{Profile: workload.MemberAware}), workload.New(workload.Config{Profile: workload.ServiceOnly})}
	one := runners{rs[0]}
	get := func(rs runners, path string) (int, string) {
		rec := httptest.NewRecorder()
		routes(context.Background(), rs, &workload.Poller{}, "", &tlsFiles{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	for _, tc := range []struct {
		rs   runners
		path string
		want history.History
	}{
		{rs, "/history?profile=service-only", history.History{Profile: "service-only"}},
		{rs, "/history", history.History{Profile: "member-aware"}},
		{one, "/history", history.History{}},
	} {
		code, body := get(tc.rs, tc.path)
		var h history.History
		if err := json.Unmarshal([]byte(body), &h); err != nil || code != http.StatusOK {
			t.Errorf("GET %s (%s): %d %s", tc.path, tc.rs.profiles(), code, body)
			continue
		}
		h.End = 0 // now: a history that never started ends when it is asked for
		if !reflect.DeepEqual(h, tc.want) {
			t.Errorf("GET %s (%s): %+v, want %+v", tc.path, tc.rs.profiles(), h, tc.want)
		}
	}
	for _, tc := range []struct {
		rs   runners
		path string
		code int
		body string
	}{
		{one, "/history?profile=service-only", http.StatusNotFound, "this workload runs no service-only load (its --profiles: member-aware)"},
		{rs, "/history?profile=dns", http.StatusBadRequest, `unknown client profile "dns": want one of member-aware,service-only`},
		{rs, "/stats", http.StatusOK, `{"ok":0,"fail":0,"unknown":0,"samples":0,"profiles":[{"profile":"member-aware","ok":0,"fail":0,"unknown":0},{"profile":"service-only","ok":0,"fail":0,"unknown":0}]}`},
		{one, "/stats", http.StatusOK, `{"ok":0,"fail":0,"unknown":0,"samples":0}`},
	} {
		code, body := get(tc.rs, tc.path)
		if code != tc.code || body != tc.body {
			t.Errorf("GET %s (%s): %d %s, want %d %s", tc.path, tc.rs.profiles(), code, body, tc.code, tc.body)
		}
	}
	var c workloadapi.Counts
	_, body := get(rs, "/stats")
	if err := json.Unmarshal([]byte(body), &c); err != nil || len(c.Profiles) != 2 {
		t.Errorf("/stats does not decode as workloadapi.Counts with two profiles: %+v, %v", c, err)
	}
}

// Two profiles' loads run at once against a real etcd, each on its own keys with its own
// history and final read-back: the service-only one on its one endpoint.
func TestProfilesRunSideBySide(t *testing.T) {
	url := testsupport.StartEtcd(t, "test", false).ClientURL
	f := testFlags("member-aware,service-only", url, "")
	f.clients, f.rate, f.watchers = 2, 40, 0
	cfgs, err := f.configs(1)
	if err != nil {
		t.Fatal(err)
	}
	var rs runners
	for _, cfg := range cfgs {
		rs = append(rs, workload.New(cfg))
	}
	if err := rs.start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		c := rs.counts(0)
		if len(c.Profiles) == 2 && c.Profiles[0].OK >= 20 && c.Profiles[1].OK >= 20 {
			break
		}
		if time.Now().After(deadline) {
			rs.stop()
			t.Fatalf("both loads did not reach 20 successes in a minute: %+v", c)
		}
	}
	rs.stop()
	for _, r := range rs {
		prefix := "/quorate-conformance/" + string(r.Profile()) + "/k"
		h := r.History()
		if len(h.Ops) == 0 {
			t.Fatalf("%s: no operation recorded", r.Profile())
		}
		for _, o := range h.Ops {
			if !strings.HasPrefix(o.Key, prefix) {
				t.Fatalf("%s: operation on %s, outside %s*", r.Profile(), o.Key, prefix)
			}
		}
		final := r.Final(context.Background())
		if !final.Complete || len(final.Applied) == 0 {
			t.Fatalf("%s: final read-back %+v", r.Profile(), final)
		}
		for key := range final.Applied {
			if !strings.HasPrefix(key, prefix) {
				t.Errorf("%s: read back %s, outside its keys", r.Profile(), key)
			}
		}
	}
}

// TestFsyncProbeCommand: the subcommand writes the result the suite reads.
func TestFsyncProbeCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "termination-log")
	if code := fsyncProbe([]string{"--fsync-probe-dir", dir, "--fsync-probe-syncs", "10", "--fsync-probe-throughput-bytes", "1048576", "--termination-log", out}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := diskcheck.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Syncs != 10 || got.BlockSize != 2300 || got.Max <= 0 || got.ThroughputBytesPerSec <= 0 {
		t.Errorf("result %+v", got)
	}
	if code := fsyncProbe([]string{"--fsync-probe-dir=" + filepath.Join(dir, "absent"), "--termination-log", ""}); code != 1 {
		t.Errorf("a missing directory: exit %d, want 1", code)
	}
}
