package upgradegate

import (
	"context"
	"testing"

	"github.com/operator-framework/operator-lib/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

func gateCluster(name, operator string, paused bool, conds ...metav1.Condition) *v1alpha1.EtcdCluster {
	c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name}}
	c.Spec.Paused = paused
	c.Status.Operator = operator
	c.Status.Conditions = conds
	return c
}

func gateCond(t, reason string, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason}
}

func TestCondition(t *testing.T) {
	const me, other = "quorate-system/quorate-operator", "team/quorate-operator"
	settled := gateCond(v1alpha1.ConditionProgressing, v1alpha1.ReasonSettled, metav1.ConditionFalse)
	healthy := gateCond(v1alpha1.ConditionDegraded, v1alpha1.ReasonAllMembersHealthy, metav1.ConditionFalse)
	ok := metav1.Condition{Type: "Upgradeable", Status: metav1.ConditionTrue, Reason: ReasonSettled, Message: "no etcd cluster of this install is changing"}
	for _, tc := range []struct {
		name     string
		clusters []*v1alpha1.EtcdCluster
		want     metav1.Condition
	}{
		{"no clusters", nil, ok},
		{"settled", []*v1alpha1.EtcdCluster{gateCluster("a", me, false, settled, healthy)}, ok},
		{"scaling and a quorum at risk", []*v1alpha1.EtcdCluster{
			gateCluster("b", me, false, gateCond(v1alpha1.ConditionProgressing, v1alpha1.ReasonScaling, metav1.ConditionTrue), healthy),
			gateCluster("a", me, false, settled, gateCond(v1alpha1.ConditionDegraded, v1alpha1.ReasonQuorumAtRisk, metav1.ConditionTrue)),
			gateCluster("c", me, false, gateCond(v1alpha1.ConditionProgressing, v1alpha1.ReasonReplacingMember, metav1.ConditionTrue), gateCond(v1alpha1.ConditionDegraded, v1alpha1.ReasonQuorumAtRisk, metav1.ConditionTrue)),
		}, metav1.Condition{Type: "Upgradeable", Status: metav1.ConditionFalse, Reason: ReasonChanging,
			Message: "etcd clusters are changing: db/a (QuorumAtRisk); db/b (Scaling); db/c (ReplacingMember, QuorumAtRisk); OLM upgrades the operator once they settle"}},
		{"another install's cluster, a paused one and a stuck rollout do not hold the upgrade", []*v1alpha1.EtcdCluster{
			gateCluster("a", other, false, gateCond(v1alpha1.ConditionProgressing, v1alpha1.ReasonScaling, metav1.ConditionTrue)),
			gateCluster("b", me, true, gateCond(v1alpha1.ConditionProgressing, v1alpha1.ReasonRollingUpdate, metav1.ConditionTrue)),
			gateCluster("c", me, false, gateCond(v1alpha1.ConditionProgressing, v1alpha1.ReasonRolloutStuck, metav1.ConditionTrue)),
		}, ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var list []v1alpha1.EtcdCluster
			for _, c := range tc.clusters {
				list = append(list, *c)
			}
			if got := Condition(list, me); got != tc.want {
				t.Errorf("got\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

// recordingCondition is an operator-lib Condition that remembers what was set.
type recordingCondition struct {
	cur  *metav1.Condition
	sets int
}

func (r *recordingCondition) Get(context.Context) (*metav1.Condition, error) {
	if r.cur == nil {
		return nil, conditions.ErrNoOperatorCondition
	}
	c := *r.cur
	return &c, nil
}

func (r *recordingCondition) Set(_ context.Context, status metav1.ConditionStatus, opts ...conditions.Option) error {
	c := metav1.Condition{Type: "Upgradeable", Status: status}
	for _, o := range opts {
		o(&c)
	}
	r.cur, r.sets = &c, r.sets+1
	return nil
}

// The gate writes when the answer changes, and only then.
func TestGateWritesOnChange(t *testing.T) {
	ctx := context.Background()
	const me = "quorate-system/quorate-operator"
	scaling := gateCluster("a", me, false, gateCond(v1alpha1.ConditionProgressing, v1alpha1.ReasonScaling, metav1.ConditionTrue))
	cl := fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(scaling).WithStatusSubresource(&v1alpha1.EtcdCluster{}).Build()
	rc := &recordingCondition{}
	g := &Gate{Reader: cl, Condition: rc, Identity: me}
	for i := 0; i < 3; i++ {
		if err := g.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := Condition([]v1alpha1.EtcdCluster{*scaling}, me)
	if rc.sets != 1 || *rc.cur != want {
		t.Fatalf("after 3 syncs while scaling: %d writes, condition %+v; want 1 write of %+v", rc.sets, rc.cur, want)
	}
	scaling.Status.Conditions = []metav1.Condition{gateCond(v1alpha1.ConditionProgressing, v1alpha1.ReasonSettled, metav1.ConditionFalse)}
	if err := cl.Status().Update(ctx, scaling); err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if rc.sets != 2 || rc.cur.Status != metav1.ConditionTrue || rc.cur.Reason != ReasonSettled {
		t.Fatalf("after the cluster settled: %d writes, condition %+v", rc.sets, rc.cur)
	}
	// A new replica (no memory) finds the condition already right and does not write.
	g2 := &Gate{Reader: cl, Condition: rc, Identity: me}
	if err := g2.Sync(ctx); err != nil || rc.sets != 2 {
		t.Fatalf("a new gate rewrote an up-to-date condition: %d writes, %v", rc.sets, err)
	}
}
