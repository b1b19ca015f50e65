package framework

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/checker"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/report"
	"github.com/quorate-dev/quorate/e2e/workload"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func (r *Run) execute(ctx context.Context) {
	t, sc := r.T, r.Scenario
	res := report.Scenario{Name: sc.Name, Labels: sc.Labels, Start: time.Now(), Budget: r.budget(), Class: string(sc.Class), Expected: expectations(sc.Expect)}
	defer func() {
		res.Duration = time.Since(res.Start)
		r.mu.Lock()
		res.Timings = r.timings
		r.mu.Unlock()
		r.Suite.add(res)
	}()

	stepErr := r.underLoad(ctx, &res)
	hs := r.collect(ctx, &res)
	if stepErr != nil {
		res.Error = stepFailure(stepErr)
		t.Error(res.Error)
	}
	r.judge(ctx, &res, hs)
}

// expectations are the verdicts a scenario expects of every checker: a pass unless it says
// otherwise.
func expectations(expect map[checker.Name]history.Expectation) map[checker.Name]history.Expectation {
	out := map[checker.Name]history.Expectation{}
	for _, c := range checker.Names {
		out[c] = history.ExpectPass
	}
	for c, want := range expect {
		out[c] = want
	}
	return out
}

// underLoad prepares the cluster, starts the load, and runs the scenario's steps between two
// spells of steady load; it returns the steps' error. It ends the test when the load cannot
// start.
func (r *Run) underLoad(ctx context.Context, res *report.Scenario) error {
	t, sc := r.T, r.Scenario
	if sc.BeforeLoad != nil {
		if err := sc.BeforeLoad(ctx, r); err != nil {
			res.Error = "preparing the cluster before the load: " + err.Error()
			t.Fatal(res.Error)
		}
	}
	if n := r.Suite.Node; n != nil {
		t.Logf("%s: the machine's dirty data written back before the load in %s", sc.Name, n.SettleDisk().Round(time.Millisecond))
	}
	if err := r.Workload().Start(ctx); err != nil {
		res.Error = err.Error()
		t.Fatal(err)
	}
	r.mu.Lock()
	r.started = time.Now()
	r.mu.Unlock()
	pctx, stopProgress := context.WithCancel(ctx)
	go r.progress(pctx, res.Start)
	steady := max(r.Suite.Opts.Duration, sc.MinDuration)
	r.Phase("steady load before the scenario")
	wait(ctx, steady)
	var stepErr error
	if len(sc.Steps) > 0 {
		stepErr = r.runSteps(ctx, sc.Name, sc.Steps, t.Logf)
	}
	r.Phase("steady load after the scenario")
	wait(ctx, steady)
	stopProgress()
	return stepErr
}

// collect stops the load and gathers each client profile's history (in --client-profiles
// order), its final state and the timeline. It ends the test when the workload does not
// answer.
func (r *Run) collect(ctx context.Context, res *report.Scenario) []*history.History {
	t := r.T
	wl := r.Workload()
	if err := wl.Stop(ctx); err != nil {
		res.Error = err.Error()
		t.Fatal(err)
	}
	events := append(r.clusterEvents(ctx), r.events...)
	sort.Slice(events, func(i, j int) bool { return events[i].Time < events[j].Time })
	res.Events = events
	profiles := r.profiles()
	var hs []*history.History
	for _, p := range profiles {
		if workload.IsDefault(profiles) {
			p = "" // the workload's only load, asked for as before
		}
		h, err := wl.HistoryOf(ctx, p)
		if err != nil {
			res.Error = err.Error()
			t.Fatal(err)
		}
		final, err := wl.FinalOf(ctx, p)
		if err != nil {
			final = history.Final{Error: err.Error()}
		}
		h.Final, h.Scenario, h.Profile = &final, r.Scenario.Name, string(p)
		h.Events = slices.Clone(events)
		hs = append(hs, &h)
	}
	return hs
}

// judge saves each profile's history and the operator's log, runs every checker on each
// history, and fails the test for each verdict that is not the expected one. The first
// profile's results are the scenario's own; the others go to res.OtherProfiles.
func (r *Run) judge(ctx context.Context, res *report.Scenario, hs []*history.History) {
	sc := r.Scenario
	dir := r.Suite.Opts.ReportDir
	_ = os.MkdirAll(dir, 0o755)
	r.saveOperatorLog(ctx, metav1.NewTime(res.Start), filepath.Join(dir, "operator-"+history.Slug(sc.Name)+".log"))
	// The budget again now that the faults the steps injected are known (a partition's
	// budget grows with the members it cut off).
	res.Budget = r.budget()
	r.judgeAll(res, hs)
}

// judgeAll judges each profile's history (judgeProfile): the first profile's results are the
// scenario's own, the others' go to res.OtherProfiles.
func (r *Run) judgeAll(res *report.Scenario, hs []*history.History) {
	for i, h := range hs {
		p := r.judgeProfile(res, h)
		if i > 0 {
			res.OtherProfiles = append(res.OtherProfiles, p)
			continue
		}
		res.Profile, res.Verdicts, res.Stats, res.History = p.Profile, p.Verdicts, p.Stats, p.History
		res.HistoryStart, res.HistoryEnd, res.Latencies = p.HistoryStart, p.HistoryEnd, p.Latencies
	}
}

// judgeProfile saves one profile's history, runs every checker on it against the scenario's
// budget, and fails the test for each verdict that is not the expected one.
func (r *Run) judgeProfile(res *report.Scenario, h *history.History) report.ProfileResult {
	t, dir := r.T, r.Suite.Opts.ReportDir
	label := r.Scenario.Name
	if h.Profile != "" {
		label += " [" + h.Profile + "]"
	}
	p := report.ProfileResult{Profile: h.Profile, History: "history-" + history.Slug(h.Label()) + ".json"}
	if err := h.Save(filepath.Join(dir, p.History)); err != nil {
		t.Logf("saving the history: %v", err)
	}
	verdicts, stats := checker.All(h, checker.Input{Budget: res.Budget, LinearizabilityTimeout: 3 * time.Minute, Dir: dir})
	p.Verdicts, p.Stats = verdicts, stats
	p.AddLatencies(h, 4000)
	for i, v := range p.Verdicts {
		want := res.Expect(v.Checker)
		if h.Profile != "" {
			t.Logf("[%s] %s (expected %s)", h.Profile, v, want)
		} else {
			t.Logf("%s (expected %s)", v, want)
		}
		if want.Met(v) {
			continue
		}
		// Name the faults that were active: during the longest write gap for availability,
		// during the run for the others.
		var from, to int64
		if v.Checker == checker.Availability {
			from, to = stats.GapStart, stats.GapEnd
		}
		if active := faultsDuring(h.Events, from, to); len(active) > 0 {
			v.Details = append(v.Details, "faults active: "+strings.Join(active, "; "))
			p.Verdicts[i] = v
		}
		t.Errorf("%s: %s verdict %s [%s], expected %s: %s %v", label, v.Checker, v.Status, v.Code, want, v.Reason, v.Details)
	}
	return p
}

// clusterEvents turns the operator's Events about the EtcdCluster into timeline events.
func (r *Run) clusterEvents(ctx context.Context) []history.Event {
	var list corev1.EventList
	if err := r.Suite.Client.List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
		return nil
	}
	var out []history.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != "EtcdCluster" || !slices.Contains(v1alpha1.MembershipEvents, e.Reason) {
			continue
		}
		ts := e.EventTime.Time
		if ts.IsZero() {
			ts = e.FirstTimestamp.Time
		}
		if e.LastTimestamp.After(ts) {
			ts = e.LastTimestamp.Time
		}
		out = append(out, history.Event{Time: ts.UnixNano(), Kind: "membership", Name: e.Reason, Text: e.Message})
	}
	return out
}
