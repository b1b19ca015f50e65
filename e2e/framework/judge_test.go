package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quorate-dev/quorate/e2e/checker"
	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/report"
)

// puts is a history of n acknowledged puts to one key, 100 ms apart, read back whole.
func puts(n int, prefix string) history.History {
	sec := int64(time.Second)
	h := history.History{Start: sec, End: sec + int64(n+1)*sec/10}
	f := history.Final{Applied: map[string][]history.AppliedWrite{}, Values: map[string]string{}, Complete: true}
	key := prefix + "k00"
	for i := range n {
		call := sec + int64(i)*sec/10
		v := fmt.Sprintf("c0-%d", i+1)
		h.Ops = append(h.Ops, history.Op{ID: int64(i + 1), Type: history.Put, Key: key, Value: v, Call: call, Return: call + sec/100, Status: history.OK, Revision: int64(i + 2)})
		f.Applied[key] = append(f.Applied[key], history.AppliedWrite{Key: key, Value: v, ModRevision: int64(i + 2)})
		f.Values[key] = v
	}
	h.Final = &f
	return h
}

// With two client profiles the suite asks the workload for each profile's history and final
// state, saves each history in its own file, judges each with every checker against the
// scenario's budget, and reports the first profile's results as the scenario's and the
// other's beside them.
func TestCollectAndJudgeEveryProfile(t *testing.T) {
	loads := map[string]history.History{"member-aware": puts(30, "/q/member-aware/"), "service-only": puts(50, "/q/service-only/")}
	var sent []string
	transport := func(_ context.Context, method, path string) ([]byte, error) {
		sent = append(sent, method+" "+path)
		route, query, _ := strings.Cut(path, "?")
		profile := strings.TrimPrefix(query, "profile=")
		h := loads[profile]
		switch route {
		case "history":
			h.Final = nil
			return json.Marshal(h)
		case "final":
			return json.Marshal(h.Final)
		}
		return []byte("stopped\n"), nil
	}
	o := &Options{ClientProfiles: "member-aware,service-only", ReportDir: t.TempDir()}
	if err := o.checkClientProfiles(); err != nil {
		t.Fatal(err)
	}
	// Every checker is expected to reach what it reaches on the member-aware load alone, which
	// the service-only one (more of the same) must meet too.
	budget := availability.Budget{MaxWriteGap: time.Second, MaxFirstWrite: 5 * time.Second, MinSuccessRatio: 0.999}
	ma := loads["member-aware"]
	ma.Scenario = "scale"
	alone, _ := checker.All(&ma, checker.Input{Budget: budget, LinearizabilityTimeout: time.Minute})
	expect := map[checker.Name]history.Expectation{}
	for _, v := range alone {
		expect[v.Checker] = history.Expectation{Status: v.Status, Code: v.Code}
	}
	r := &Run{Suite: &Suite{Opts: o, Client: fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()}, Scenario: Scenario{Name: "scale", Expect: expect},
		T: t, Namespace: "ns", transport: transport}
	res := report.Scenario{Name: "scale", Budget: budget, Expected: expectations(expect)}
	hs := r.collect(context.Background(), &res)

	wantSent := []string{"POST stop", "GET history?profile=member-aware", "POST final?profile=member-aware", "GET history?profile=service-only", "POST final?profile=service-only"}
	if !slices.Equal(sent, wantSent) {
		t.Errorf("asked the workload\n%q\nwant\n%q", sent, wantSent)
	}
	for i, p := range []string{"member-aware", "service-only"} {
		want := loads[p]
		want.Scenario, want.Profile = "scale", p
		if !reflect.DeepEqual(*hs[i], want) {
			t.Errorf("history %d is not the %s load's: %+v", i, p, hs[i])
		}
	}

	r.judgeAll(&res, hs)
	got := res.Profiles()
	if len(got) != 2 {
		t.Fatalf("%d profiles in the result, want 2", len(got))
	}
	for i, p := range []string{"member-aware", "service-only"} {
		h := loads[p]
		h.Scenario, h.Profile = "scale", p
		verdicts, stats := checker.All(&h, checker.Input{Budget: budget, LinearizabilityTimeout: time.Minute})
		want := report.ProfileResult{Profile: p, Verdicts: verdicts, Stats: stats, History: "history-scale-" + p + ".json"}
		want.AddLatencies(&h, 4000)
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("%s: result\n%+v\nwant\n%+v", p, got[i], want)
		}
		saved, err := history.Load(filepath.Join(o.ReportDir, want.History))
		if err != nil || !reflect.DeepEqual(*saved, h) {
			t.Errorf("%s: saved history %v, %v", p, saved, err)
		}
	}
	if !res.Passed() {
		t.Errorf("the scenario did not pass: %v", (&report.Report{Scenarios: []report.Scenario{res}}).Failures())
	}
}

// The default profile alone is asked for, saved and reported as before: no profile in the
// requests, the history's file or the result.
func TestCollectAndJudgeDefaultProfile(t *testing.T) {
	load := puts(30, "/q/")
	var sent []string
	transport := func(_ context.Context, method, path string) ([]byte, error) {
		sent = append(sent, method+" "+path)
		switch path {
		case "history":
			h := load
			h.Final = nil
			return json.Marshal(h)
		case "final":
			return json.Marshal(load.Final)
		}
		return []byte("stopped\n"), nil
	}
	o := &Options{ReportDir: t.TempDir()}
	budget := availability.Budget{MaxWriteGap: time.Second, MaxFirstWrite: 5 * time.Second, MinSuccessRatio: 0.999}
	r := &Run{Suite: &Suite{Opts: o, Client: fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()}, Scenario: Scenario{Name: "steady"},
		T: t, Namespace: "ns", transport: transport}
	res := report.Scenario{Name: "steady", Budget: budget}
	hs := r.collect(context.Background(), &res)
	if want := []string{"POST stop", "GET history", "POST final"}; !slices.Equal(sent, want) {
		t.Errorf("asked the workload %q, want %q", sent, want)
	}
	want := load
	want.Scenario = "steady"
	if len(hs) != 1 || !reflect.DeepEqual(*hs[0], want) {
		t.Fatalf("histories %+v, want the one load's", hs)
	}
	// Judged against the expectations its own verdicts set, so that only the plumbing is under test.
	verdicts, stats := checker.All(&want, checker.Input{Budget: budget, LinearizabilityTimeout: time.Minute})
	res.Expected = map[checker.Name]history.Expectation{}
	for _, v := range verdicts {
		res.Expected[v.Checker] = history.Expectation{Status: v.Status, Code: v.Code}
	}
	r.judgeAll(&res, hs)
	wantRes := report.Scenario{Name: "steady", Budget: budget, Expected: res.Expected, Verdicts: verdicts, Stats: stats, History: "history-steady.json"}
	wantRes.AddLatencies(&want, 4000)
	if !reflect.DeepEqual(res, wantRes) {
		t.Errorf("result\n%+v\nwant\n%+v", res, wantRes)
	}
}
