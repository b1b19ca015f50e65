package apitest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// hibernate and wake against a real API server: the CRD takes spec.hibernate, each patch is a
// new generation, and the plugin waits for the Hibernated condition of that generation.
func TestHibernateWakeAgainstAPIServer(t *testing.T) {
	cl, ns := apiServer(t)
	ctx := context.Background()
	c := newCluster(ns, "a")
	if err := cl.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(c)
	env, _, _ := realEnv(t, ns)
	hibernated := func(status metav1.ConditionStatus, reason string) func(*v1alpha1.EtcdCluster) {
		return func(c *v1alpha1.EtcdCluster) {
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionHibernated, Status: status, Reason: reason, Message: "m", ObservedGeneration: c.Generation})
		}
	}

	op := playOperator(t, cl, key, func(c *v1alpha1.EtcdCluster) bool { return c.Spec.Hibernate }, hibernated(metav1.ConditionTrue, v1alpha1.ReasonHibernated))
	if err := env.SetHibernate(ctx, "a", true, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := <-op; err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	if !c.Spec.Hibernate || c.Generation != 2 {
		t.Errorf("after hibernate: spec.hibernate %t, generation %d; want true, 2", c.Spec.Hibernate, c.Generation)
	}

	op = playOperator(t, cl, key, func(c *v1alpha1.EtcdCluster) bool { return !c.Spec.Hibernate }, hibernated(metav1.ConditionFalse, v1alpha1.ReasonAwake))
	if err := env.SetHibernate(ctx, "a", false, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := <-op; err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.Hibernate || c.Generation != 3 {
		t.Errorf("after wake: spec.hibernate %t, generation %d; want false, 3", c.Spec.Hibernate, c.Generation)
	}
}
