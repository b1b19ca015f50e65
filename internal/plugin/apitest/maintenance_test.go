package apitest

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/plugin"
)

const mib = 1 << 20

// createThree creates cluster a in ns with the status of three healthy voters, demo-like:
// a-0 leads.
func createThree(t *testing.T, cl client.Client, ns string) client.ObjectKey {
	t.Helper()
	ctx := context.Background()
	c := newCluster(ns, "a")
	if err := cl.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Status.ObservedGeneration, c.Status.Leader = c.Generation, "a-0"
	c.Status.Members = []v1alpha1.MemberStatus{
		{Name: "a-0", Healthy: true, IsLeader: true, DBSize: 64 * mib},
		{Name: "a-1", Healthy: true, DBSize: 48 * mib},
		{Name: "a-2", Healthy: true, DBSize: 40 * mib},
	}
	if err := cl.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(c)
}

// defrag against a real API server: the CRD takes spec.maintenance.defragNow (a token), and the
// plugin waits for status.maintenance.defrag to complete that token, then prints the round.
func TestDefragAgainstAPIServer(t *testing.T) {
	cl, ns := apiServer(t)
	ctx := context.Background()
	key := createThree(t, cl, ns)
	out, errOut := &bytes.Buffer{}, &lockedBuffer{}
	env, err := plugin.EnvFor(apiCfg, ns, out, errOut)
	if err != nil {
		t.Fatal(err)
	}
	env.Poll = 10 * time.Millisecond
	env.Now = func() time.Time { return now }
	token := plugin.Token("defrag", now)

	// The operator starts the round once the plugin has said it waits for it: the progress
	// printed is the same however the two goroutines are scheduled.
	waiting := func(c *v1alpha1.EtcdCluster) bool {
		return c.Spec.Maintenance.DefragNow == token && strings.Contains(errOut.String(), "waiting for the operator to start the round")
	}
	op := playOperator(t, cl, key, waiting, func(c *v1alpha1.EtcdCluster) {
		at := metav1.NewTime(now)
		c.Status.Maintenance = &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: token,
			Defragmented: []string{"a-1", "a-2", "a-0"}, StartTime: &at, CompletionTime: &at}}
		c.Status.Members[0].DBSize, c.Status.Members[1].DBSize, c.Status.Members[2].DBSize = 16*mib, 12*mib, 10*mib
	})
	if err := env.Defrag(ctx, "a", "", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := <-op; err != nil {
		t.Fatal(err)
	}
	c := &v1alpha1.EtcdCluster{}
	if err := cl.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.Maintenance.DefragNow != token || c.Generation != 2 {
		t.Errorf("spec.maintenance.defragNow %q, generation %d; want %q, 2", c.Spec.Maintenance.DefragNow, c.Generation, token)
	}
	wantOut := "defragmented 3 members of a, in this order (database file size before -> after; writes go on meanwhile):\n" +
		"  a-1\tdatabase 48.0 MiB -> 12.0 MiB\n" +
		"  a-2\tdatabase 40.0 MiB -> 10.0 MiB\n" +
		"  a-0\tdatabase 64.0 MiB -> 16.0 MiB\n"
	if diff := cmp.Diff(wantOut, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	wantErr := "asked for a defragmentation of every member of " + ns + "/a (spec.maintenance.defragNow=" + token + "): followers first, the leader last\n" +
		"  waiting for the operator to start the round; Progressing: not reported yet\n" +
		"  the round is complete: 3 members defragmented (a-1, a-2, a-0)\n"
	if diff := cmp.Diff(wantErr, errOut.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

// move-leader against a real API server: the CRD takes spec.maintenance.moveLeader, the plugin
// waits for status.maintenance.moveLeader to answer the token, prints a transfer, and returns
// a refusal as an error; a second request without --to removes the first one's member.
func TestMoveLeaderAgainstAPIServer(t *testing.T) {
	cl, ns := apiServer(t)
	ctx := context.Background()
	key := createThree(t, cl, ns)
	env, out, _ := realEnv(t, ns)
	answer := func(token, result, from, to, msg string) func(*v1alpha1.EtcdCluster) {
		return func(c *v1alpha1.EtcdCluster) {
			at := metav1.NewTime(now)
			c.Status.Maintenance = &v1alpha1.MaintenanceStatus{MoveLeader: &v1alpha1.MoveLeaderStatus{Token: token, Result: result, From: from, To: to, Message: msg, Time: &at}}
		}
	}
	asked := func(token string) func(*v1alpha1.EtcdCluster) bool {
		return func(c *v1alpha1.EtcdCluster) bool {
			return c.Spec.Maintenance.MoveLeader != nil && c.Spec.Maintenance.MoveLeader.Token == token
		}
	}

	op := playOperator(t, cl, key, asked("m1"), answer("m1", v1alpha1.LeaderMoveMoved, "a-0", "a-2", "moving leadership from a-0 to a-2"))
	if err := env.MoveLeader(ctx, "a", "a-2", "m1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := <-op; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("leadership moved from a-0 to a-2\n", out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}

	const refusal = `spec.maintenance.moveLeader "m2" is refused: no healthy voting member other than the leader a-2 can take over`
	op = playOperator(t, cl, key, asked("m2"), answer("m2", v1alpha1.LeaderMoveRefused, "a-2", "", refusal))
	err := env.MoveLeader(ctx, "a", "", "m2", time.Minute)
	if want := "the operator refused the transfer: " + refusal; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	if err := <-op; err != nil {
		t.Fatal(err)
	}
	c := &v1alpha1.EtcdCluster{}
	if err := cl.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	if want := (v1alpha1.MoveLeaderSpec{Token: "m2"}); *c.Spec.Maintenance.MoveLeader != want {
		t.Errorf("spec.maintenance.moveLeader = %+v, want %+v (the second request names no member)", *c.Spec.Maintenance.MoveLeader, want)
	}
}

// lockedBuffer is a buffer the plugin writes to while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
