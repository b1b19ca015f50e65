package workloadapi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/workload"
)

// The client sends each call to its route, with its query, and names both in its errors.
func TestClientRoutes(t *testing.T) {
	var got []string
	c := Client{Transport: func(_ context.Context, method, path string) ([]byte, error) {
		got = append(got, method+" "+path)
		switch {
		case strings.HasPrefix(path, "probe"):
			return []byte(`{"error":"permission denied"}`), nil
		case strings.HasPrefix(path, "fill"):
			return []byte(`{"bytes":3}`), nil
		case strings.HasPrefix(path, "lease"):
			return []byte(`{"id":7,"keys":2,"revision":9}`), nil
		case strings.HasPrefix(path, "revoke"):
			return []byte(`{"id":7,"revision":10}`), nil
		case path == "stats":
			return []byte(`{"ok":1,"fail":2,"unknown":3,"samples":4,"profiles":[{"profile":"member-aware","ok":1},{"profile":"service-only","fail":2,"unknown":3}]}`), nil
		case strings.HasPrefix(path, "history"):
			return []byte(`{"scenario":"s","start":1}`), nil
		case strings.HasPrefix(path, "final"):
			return nil, errors.New("boom")
		}
		return []byte(`null`), nil
	}}
	ctx := context.Background()
	if res, err := c.Probe(ctx, "/elsewhere/x"); err != nil || res.Error != "permission denied" {
		t.Errorf("Probe: %+v, %v", res, err)
	}
	if res, err := c.Fill(ctx, 64); err != nil || res.Bytes != 3 {
		t.Errorf("Fill: %+v, %v", res, err)
	}
	if res, err := c.Lease(ctx, 3600, 2); err != nil || res != (workload.LeaseResult{ID: 7, Keys: 2, Revision: 9}) {
		t.Errorf("Lease: %+v, %v", res, err)
	}
	if res, err := c.Revoke(ctx, 7); err != nil || res != (workload.LeaseResult{ID: 7, Revision: 10}) {
		t.Errorf("Revoke: %+v, %v", res, err)
	}
	wantCounts := Counts{OK: 1, Fail: 2, Unknown: 3, Samples: 4, Profiles: []ProfileCounts{{Profile: workload.MemberAware, OK: 1}, {Profile: workload.ServiceOnly, Fail: 2, Unknown: 3}}}
	if st, err := c.Stats(ctx); err != nil || !reflect.DeepEqual(st, wantCounts) {
		t.Errorf("Stats: %+v, %v; want %+v", st, err, wantCounts)
	}
	if _, err := c.Final(ctx); err == nil || err.Error() != "workload POST final: boom" {
		t.Errorf("Final: %v", err)
	}
	if _, err := c.FinalOf(ctx, workload.ServiceOnly); err == nil || err.Error() != "workload POST final?profile=service-only: boom" {
		t.Errorf("FinalOf: %v", err)
	}
	for _, p := range []workload.Profile{"", workload.ServiceOnly} {
		if h, err := c.HistoryOf(ctx, p); err != nil || !reflect.DeepEqual(h, history.History{Scenario: "s", Start: 1}) {
			t.Errorf("HistoryOf(%q): %+v, %v", p, h, err)
		}
	}
	if err := c.Start(ctx); err != nil {
		t.Error(err)
	}
	want := []string{"POST probe?key=%2Felsewhere%2Fx", "POST fill?mib=64", "POST lease?keys=2&ttl=3600", "POST revoke?id=7", "GET stats", "POST final", "POST final?profile=service-only", "GET history", "GET history?profile=service-only", "POST start"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The workload serves every route (cmd/quorate-workload keeps its own pattern strings).
func TestServerServesEveryRoute(t *testing.T) {
	files, _ := filepath.Glob("../../cmd/quorate-workload/*.go")
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	if src.Len() == 0 {
		t.Fatal("no source of cmd/quorate-workload found beside this package: the routes cannot be checked")
	}
	for _, r := range []Route{Healthz, Start, Stop, History, Final, Fill, Unfill, Probe, Lease, Revoke, TLS, Stats} {
		if !strings.Contains(src.String(), `HandleFunc("`+r.Pattern()+`"`) {
			t.Errorf("cmd/quorate-workload does not serve %s", r.Pattern())
		}
	}
}
