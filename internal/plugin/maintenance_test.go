package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

const mib = 1 << 20

// threeMembers is cluster a with three voters, a-1 leading, and their database sizes.
func threeMembers() *v1alpha1.EtcdCluster {
	c := cluster("a")
	c.Status.Leader = "a-1"
	c.Status.Members = []v1alpha1.MemberStatus{
		{Name: "a-0", Healthy: true, DBSize: 100 * mib},
		{Name: "a-1", Healthy: true, DBSize: 80 * mib, IsLeader: true},
		{Name: "a-2", Healthy: true, DBSize: 90 * mib},
	}
	return c
}

func TestMaintenancePatches(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{string(defragNowPatch("defrag-20261128-120000")), `{"spec":{"maintenance":{"defragNow":"defrag-20261128-120000"}}}`},
		{string(moveLeaderPatch("m1", "a-2")), `{"spec":{"maintenance":{"moveLeader":{"to":"a-2","token":"m1"}}}}`},
		{string(moveLeaderPatch("m1", "")), `{"spec":{"maintenance":{"moveLeader":{"to":null,"token":"m1"}}}}`},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}

func TestDefragState(t *testing.T) {
	at := metav1.NewTime(now)
	for _, tc := range []struct {
		name     string
		status   *v1alpha1.MaintenanceStatus
		done     bool
		progress string
	}{
		{"not started", nil, false, "waiting for the operator to start the round; Progressing=False Settled: nothing to do"},
		{"an earlier round", &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "old", Defragmented: []string{"a-0"}, CompletionTime: &at}},
			false, "waiting for the operator to start the round; Progressing=False Settled: nothing to do"},
		{"under way", &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d1", Defragmented: []string{"a-0"}}},
			false, "1 of 3 members defragmented (a-0); Progressing=False Settled: nothing to do"},
		{"complete", &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d1", Defragmented: []string{"a-0", "a-2", "a-1"}, CompletionTime: &at}},
			true, "the round is complete: 3 members defragmented (a-0, a-2, a-1)"},
	} {
		c := threeMembers()
		c.Status.Maintenance = tc.status
		if done, progress := defragState(c, "d1"); done != tc.done || progress != tc.progress {
			t.Errorf("%s: got %t %q, want %t %q", tc.name, done, progress, tc.done, tc.progress)
		}
	}
}

func TestMoveLeaderState(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   *v1alpha1.MaintenanceStatus
		done     bool
		progress string
		err      string
	}{
		{"not answered", &v1alpha1.MaintenanceStatus{MoveLeader: &v1alpha1.MoveLeaderStatus{Token: "old", Result: v1alpha1.LeaderMoveMoved}},
			false, "waiting for the operator (leader: a-1); Progressing=False Settled: nothing to do", ""},
		{"moved", &v1alpha1.MaintenanceStatus{MoveLeader: &v1alpha1.MoveLeaderStatus{Token: "m1", Result: v1alpha1.LeaderMoveMoved, From: "a-1", To: "a-2"}},
			true, "leadership moved from a-1 to a-2", ""},
		{"already leader", &v1alpha1.MaintenanceStatus{MoveLeader: &v1alpha1.MoveLeaderStatus{Token: "m1", Result: v1alpha1.LeaderMoveAlreadyLeader, From: "a-1", To: "a-1"}},
			true, "a-1 is the leader already: nothing moved", ""},
		{"refused", &v1alpha1.MaintenanceStatus{MoveLeader: &v1alpha1.MoveLeaderStatus{Token: "m1", Result: v1alpha1.LeaderMoveRefused, To: "a-9", Message: "a-9 is no member"}},
			false, "", "the operator refused the transfer: a-9 is no member"},
	} {
		c := threeMembers()
		c.Status.Maintenance = tc.status
		done, progress, err := moveLeaderState(c, "m1")
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if done != tc.done || progress != tc.progress || gotErr != tc.err {
			t.Errorf("%s: got %t %q %q, want %t %q %q", tc.name, done, progress, gotErr, tc.done, tc.progress, tc.err)
		}
	}
}

// defrag sets spec.maintenance.defragNow, follows the round, and prints the members with their
// database sizes before and after.
func TestDefragWaitsForTheRound(t *testing.T) {
	at := metav1.NewTime(now)
	env, base, out, errOut := testEnv(t, []client.Object{threeMembers()}, actAfterPatch(func(c *v1alpha1.EtcdCluster) {
		c.Status.Maintenance = &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: c.Spec.Maintenance.DefragNow,
			Defragmented: []string{"a-0", "a-2", "a-1"}, StartTime: &at, CompletionTime: &at}}
		c.Status.Members[0].DBSize, c.Status.Members[1].DBSize, c.Status.Members[2].DBSize = 30*mib, 20*mib, 25*mib
	}))
	if err := env.Defrag(context.Background(), "a", "", time.Minute); err != nil {
		t.Fatal(err)
	}
	c := &v1alpha1.EtcdCluster{}
	if err := base.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "a"}, c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.Maintenance.DefragNow != "defrag-20261128-120000" {
		t.Errorf("spec.maintenance.defragNow = %q", c.Spec.Maintenance.DefragNow)
	}
	wantErr := "asked for a defragmentation of every member of ns/a (spec.maintenance.defragNow=defrag-20261128-120000): followers first, the leader last\n" +
		"  waiting for the operator to start the round; Progressing=False Settled: nothing to do\n" +
		"  the round is complete: 3 members defragmented (a-0, a-2, a-1)\n"
	if diff := cmp.Diff(wantErr, errOut.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	wantOut := "defragmented 3 members of a, in this order (database file size before -> after; writes go on meanwhile):\n" +
		"  a-0\tdatabase 100.0 MiB -> 30.0 MiB\n" +
		"  a-2\tdatabase 90.0 MiB -> 25.0 MiB\n" +
		"  a-1\tdatabase 80.0 MiB -> 20.0 MiB\n"
	if diff := cmp.Diff(wantOut, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestDefragRefusesATokenUsedAlready(t *testing.T) {
	c := threeMembers()
	c.Spec.Maintenance.DefragNow = "d1"
	env, _, _, _ := testEnv(t, []client.Object{c}, interceptor.Funcs{})
	err := env.Defrag(context.Background(), "a", "d1", time.Minute)
	if want := `spec.maintenance.defragNow is "d1" already: choose another token`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestMoveLeaderPrintsTheTransfer(t *testing.T) {
	env, base, out, errOut := testEnv(t, []client.Object{threeMembers()}, actAfterPatch(func(c *v1alpha1.EtcdCluster) {
		c.Status.Maintenance = &v1alpha1.MaintenanceStatus{MoveLeader: &v1alpha1.MoveLeaderStatus{Token: c.Spec.Maintenance.MoveLeader.Token,
			Result: v1alpha1.LeaderMoveMoved, From: "a-1", To: c.Spec.Maintenance.MoveLeader.To}}
	}))
	if err := env.MoveLeader(context.Background(), "a", "a-2", "", time.Minute); err != nil {
		t.Fatal(err)
	}
	c := &v1alpha1.EtcdCluster{}
	if err := base.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "a"}, c); err != nil {
		t.Fatal(err)
	}
	if want := (v1alpha1.MoveLeaderSpec{Token: "move-20261128-120000", To: "a-2"}); c.Spec.Maintenance.MoveLeader == nil || *c.Spec.Maintenance.MoveLeader != want {
		t.Errorf("spec.maintenance.moveLeader = %+v, want %+v", c.Spec.Maintenance.MoveLeader, want)
	}
	wantErr := "asked for a leadership transfer of ns/a to a-2 (spec.maintenance.moveLeader.token=move-20261128-120000)\n" +
		"  waiting for the operator (leader: a-1); Progressing=False Settled: nothing to do\n" +
		"  leadership moved from a-1 to a-2\n"
	if diff := cmp.Diff(wantErr, errOut.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("leadership moved from a-1 to a-2\n", out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestMoveLeaderRefusalIsAnError(t *testing.T) {
	env, _, out, _ := testEnv(t, []client.Object{threeMembers()}, actAfterPatch(func(c *v1alpha1.EtcdCluster) {
		c.Status.Maintenance = &v1alpha1.MaintenanceStatus{MoveLeader: &v1alpha1.MoveLeaderStatus{Token: c.Spec.Maintenance.MoveLeader.Token,
			Result: v1alpha1.LeaderMoveRefused, From: "a-1", To: "a-9", Message: `spec.maintenance.moveLeader "m1" is refused: a-9 is no member of this cluster`}}
	}))
	err := env.MoveLeader(context.Background(), "a", "a-9", "m1", time.Minute)
	want := `the operator refused the transfer: spec.maintenance.moveLeader "m1" is refused: a-9 is no member of this cluster`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	if out.Len() != 0 {
		t.Errorf("a refusal printed %q", out.String())
	}
}
