package etcdcluster

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/planner"
)

// defrags lists the members the operator defragmented, in order.
func defrags(f *etcd.Fake) []string {
	var out []string
	for _, c := range f.Calls() {
		if m, ok := strings.CutPrefix(c, "Defragment "); ok {
			out = append(out, m)
		}
	}
	return out
}

// spec.maintenance.defrag: over the threshold, the fragmented followers are defragmented one
// at a time, then the leader after leadership moved to a defragmented follower; a scheduled
// round takes every member over the minimum and records when it finished.
func TestDefragMaintenance(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	op := startOperator(t, ns, fake)
	bootstrap(t, ns, "demo", 3, fake)
	const mib = 1 << 20
	for _, m := range []string{"demo-0", "demo-1", "demo-2"} {
		fake.SetFragmented(m, 100*mib, 30*mib) // 70% free pages
	}
	leader := getCluster(t, ns, "demo").Status.Leader
	patchCluster(t, ns, "demo", func(c *v1alpha1.EtcdCluster) {
		c.Spec.Maintenance.Defrag = &v1alpha1.DefragSpec{ThresholdPercent: ptr.To[int32](50)}
	})
	eventually(t, timeout, "every member defragmented", func() error {
		if d := defrags(fake); len(d) != 3 {
			return fmt.Errorf("defragmented %v", d)
		}
		return nil
	})
	d := defrags(fake)
	if d[2] != leader || slices.Contains(d[:2], leader) {
		t.Fatalf("defragmented %v; the leader %s must be last", d, leader)
	}
	if moved := slices.ContainsFunc(fake.Calls(), func(c string) bool { return strings.HasPrefix(c, "MoveLeader") }); !moved {
		t.Fatalf("leadership did not move before the leader was defragmented: %v", fake.Calls())
	}
	assertEvent(t, ns, v1alpha1.EventDefragmented, "defragmenting "+leader+": 73400320 of its 104857600 bytes are free pages")
	waitFor(t, ns, "demo", "the cluster settled", settled(3))
	assertNoWrites(t, op)

	// A scheduled round (due at once: every minute) takes members over the minimum, even under
	// the threshold, and records its end.
	fake.SetFragmented("demo-1", 100*mib, 80*mib)
	patchCluster(t, ns, "demo", func(c *v1alpha1.EtcdCluster) {
		c.Spec.Maintenance.Defrag = &v1alpha1.DefragSpec{Schedule: "@every 1s", MinFreeBytes: ptr.To[int64](8 * mib)}
	})
	waitFor(t, ns, "demo", "the scheduled round to end", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.LastDefragTime == nil {
			return fmt.Errorf("no lastDefragTime")
		}
		return nil
	})
	if d := defrags(fake); len(d) != 4 || d[3] != "demo-1" {
		t.Fatalf("defragmented %v; the round should have taken demo-1 alone", d)
	}
}

// A defragmentation schedule that matches no date (accepted before the schedule parser refused
// such schedules) does not stop the cluster's passes, and is never due.
func TestDefragScheduleThatNeverRuns(t *testing.T) {
	c := newCluster("ns", "never", 3)
	c.Spec.Maintenance.Defrag = &v1alpha1.DefragSpec{Schedule: "0 3 30 2 *"}
	if err := validateSpec(c, false); err != nil {
		t.Fatalf("validateSpec = %v, want none", err)
	}
	if p := defragPolicy(c, time.Now(), time.Hour); p.Due {
		t.Fatalf("a schedule that matches no date is due: %+v", p)
	}
}

// A scheduled round starts no sooner than the operator's minimum interval after the last one,
// however often the schedule runs; the first round is not held back, and the operator says
// once what it does with such a schedule (defragScheduleLimit).
func TestDefragScheduleMinimumInterval(t *testing.T) {
	now := time.Now()
	c := newCluster("ns", "often", 3)
	c.CreationTimestamp = metav1.NewTime(now.Add(-24 * time.Hour))
	c.Spec.Maintenance.Defrag = &v1alpha1.DefragSpec{Schedule: "@every 1s"}
	for _, tc := range []struct {
		name    string
		last    time.Duration // before now; 0: no round yet
		min     time.Duration
		wantDue bool
	}{
		{"no round yet", 0, time.Hour, true},
		{"a round 10 minutes ago, minimum 1h", 10 * time.Minute, time.Hour, false},
		{"a round 61 minutes ago, minimum 1h", 61 * time.Minute, time.Hour, true},
		{"a round 10 minutes ago, no minimum", 10 * time.Minute, 0, true},
	} {
		c.Status.LastDefragTime = nil
		if tc.last > 0 {
			c.Status.LastDefragTime = ptr.To(metav1.NewTime(now.Add(-tc.last)))
		}
		if p := defragPolicy(c, now, tc.min); p.Due != tc.wantDue {
			t.Errorf("%s: due = %v, want %v", tc.name, p.Due, tc.wantDue)
		}
	}
	// A round held back starts at one of the schedule's times: "0,30 3 * * *" after a round at
	// 03:00 runs at 03:00 the next day, not at 04:00.
	c.Spec.Maintenance.Defrag.Schedule = "0,30 3 * * *"
	round := time.Date(2026, time.November, 29, 3, 0, 5, 0, time.UTC)
	c.Status.LastDefragTime = ptr.To(metav1.NewTime(round))
	for at, wantDue := range map[time.Duration]bool{30 * time.Minute: false, 65 * time.Minute: false, 23 * time.Hour: false, 24 * time.Hour: true} {
		if p := defragPolicy(c, round.Add(at), time.Hour); p.Due != wantDue {
			t.Errorf("0,30 3 * * *, a round at 03:00:05: due %s later = %v, want %v", at, p.Due, wantDue)
		}
	}
	if p := defragPolicy(c, round.Add(30*time.Minute), 0); !p.Due {
		t.Errorf("0,30 3 * * *, no minimum: the 03:30 round is not due")
	}
	c.Spec.Maintenance.Defrag.Schedule = "@every 1s"
	want := `spec.maintenance.defrag.schedule "@every 1s" runs every 1s, more often than the operator allows (--min-defrag-interval 1h0m0s): each round blocks every member in turn, so scheduled rounds start at least 1h0m0s apart; write a schedule that runs less often, or use defrag.thresholdPercent to defragment when free pages pile up`
	if got := defragScheduleLimit(c, time.Hour); got != want {
		t.Errorf("defragScheduleLimit:\n got: %s\nwant: %s", got, want)
	}
	for _, tc := range []struct {
		schedule string
		min      time.Duration
	}{{"0 3 * * *", time.Hour}, {"@every 1h", time.Hour}, {"@every 1s", 0}, {"0 3 30 2 *", time.Hour}} {
		c.Spec.Maintenance.Defrag.Schedule = tc.schedule
		if got := defragScheduleLimit(c, tc.min); got != "" {
			t.Errorf("schedule %q, minimum %s: %s", tc.schedule, tc.min, got)
		}
	}
}

// moves lists the members leadership was moved to, in order.
func moves(f *etcd.Fake) []string {
	var out []string
	for _, c := range f.Calls() {
		if m, ok := strings.CutPrefix(c, "MoveLeader "); ok {
			out = append(out, m)
		}
	}
	return out
}

// spec.maintenance.defragNow: every member once, followers first in order, then the leader
// after leadership moved away, whatever their free pages; status records each member and the
// round's end, and a settled cluster does not start again. spec.maintenance.moveLeader: the
// transfer asked for, recorded; an impossible one refused, recorded, with a Warning Event, and
// not retried.
func TestDefragNowAndMoveLeader(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	op := startOperator(t, ns, fake)
	bootstrap(t, ns, "demo", 3, fake)
	leader := getCluster(t, ns, "demo").Status.Leader
	var followers []string
	for _, m := range []string{"demo-0", "demo-1", "demo-2"} {
		if m != leader {
			followers = append(followers, m)
		}
	}

	patchCluster(t, ns, "demo", func(c *v1alpha1.EtcdCluster) { c.Spec.Maintenance.DefragNow = "d1" })
	c := waitFor(t, ns, "demo", "the round to complete", func(c *v1alpha1.EtcdCluster) error {
		if m := c.Status.Maintenance; m == nil || m.Defrag == nil || m.Defrag.CompletionTime == nil {
			return fmt.Errorf("status.maintenance %+v", m)
		}
		return nil
	})
	want := append(slices.Clone(followers), leader)
	if d := defrags(fake); !slices.Equal(d, want) {
		t.Fatalf("defragmented %v; want %v (the followers in order, the leader last)", d, want)
	}
	d := c.Status.Maintenance.Defrag
	if d.Token != "d1" || !slices.Equal(d.Defragmented, want) || d.StartTime == nil {
		t.Fatalf("status.maintenance.defrag = %+v; want token d1, defragmented %v, a start time", d, want)
	}
	calls := fake.Calls()
	moved := slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "MoveLeader ") })
	last := slices.Index(calls, "Defragment "+leader)
	if moved < 0 || moved > last {
		t.Fatalf("leadership did not move before the leader was defragmented: %v", calls)
	}
	waitFor(t, ns, "demo", "the cluster settled", settled(3))
	assertNoWrites(t, op)
	if n := len(defrags(fake)); n != 3 {
		t.Fatalf("a completed round went on: %v", defrags(fake))
	}

	// A transfer to a named member.
	from := getCluster(t, ns, "demo").Status.Leader
	to := "demo-2"
	if from == to {
		to = "demo-1"
	}
	before := len(moves(fake))
	patchCluster(t, ns, "demo", func(c *v1alpha1.EtcdCluster) {
		c.Spec.Maintenance.MoveLeader = &v1alpha1.MoveLeaderSpec{Token: "m1", To: to}
	})
	c = waitFor(t, ns, "demo", "the transfer recorded", func(c *v1alpha1.EtcdCluster) error {
		if m := c.Status.Maintenance; m == nil || m.MoveLeader == nil || m.MoveLeader.Token != "m1" {
			return fmt.Errorf("status.maintenance %+v", m)
		}
		return nil
	})
	got := *c.Status.Maintenance.MoveLeader
	wantMove := v1alpha1.MoveLeaderStatus{Token: "m1", Result: v1alpha1.LeaderMoveMoved, From: from, To: to, Time: got.Time,
		Message: fmt.Sprintf("moving leadership from %s to %s as spec.maintenance.moveLeader %q asks", from, to, "m1")}
	if got.Time == nil || !reflect.DeepEqual(got, wantMove) {
		t.Fatalf("status.maintenance.moveLeader = %+v\nwant %+v", got, wantMove)
	}
	if m := moves(fake)[before:]; !slices.Equal(m, []string{to}) {
		t.Fatalf("leadership moved to %v; want [%s]", m, to)
	}
	assertEvent(t, ns, v1alpha1.EventLeaderMoved, wantMove.Message)
	waitFor(t, ns, "demo", "the new leader in status", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.Leader != to {
			return fmt.Errorf("leader %s", c.Status.Leader)
		}
		return settled(3)(c)
	})

	// A transfer to no member is refused, recorded and not retried.
	before = len(moves(fake))
	patchCluster(t, ns, "demo", func(c *v1alpha1.EtcdCluster) {
		c.Spec.Maintenance.MoveLeader = &v1alpha1.MoveLeaderSpec{Token: "m2", To: "demo-9"}
	})
	c = waitFor(t, ns, "demo", "the refusal recorded", func(c *v1alpha1.EtcdCluster) error {
		if m := c.Status.Maintenance; m == nil || m.MoveLeader == nil || m.MoveLeader.Token != "m2" {
			return fmt.Errorf("status.maintenance %+v", m)
		}
		return nil
	})
	got = *c.Status.Maintenance.MoveLeader
	wantRefused := v1alpha1.MoveLeaderStatus{Token: "m2", Result: v1alpha1.LeaderMoveRefused, From: to, To: "demo-9", Time: got.Time,
		Message: `spec.maintenance.moveLeader "m2" is refused: demo-9 is no member of this cluster; name a healthy voter in moveLeader.to (healthy voters: demo-0, demo-1, demo-2); set a new token to ask again`}
	if !reflect.DeepEqual(got, wantRefused) {
		t.Fatalf("status.maintenance.moveLeader = %+v\nwant %+v", got, wantRefused)
	}
	assertEvent(t, ns, v1alpha1.EventLeaderMoveRefused, wantRefused.Message)
	waitFor(t, ns, "demo", "the cluster settled", settled(3))
	assertNoWrites(t, op)
	if m := moves(fake)[before:]; len(m) != 0 {
		t.Fatalf("a refused transfer moved leadership to %v", m)
	}
}

// maintenanceRecord: each member done is recorded once, a transfer's answer is recorded whole,
// a failed transfer is answered Failed, and a failed defragmentation records nothing.
func TestMaintenanceRecord(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := &metav1.Time{Time: now}
	earlier := &metav1.Time{Time: now.Add(-time.Minute)}
	state := planner.State{Now: now}
	defrag := func(member, token string) planner.Action {
		return planner.Action{Kind: planner.Defragment, Member: member, Token: token}
	}
	for _, tc := range []struct {
		name    string
		before  *v1alpha1.MaintenanceStatus
		action  planner.Action
		stepErr error
		want    *v1alpha1.MaintenanceStatus
	}{
		{name: "nothing asked for", action: planner.Action{Kind: planner.None}},
		{name: "the first member starts the round", action: defrag("c-1", "d1"),
			want: &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d1", Defragmented: []string{"c-1"}, StartTime: at}}},
		{name: "a new token starts a new round", before: &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d0", Defragmented: []string{"c-0"}, StartTime: earlier, CompletionTime: earlier}},
			action: defrag("c-1", "d1"),
			want:   &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d1", Defragmented: []string{"c-1"}, StartTime: at}}},
		{name: "the next member is added", before: &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d1", Defragmented: []string{"c-1"}, StartTime: earlier}},
			action: defrag("c-2", "d1"),
			want:   &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d1", Defragmented: []string{"c-1", "c-2"}, StartTime: earlier}}},
		{name: "a failed defragmentation records nothing", before: &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d1", Defragmented: []string{"c-1"}, StartTime: earlier}},
			action: defrag("c-2", "d1"), stepErr: errors.New("timeout")},
		{name: "a defragmentation of the operator's own is no round's", action: defrag("c-2", "")},
		{name: "a transfer asked for", action: planner.Action{Kind: planner.MoveLeader, Member: "c-0", TargetName: "c-2", Token: "m1", Message: "moving"},
			want: &v1alpha1.MaintenanceStatus{MoveLeader: &v1alpha1.MoveLeaderStatus{Token: "m1", Result: v1alpha1.LeaderMoveMoved, From: "c-0", To: "c-2", Message: "moving", Time: at}}},
		{name: "a transfer etcd did not complete", action: planner.Action{Kind: planner.MoveLeader, Member: "c-0", TargetName: "c-2", Token: "m1", Message: "moving"},
			stepErr: errors.New("etcdserver: request timed out, leader transfer took too long"),
			want: &v1alpha1.MaintenanceStatus{MoveLeader: &v1alpha1.MoveLeaderStatus{Token: "m1", Result: v1alpha1.LeaderMoveFailed, From: "c-0", To: "c-2", Time: at,
				Message: "etcd did not move leadership from c-0 to c-2: etcdserver: request timed out, leader transfer took too long; set a new token to ask again"}}},
		{name: "a transfer of the operator's own is no answer", action: planner.Action{Kind: planner.MoveLeader, Member: "c-0", TargetName: "c-2", Message: "moving"}},
		{name: "a refusal", before: &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d0", CompletionTime: earlier}},
			action: planner.Action{Kind: planner.AnswerMoveLeader, Phase: v1alpha1.LeaderMoveRefused, Member: "c-0", TargetName: "c-9", Token: "m2", Message: "refused"},
			want: &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d0", CompletionTime: earlier},
				MoveLeader: &v1alpha1.MoveLeaderStatus{Token: "m2", Result: v1alpha1.LeaderMoveRefused, From: "c-0", To: "c-9", Message: "refused", Time: at}}},
	} {
		c := newCluster("ns", "c", 3)
		c.Status.Maintenance = tc.before
		if got := maintenanceRecord(c, state, tc.action, tc.stepErr); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, spew(got), spew(tc.want))
		}
	}
}

// maintenanceStatus completes the round once every voter is recorded (whatever else the pass
// plans) or on a settled pass; a wait or a failed pass does not complete it.
func TestMaintenanceStatus(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := &metav1.Time{Time: now}
	earlier := &metav1.Time{Time: now.Add(-time.Minute)}
	voters := []planner.Member{{Name: "c-0", InEtcd: true}, {Name: "c-1", InEtcd: true}, {Name: "c-2", InEtcd: true}}
	pending := func(token string, done ...string) planner.State {
		return planner.State{Now: now, Members: voters, DefragNow: &planner.DefragRequest{Token: token, Done: done}}
	}
	round := func(done []string, completed *metav1.Time) *v1alpha1.MaintenanceStatus {
		return &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d1", Defragmented: done, StartTime: earlier, CompletionTime: completed}}
	}
	busy := planner.Action{Kind: planner.Defragment, Member: "c-1", Reason: v1alpha1.ReasonDefragmenting} // a threshold round of the operator's own
	for _, tc := range []struct {
		name    string
		before  *v1alpha1.MaintenanceStatus
		state   planner.State
		action  planner.Action
		execErr error
		want    *v1alpha1.MaintenanceStatus
	}{
		{name: "nothing asked for", state: planner.State{Now: now}, action: planner.Action{Kind: planner.None}},
		{name: "every voter recorded, another rule busy", before: round([]string{"c-1", "c-2", "c-0"}, nil), state: pending("d1", "c-1", "c-2"), action: busy,
			want: round([]string{"c-1", "c-2", "c-0"}, at)},
		{name: "a settled pass", before: round([]string{"c-1", "c-2"}, nil), state: pending("d1", "c-1", "c-2"), action: planner.Action{Kind: planner.None},
			want: round([]string{"c-1", "c-2"}, at)},
		{name: "a settled pass that failed later", before: round([]string{"c-1"}, nil), state: pending("d1", "c-1"), action: planner.Action{Kind: planner.None},
			execErr: errors.New("PDB refused"), want: round([]string{"c-1"}, nil)},
		{name: "a wait does not complete it", before: round(nil, nil), state: pending("d1"), action: planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonHibernated},
			want: round(nil, nil)},
	} {
		c := newCluster("ns", "c", 3)
		c.Status.Maintenance = tc.before
		if got := maintenanceStatus(c, tc.state, tc.action, tc.execErr); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, spew(got), spew(tc.want))
		}
	}
}

func spew(m *v1alpha1.MaintenanceStatus) string {
	if m == nil {
		return "nil"
	}
	return fmt.Sprintf("defrag %+v, moveLeader %+v", m.Defrag, m.MoveLeader)
}

// TestDefragLongerThanTheClaimsTerm: a defragmentation that outlasts what is left of the
// claim's term (a large database) stops its pass for the claim; what it did is recorded all
// the same, so that each member is defragmented once and the round completes. Before, the pass
// wrote nothing and every pass defragmented the first member again.
func TestDefragLongerThanTheClaimsTerm(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	bootstrap(t, ns, "demo", 3, fake)
	waitFor(t, ns, "demo", "the cluster settled", settled(3))
	// Longer than a pass may act under a fresh claim (the term less its margin).
	fake.SlowDefrag(ownershipTerm)
	patchCluster(t, ns, "demo", func(c *v1alpha1.EtcdCluster) { c.Spec.Maintenance.DefragNow = "slow" })
	c := waitFor(t, ns, "demo", "the round to complete", func(c *v1alpha1.EtcdCluster) error {
		if m := c.Status.Maintenance; m == nil || m.Defrag == nil || m.Defrag.CompletionTime == nil {
			return fmt.Errorf("status.maintenance %+v; defragmented %v", m, defrags(fake))
		}
		return nil
	})
	fake.SlowDefrag(0)
	d := defrags(fake)
	if got := c.Status.Maintenance.Defrag.Defragmented; !slices.Equal(got, d) || len(d) != 3 {
		t.Fatalf("status says %v defragmented; etcd saw %v; want the 3 members once each", got, d)
	}
}
