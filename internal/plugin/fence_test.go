package plugin

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

// fenceCluster is a cluster of three whose annotation asks to fence the given members, which
// its status shows fenced.
func fenceCluster(fenced ...string) *v1alpha1.EtcdCluster {
	c := cluster("a")
	for _, m := range []string{"a-0", "a-1", "a-2"} {
		f := strings.Contains(strings.Join(fenced, ","), m)
		c.Status.Members = append(c.Status.Members, v1alpha1.MemberStatus{Name: m, Healthy: !f, Fenced: f})
	}
	if len(fenced) > 0 {
		c.Annotations = map[string]string{names.AnnotationFenceMembers: strings.Join(fenced, ",")}
	}
	return c
}

func fenceAnnotation(t *testing.T, cl client.Client) string {
	t.Helper()
	c := &v1alpha1.EtcdCluster{}
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "a"}, c); err != nil {
		t.Fatal(err)
	}
	v, ok := c.Annotations[names.AnnotationFenceMembers]
	if !ok {
		return "(none)"
	}
	return v
}

func TestFencePatch(t *testing.T) {
	if got, want := string(fencePatch("41", []string{"a-1", "a-2"})), `{"metadata":{"annotations":{"etcd.quorate.dev/fence-members":"a-1,a-2"},"resourceVersion":"41"}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := string(fencePatch("41", nil)), `{"metadata":{"annotations":{"etcd.quorate.dev/fence-members":null},"resourceVersion":"41"}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// fence adds the name to the annotation (keeping the others), and waits for the status.
func TestFenceWaitsForTheOperator(t *testing.T) {
	env, base, out, errOut := testEnv(t, []client.Object{fenceCluster("a-1")}, actAfterPatch(func(c *v1alpha1.EtcdCluster) {
		c.Status.Members[2].Fenced, c.Status.Members[2].Healthy = true, false
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionMembersFenced, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonMembersFenced, Message: "fenced: a-1, a-2"})
	}))
	// Two of three fenced is refused by the operator; here the operator's answer is played.
	if err := env.SetFenced(context.Background(), "a", "a-2", true, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := fenceAnnotation(t, base); got != "a-1,a-2" {
		t.Errorf("annotation %q, want a-1,a-2", got)
	}
	wantErr := "fencing a-2 of ns/a (etcd.quorate.dev/fence-members=a-1,a-2)\n" +
		"  waiting for the operator to fence a-2\n" +
		"  MembersFenced=True Fenced: fenced: a-1, a-2\n"
	if d := cmp.Diff(wantErr, errOut.String()); d != "" {
		t.Errorf("progress (-want +got):\n%s", d)
	}
	if d := cmp.Diff("a-2 is fenced: its etcd is stopped, its pod stays; `kubectl quorate unfence a a-2` starts it again\n", out.String()); d != "" {
		t.Errorf("output (-want +got):\n%s", d)
	}
}

// A fence the operator refuses ends the wait with its reason.
func TestFenceRefusedByTheOperator(t *testing.T) {
	refusal := "fencing a-2 is refused: it would leave 1 healthy, unfenced voter(s) of 3 (a-0), fewer than a quorum of 2; fenced already: a-1"
	env, _, _, _ := testEnv(t, []client.Object{fenceCluster("a-1")}, actAfterPatch(func(c *v1alpha1.EtcdCluster) {
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionMembersFenced, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonFenceRefused, Message: refusal})
	}))
	err := env.SetFenced(context.Background(), "a", "a-2", true, time.Minute)
	want := "the operator refuses to fence a-2: " + refusal + ". The request stays in the annotation etcd.quorate.dev/fence-members: withdraw it with `kubectl quorate unfence a a-2`"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// unfence removes the name (the annotation with it when it was the last) and waits.
func TestUnfence(t *testing.T) {
	env, base, out, _ := testEnv(t, []client.Object{fenceCluster("a-2")}, actAfterPatch(func(c *v1alpha1.EtcdCluster) {
		c.Status.Members[2].Fenced, c.Status.Members[2].Healthy = false, true
	}))
	if err := env.SetFenced(context.Background(), "a", "a-2", false, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := fenceAnnotation(t, base); got != "(none)" {
		t.Errorf("annotation %q, want it removed", got)
	}
	if d := cmp.Diff("a-2 is unfenced: its etcd answers again\n", out.String()); d != "" {
		t.Errorf("output (-want +got):\n%s", d)
	}
}

// A concurrent change of the cluster (the patch's resourceVersion no longer matches) is read
// again, and the other names it brought are kept.
func TestFenceRetriesOnConflict(t *testing.T) {
	conflicts := 0
	env, base, _, _ := testEnv(t, []client.Object{fenceCluster()}, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if conflicts == 0 {
				conflicts++
				// Someone fenced a-0 meanwhile.
				c := &v1alpha1.EtcdCluster{}
				if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), c); err != nil {
					return err
				}
				c.Status.Members[1].Fenced = true
				if err := cl.Status().Update(ctx, c); err != nil {
					return err
				}
				c.Annotations = map[string]string{names.AnnotationFenceMembers: "a-0"}
				if err := cl.Update(ctx, c); err != nil {
					return err
				}
				return apierrors.NewConflict(schema.GroupResource{Group: "etcd.quorate.dev", Resource: "etcdclusters"}, "a", nil)
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
	})
	// The status already shows a-1 fenced (set above): the wait ends at once.
	if err := env.SetFenced(context.Background(), "a", "a-1", true, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := fenceAnnotation(t, base); got != "a-0,a-1" {
		t.Errorf("annotation %q, want a-0,a-1", got)
	}
}

func TestFenceUnknownMember(t *testing.T) {
	env, _, _, _ := testEnv(t, []client.Object{fenceCluster()}, interceptor.Funcs{})
	err := env.SetFenced(context.Background(), "a", "a-7", true, time.Minute)
	if want := "a-7 is no member of a (its members: a-0, a-1, a-2)"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestRenderStatusFenced(t *testing.T) {
	st := &Status{Name: "a", Namespace: "ns", Replicas: 3, Ready: 2, Leader: "a-0", Members: []MemberRow{
		{Name: "a-0", Role: RoleLeader, Healthy: true},
		{Name: "a-1", Role: RoleFollower, Fenced: true, Pod: "a-1 (Running)"},
	}}
	var buf bytes.Buffer
	if err := RenderStatus(&buf, st, now, false); err != nil {
		t.Fatal(err)
	}
	want := `Cluster:     ns/a
Cluster ID:  -
Version:     -
Ready:       2/3
Leader:      a-0
Fenced:      a-1 (etcd stopped at your request; kubectl quorate unfence a MEMBER)
Claimed by:  -
Alarms:      none

Members:
  NAME  ID  ROLE      HEALTH   REVISION  DB SIZE  DB IN USE  VERSION  POD            NODE  VOLUME  RESTARTS
  a-0   -   leader    healthy  -         -        -          -        -              -     -       0
  a-1   -   follower  fenced   -         -        -          -        a-1 (Running)  -     -       0

Conditions:
  TYPE  STATUS  REASON  SINCE  MESSAGE

Last backup:  none
Last drill:   none
`
	if d := cmp.Diff(want, buf.String()); d != "" {
		t.Errorf("text (-want +got):\n%s", d)
	}
}

// fence and unfence take a cluster and a member, and nothing after --.
func TestFenceArguments(t *testing.T) {
	noEnv := func(KubeFlags, io.Writer, io.Writer) (*Env, error) {
		t.Fatal("the plugin connected despite bad arguments")
		return nil, nil
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fence", "a"}, "fence takes a CLUSTER and a MEMBER, got 1 arguments; see kubectl quorate help"},
		{[]string{"unfence", "a", "a-1", "a-2"}, "unfence takes a CLUSTER and a MEMBER, got 3 arguments; see kubectl quorate help"},
	} {
		var out, errOut bytes.Buffer
		if err := Run(context.Background(), tc.args, &out, &errOut, noEnv); err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.args, err, tc.want)
		}
	}
}

// unfence is done when the member answers again, or, when nothing starts it now (the cluster
// paused or hibernated) or it left the members (replaced), once it is no longer fenced.
func TestUnfenceState(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.EtcdCluster)
		done   bool
	}{
		{"still down", func(c *v1alpha1.EtcdCluster) {}, false},
		{"answers again", func(c *v1alpha1.EtcdCluster) { c.Status.Members[2].Healthy = true }, true},
		{"paused", func(c *v1alpha1.EtcdCluster) { c.Spec.Paused = true }, true},
		{"hibernated", func(c *v1alpha1.EtcdCluster) { c.Spec.Hibernate = true }, true},
		{"replaced", func(c *v1alpha1.EtcdCluster) { c.Status.Members = c.Status.Members[:2] }, true},
		{"still fenced, paused", func(c *v1alpha1.EtcdCluster) { c.Spec.Paused, c.Status.Members[2].Fenced = true, true }, false},
	} {
		c := fenceCluster()
		c.Status.Members[2].Healthy = false
		tc.change(c)
		if done, _, err := fenceState(c, "a-2", false); done != tc.done || err != nil {
			t.Errorf("%s: done %t (%v), want %t", tc.name, done, err, tc.done)
		}
	}
}

// unfence of a name neither asked for nor fenced is refused, and nothing is written.
func TestUnfenceOfAMemberNotFenced(t *testing.T) {
	env, base, _, _ := testEnv(t, []client.Object{fenceCluster("a-1")}, interceptor.Funcs{})
	err := env.SetFenced(context.Background(), "a", "a-9", false, time.Second)
	if want := "a-9 is not fenced in a (fenced or asked for: a-1)"; err == nil || err.Error() != want {
		t.Fatalf("unfence a-9: %v, want %s", err, want)
	}
	if got := fenceAnnotation(t, base); got != "a-1" {
		t.Errorf("annotation %q, want a-1 untouched", got)
	}
}

// On a paused cluster the request is written and the command returns at once, saying the
// operator acts once the cluster is resumed (it would wait for nothing otherwise).
func TestFenceOnAPausedCluster(t *testing.T) {
	c := fenceCluster()
	c.Spec.Paused = true
	env, base, out, _ := testEnv(t, []client.Object{c}, interceptor.Funcs{})
	if err := env.SetFenced(context.Background(), "a", "a-2", true, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := fenceAnnotation(t, base); got != "a-2" {
		t.Errorf("annotation %q, want a-2", got)
	}
	if d := cmp.Diff("a is paused (spec.paused): the operator fences a-2 once it is resumed (`kubectl quorate resume a`)\n", out.String()); d != "" {
		t.Errorf("output (-want +got):\n%s", d)
	}
}
