package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestSplitBrainGuardStopsMembershipChanges(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	op := startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "sb", 3, fake)

	fake.SetForeignClusterID("sb-2", 0xbad)
	patchReplicas(t, ns, "sb", 5)
	c := waitFor(t, ns, "sb", "Degraded ClusterIDMismatch", func(c *v1alpha1.EtcdCluster) error {
		d := condition(c, v1alpha1.ConditionDegraded)
		if d.Status != metav1.ConditionTrue || d.Reason != v1alpha1.ReasonClusterIDMismatch {
			return fmt.Errorf("Degraded=%s/%s", d.Status, d.Reason)
		}
		return nil
	})
	if msg := condition(c, v1alpha1.ConditionDegraded).Message; !strings.Contains(msg, "sb-2 reports cluster ID bad") || !strings.Contains(msg, "membership changes are stopped") {
		t.Errorf("Degraded message does not say what happened and what stops: %q", msg)
	}
	assertEvent(t, ns, v1alpha1.ReasonClusterIDMismatch, "sb-2")
	start := op.passes.Load()
	eventually(t, timeout, "more passes while halted", func() error {
		if op.passes.Load()-start < 5 {
			return fmt.Errorf("waiting")
		}
		return nil
	})
	if calls := fake.Calls(); len(calls) != 0 {
		t.Fatalf("membership changed despite the cluster-ID mismatch: %v", calls)
	}
}

// TestOperatorKilledBetweenSteps stops the operator after every few writes while it scales a
// cluster up and down, starting a fresh one (empty cache, no expectations) each time. Whatever
// step it was killed after, the result and the membership changes must be the same as without
// crashes: no member created twice, no member removed twice.
func TestOperatorKilledBetweenSteps(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	kubelet(t, ns)
	op := startOperator(t, ns, fake)
	bootstrap(t, ns, "crash", 3, fake)
	op.stop()

	crashes := 0
	converge := func(want int32) {
		for k := 1; ; k = k%3 + 1 {
			op := startOperator(t, ns, fake)
			var c *v1alpha1.EtcdCluster
			eventually(t, timeout, fmt.Sprintf("%d writes or convergence", k), func() error {
				c = getCluster(t, ns, "crash")
				if settled(want)(c) == nil && c.Spec.Replicas == want {
					return nil
				}
				if n := len(op.writes.snapshot()); n >= k {
					return nil
				}
				return fmt.Errorf("running")
			})
			op.stop()
			if settled(want)(getCluster(t, ns, "crash")) == nil && len(objectNames(t, ns, &corev1.PodList{})) == int(want) {
				return
			}
			crashes++
		}
	}
	patchReplicas(t, ns, "crash", 5)
	converge(5)
	patchReplicas(t, ns, "crash", 3)
	converge(3)
	if crashes < 5 {
		t.Fatalf("only %d crashes happened mid-operation; the test did not exercise restarts", crashes)
	}
	u := "https://crash-%d.crash-peer." + ns + ".svc:2380"
	want := []string{fmt.Sprintf("AddLearner "+u, 3), "Promote crash-3", fmt.Sprintf("AddLearner "+u, 4), "Promote crash-4", "Remove crash-4", "Remove crash-3"}
	if got := fake.Calls(); !slices.Equal(got, want) {
		t.Fatalf("after %d crashes, membership changes were\n %q\nwant\n %q", crashes, got, want)
	}
	op = startOperator(t, ns, fake)
	eventually(t, timeout, "objects of removed members to be deleted", func() error {
		if got := objectNames(t, ns, &corev1.PersistentVolumeClaimList{}); len(got) != 3 {
			c := getCluster(t, ns, "crash")
			return fmt.Errorf("PVCs %v; Progressing: %s; members in etcd: %v; operator passes %d; objects: %s", got, condition(c, v1alpha1.ConditionProgressing).Message, fake.Members(), op.passes.Load(), describeObjects(t, ns))
		}
		return nil
	})
	t.Logf("converged through %d operator crashes", crashes)
}

func TestStatusLossDoesNotBootstrapAgain(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	op := startOperator(t, ns, fake)
	kubelet(t, ns)
	c := bootstrap(t, ns, "lost", 3, fake)
	eventually(t, timeout, "PVC annotations", func() error {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "lost-2"}, pvc); err != nil {
			return err
		}
		if pvc.Annotations[names.AnnotationClusterID] == "" {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	op.stop()

	// Status is wiped (a restore from a backup without status) and every member is down.
	c.Status = v1alpha1.EtcdClusterStatus{}
	if err := k8s.Status().Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"lost-0", "lost-1", "lost-2"} {
		fake.SetDown(m, true)
	}
	startOperator(t, ns, fake)
	waitFor(t, ns, "lost", "the cluster ID recovered from the volumes", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.ClusterID != "c1a55" {
			return fmt.Errorf("clusterID %q", c.Status.ClusterID)
		}
		return nil
	})
	assertEvent(t, ns, v1alpha1.EventClusterIDRecovered, "c1a55")
	for _, m := range []string{"lost-0", "lost-1", "lost-2"} {
		if slices.Contains(podArgs(t, ns, m), "--initial-cluster-state=new") && !slices.Contains(podArgs(t, ns, m), "--require-data=false") {
			t.Errorf("pod %s was recreated for a second bootstrap", m)
		}
	}
	for _, m := range []string{"lost-0", "lost-1", "lost-2"} {
		fake.SetDown(m, false)
	}
	waitFor(t, ns, "lost", "the cluster back", settled(3))
	if calls := fake.Calls(); len(calls) != 0 {
		t.Fatalf("membership changed: %v", calls)
	}
}
