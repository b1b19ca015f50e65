package plugin

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

func hibernatedCondition(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionHibernated, Status: status, Reason: reason, Message: msg, ObservedGeneration: 4}
}

func TestHibernatePatch(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{string(hibernatePatch(true)), `{"spec":{"hibernate":true}}`},
		{string(hibernatePatch(false)), `{"spec":{"hibernate":false}}`},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}

func TestHibernateWaitsForTheOperator(t *testing.T) {
	c := cluster("a")
	c.Status.ClusterID = "c1"
	env, base, out, errOut := testEnv(t, []client.Object{c}, actAfterPatch(func(c *v1alpha1.EtcdCluster) {
		meta.SetStatusCondition(&c.Status.Conditions, hibernatedCondition(metav1.ConditionFalse, v1alpha1.ReasonHibernating, "2 left"))
	}))
	err := env.SetHibernate(context.Background(), "a", true, 30*time.Millisecond)
	want := "hibernating a: not done after 30ms (last: Hibernated=False Hibernating: 2 left); the request stays in place and the operator keeps working on it: look again with `kubectl quorate status`, or wait longer with --timeout"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	got := &v1alpha1.EtcdCluster{}
	if err := base.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "a"}, got); err != nil {
		t.Fatal(err)
	}
	if !got.Spec.Hibernate {
		t.Error("spec.hibernate was not set")
	}
	meta.SetStatusCondition(&got.Status.Conditions, hibernatedCondition(metav1.ConditionTrue, v1alpha1.ReasonHibernated, "every member pod is stopped"))
	if err := base.Status().Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if err := env.SetHibernate(context.Background(), "a", true, time.Minute); err != nil {
		t.Fatal(err)
	}
	wantErr := "hibernating ns/a (spec.hibernate=true, generation 4)\n" +
		"  Hibernated=True Hibernated: every member pod is stopped\n"
	if diff := cmp.Diff(wantErr, errOut.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("a is hibernated: every member pod is stopped, its volumes and Secrets are kept; `kubectl quorate wake a` brings it back\n", out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestWakeWaitsForQuorum(t *testing.T) {
	c := cluster("a")
	c.Spec.Hibernate = true
	c.Status.ClusterID = "c1"
	c.Status.Conditions = append(c.Status.Conditions, hibernatedCondition(metav1.ConditionTrue, v1alpha1.ReasonHibernated, "every member pod is stopped"))
	env, base, out, errOut := testEnv(t, []client.Object{c}, actAfterPatch(func(c *v1alpha1.EtcdCluster) {
		meta.SetStatusCondition(&c.Status.Conditions, hibernatedCondition(metav1.ConditionFalse, v1alpha1.ReasonAwake, "a quorum answers"))
	}))
	if err := env.SetHibernate(context.Background(), "a", false, time.Minute); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.EtcdCluster{}
	if err := base.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "a"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Hibernate {
		t.Error("spec.hibernate is still true")
	}
	wantErr := "waking ns/a (spec.hibernate=false, generation 4)\n" +
		"  Hibernated=True Hibernated: every member pod is stopped\n" +
		"  Hibernated=False Awake: a quorum answers\n"
	if diff := cmp.Diff(wantErr, errOut.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("a is awake: its members restarted from their volumes with cluster ID c1\n", out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestWakeOfAClusterNeverHibernated(t *testing.T) {
	env, _, out, _ := testEnv(t, []client.Object{cluster("a")}, interceptor.Funcs{})
	if err := env.SetHibernate(context.Background(), "a", false, time.Minute); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("a is not hibernated (spec.hibernate is false): nothing to wake\n", out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestHibernationState(t *testing.T) {
	base := cluster("a")
	for _, tc := range []struct {
		name      string
		cond      *metav1.Condition
		gen       int64
		hibernate bool
		done      bool
		progress  string
	}{
		{"no condition yet", nil, 4, true, false, "waiting for the operator to observe generation 4 (status describes 4)"},
		{"old generation", ptrTo(hibernatedCondition(metav1.ConditionTrue, v1alpha1.ReasonHibernated, "m")), 5, true, false, "waiting for the operator to observe generation 5 (status describes 4)"},
		{"hibernating", ptrTo(hibernatedCondition(metav1.ConditionFalse, v1alpha1.ReasonHibernating, "m")), 4, true, false, "Hibernated=False Hibernating: m"},
		{"hibernated", ptrTo(hibernatedCondition(metav1.ConditionTrue, v1alpha1.ReasonHibernated, "m")), 4, true, true, "Hibernated=True Hibernated: m"},
		{"waking", ptrTo(hibernatedCondition(metav1.ConditionFalse, v1alpha1.ReasonWaking, "m")), 4, false, false, "Hibernated=False Waking: m"},
		{"still hibernated", ptrTo(hibernatedCondition(metav1.ConditionTrue, v1alpha1.ReasonHibernated, "m")), 4, false, false, "Hibernated=True Hibernated: m"},
		{"awake", ptrTo(hibernatedCondition(metav1.ConditionFalse, v1alpha1.ReasonAwake, "m")), 4, false, true, "Hibernated=False Awake: m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base.DeepCopy()
			if tc.cond != nil {
				c.Status.Conditions = append(c.Status.Conditions, *tc.cond)
			}
			done, progress := hibernationState(c, tc.gen, tc.hibernate)
			if done != tc.done || progress != tc.progress {
				t.Errorf("got %t %q, want %t %q", done, progress, tc.done, tc.progress)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestStatusShowsHibernation(t *testing.T) {
	c := cluster("a")
	c.Spec.Hibernate = true
	c.Status.Conditions = append(c.Status.Conditions, hibernatedCondition(metav1.ConditionTrue, v1alpha1.ReasonHibernated, "every member pod is stopped"))
	env, _, _, _ := testEnv(t, []client.Object{c}, interceptor.Funcs{})
	st, err := env.GatherStatus(context.Background(), "a", false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hibernation != v1alpha1.ReasonHibernated {
		t.Fatalf("hibernation = %q, want Hibernated", st.Hibernation)
	}
	var buf bytes.Buffer
	if err := RenderStatus(&buf, &Status{Name: "a", Namespace: "ns", Replicas: 3, Hibernation: st.Hibernation}, now, false); err != nil {
		t.Fatal(err)
	}
	want := "Cluster:      ns/a\nCluster ID:   -\nVersion:      -\nReady:        0/3\nLeader:       -\n" +
		"Hibernation:  hibernated (spec.hibernate): every member pod is stopped; `kubectl quorate wake` restarts them\n" +
		"Claimed by:   -\nAlarms:       none\n\n" +
		"Members:\n  NAME  ID  ROLE  HEALTH  REVISION  DB SIZE  DB IN USE  VERSION  POD  NODE  VOLUME  RESTARTS\n\n" +
		"Conditions:\n  TYPE  STATUS  REASON  SINCE  MESSAGE\n\n" +
		"Last backup:  none\nLast drill:   none\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
}
