package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
)

// spec.hibernate: the member pods stop one at a time, followers first and the leader last; the
// volumes, Secrets and membership stay, and the conditions say the outage was asked for. Set
// back to false, the members come back from their volumes under the same names, as members
// that have run (never bootstrapped again), with the same cluster ID.
func TestHibernateAndWake(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	op := startOperator(t, ns, fake)
	before := bootstrap(t, ns, "hib", 3, fake)
	fake.SetLeader("hib-1")
	waitFor(t, ns, "hib", "hib-1 to lead", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.Leader != "hib-1" {
			return fmt.Errorf("leader %q", c.Status.Leader)
		}
		return nil
	})
	secrets := objectNames(t, ns, &corev1.SecretList{})
	allSecrets := func() []string {
		var list corev1.SecretList
		if err := k8s.List(context.Background(), &list); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range list.Items {
			if s.Namespace == ns {
				out = append(out, s.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	keptSecrets := allSecrets()
	op.writes.reset()

	patchCluster(t, ns, "hib", func(c *v1alpha1.EtcdCluster) { c.Spec.Hibernate = true })
	wantCondition(t, ns, "hib", cnd(v1alpha1.ConditionHibernated, metav1.ConditionTrue, v1alpha1.ReasonHibernated,
		"every member pod is stopped; the volumes, Secrets, Services and membership are kept; set spec.hibernate to false to wake the cluster"))
	c := wantCondition(t, ns, "hib", cnd(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonHibernated,
		"hibernating (spec.hibernate): the member pods are stopped, as asked; clients cannot reach the cluster until spec.hibernate is set to false"))
	if got := condition(c, v1alpha1.ConditionDegraded); got.Status != metav1.ConditionFalse || got.Reason != v1alpha1.ReasonHibernated {
		t.Errorf("Degraded while hibernated = %s/%s %q, want False/Hibernated", got.Status, got.Reason, got.Message)
	}
	if got := condition(c, v1alpha1.ConditionProgressing); got.Status != metav1.ConditionFalse || got.Reason != v1alpha1.ReasonHibernated {
		t.Errorf("Progressing while hibernated = %s/%s %q, want False/Hibernated", got.Status, got.Reason, got.Message)
	}
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("pods left while hibernated: %v", pods)
	}
	if pvcs := objectNames(t, ns, &corev1.PersistentVolumeClaimList{}); !slices.Equal(pvcs, []string{"hib-0", "hib-1", "hib-2"}) {
		t.Fatalf("PVCs while hibernated: %v", pvcs)
	}
	if got := objectNames(t, ns, &corev1.SecretList{}); !slices.Equal(got, secrets) {
		t.Errorf("member Secrets while hibernated: %v, before %v", got, secrets)
	}
	if got := allSecrets(); !slices.Equal(got, keptSecrets) {
		t.Errorf("Secrets while hibernated: %v, before %v", got, keptSecrets)
	}
	var deletes, others []string
	for _, w := range op.writes.snapshot() {
		switch {
		case strings.HasPrefix(w, "delete "):
			deletes = append(deletes, w)
		case strings.HasPrefix(w, "create "):
			others = append(others, w)
		}
	}
	if want := []string{"delete *v1.Pod hib-0", "delete *v1.Pod hib-2", "delete *v1.Pod hib-1"}; !slices.Equal(deletes, want) {
		t.Errorf("deletes while hibernating: %v, want %v (followers first, the leader last, nothing else)", deletes, want)
	}
	if len(others) != 0 {
		t.Errorf("created while hibernating: %v", others)
	}
	if calls := membershipCalls(fake); len(calls) != 0 {
		t.Errorf("membership changed while hibernating: %v", calls)
	}
	// Other spec changes wait while hibernated.
	patchReplicas(t, ns, "hib", 5)
	waitFor(t, ns, "hib", "the new generation observed", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.ObservedGeneration != c.Generation {
			return fmt.Errorf("observedGeneration %d of %d", c.Status.ObservedGeneration, c.Generation)
		}
		return nil
	})
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("pods created while hibernated: %v", pods)
	}
	patchReplicas(t, ns, "hib", 3)

	patchCluster(t, ns, "hib", func(c *v1alpha1.EtcdCluster) { c.Spec.Hibernate = false })
	wantCondition(t, ns, "hib", cnd(v1alpha1.ConditionHibernated, metav1.ConditionFalse, v1alpha1.ReasonAwake,
		"the cluster woke from hibernation: a quorum of members answers, with a leader"))
	after := waitFor(t, ns, "hib", "the woken cluster to settle", settled(3))
	if after.Status.ClusterID != before.Status.ClusterID {
		t.Errorf("cluster ID %q after waking, want %q", after.Status.ClusterID, before.Status.ClusterID)
	}
	for _, m := range []string{"hib-0", "hib-1", "hib-2"} {
		args := podArgs(t, ns, m)
		if !slices.Contains(args, "--require-data=true") || slices.Contains(args, "--initial-cluster-state=new") {
			t.Errorf("woken member %s does not start as a member that has run: %v", m, args)
		}
	}
	if calls := membershipCalls(fake); len(calls) != 0 {
		t.Errorf("membership changed across hibernation: %v", calls)
	}
	assertEvent(t, ns, v1alpha1.ReasonAwake, "woke from hibernation")
}

// membershipCalls are the changes of etcd's membership the operator asked the fake for.
func membershipCalls(f *etcd.Fake) []string {
	return slices.DeleteFunc(f.Calls(), func(c string) bool {
		return !strings.HasPrefix(c, "AddLearner ") && !strings.HasPrefix(c, "Promote ") && !strings.HasPrefix(c, "Remove ")
	})
}
