package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// timeout bounds every wait: generous, since make test runs beside CI's image builds on two cores.
const timeout = 2 * time.Minute

// kubelet plays the node and kube-controller-manager for one namespace: it gives pods an IP,
// completes the deletion of terminating pods (as a kubelet does once their containers stopped),
// and lets a terminating PVC go once no pod uses it (the PVC-protection controller).
func kubelet(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var ip atomic.Int32
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var pods corev1.PodList
			if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err == nil {
				for i := range pods.Items {
					p := &pods.Items[i]
					if !p.DeletionTimestamp.IsZero() {
						// A pod whose deletion was graceful stays Terminating until its kubelet
						// has stopped it and deletes it for good.
						_ = k8s.Delete(ctx, p, client.GracePeriodSeconds(0))
						continue
					}
					if p.Status.PodIP == "" {
						n := ip.Add(1)
						p.Status.PodIP = fmt.Sprintf("10.0.%d.%d", n/250, n%250+1)
						p.Status.Phase = corev1.PodRunning
						_ = k8s.Status().Update(ctx, p)
					}
				}
			}
			var pvcs corev1.PersistentVolumeClaimList
			if err := k8s.List(ctx, &pvcs, client.InNamespace(ns)); err == nil {
				for i := range pvcs.Items {
					c := &pvcs.Items[i]
					if c.DeletionTimestamp.IsZero() || len(c.Finalizers) == 0 {
						continue
					}
					inUse := slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.Name == c.Name })
					if !inUse {
						c.Finalizers = nil
						_ = k8s.Update(ctx, c)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func newCluster(ns, name string, replicas int32) *v1alpha1.EtcdCluster {
	return &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.EtcdClusterSpec{Replicas: replicas, Version: "3.6.16",
			Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}},
	}
}

func getCluster(t *testing.T, ns, name string) *v1alpha1.EtcdCluster {
	t.Helper()
	c := &v1alpha1.EtcdCluster{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// wantCondition waits until the cluster's condition t equals want (apart from its time and
// generation) and returns the cluster.
func wantCondition(t *testing.T, ns, name string, want metav1.Condition) *v1alpha1.EtcdCluster {
	t.Helper()
	return waitFor(t, ns, name, fmt.Sprintf("%s=%s/%s", want.Type, want.Status, want.Reason), func(c *v1alpha1.EtcdCluster) error {
		got := condition(c, want.Type)
		got.LastTransitionTime, got.ObservedGeneration = metav1.Time{}, 0
		if got != want {
			return fmt.Errorf("%s is\n %+v\nwant\n %+v", want.Type, got, want)
		}
		return nil
	})
}

// patchCluster changes a cluster's spec.
func patchCluster(t *testing.T, ns, name string, change func(*v1alpha1.EtcdCluster)) {
	t.Helper()
	c := getCluster(t, ns, name)
	patch := client.MergeFrom(c.DeepCopy())
	change(c)
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
}

func condition(c *v1alpha1.EtcdCluster, t string) metav1.Condition {
	if cond := meta.FindStatusCondition(c.Status.Conditions, t); cond != nil {
		return *cond
	}
	return metav1.Condition{}
}

// waitFor polls the cluster until check returns nil.
func waitFor(t *testing.T, ns, name, what string, check func(c *v1alpha1.EtcdCluster) error) *v1alpha1.EtcdCluster {
	t.Helper()
	var c *v1alpha1.EtcdCluster
	eventually(t, timeout, what, func() error {
		c = &v1alpha1.EtcdCluster{}
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, c); err != nil {
			return err
		}
		return check(c)
	})
	return c
}

// settled: observed, Available, not Progressing, with want healthy voters.
func settled(want int32) func(c *v1alpha1.EtcdCluster) error {
	return func(c *v1alpha1.EtcdCluster) error {
		if c.Status.ObservedGeneration != c.Generation {
			return fmt.Errorf("observedGeneration %d of %d", c.Status.ObservedGeneration, c.Generation)
		}
		if a := condition(c, v1alpha1.ConditionAvailable); a.Status != metav1.ConditionTrue {
			return fmt.Errorf("Available=%s %s", a.Status, a.Message)
		}
		if p := condition(c, v1alpha1.ConditionProgressing); p.Status != metav1.ConditionFalse {
			return fmt.Errorf("Progressing=%s %s: %s", p.Status, p.Reason, p.Message)
		}
		if c.Status.ReadyMembers != want || c.Status.Replicas != want || len(c.Status.Members) != int(want) {
			return fmt.Errorf("ready %d, replicas %d, %d members; want %d", c.Status.ReadyMembers, c.Status.Replicas, len(c.Status.Members), want)
		}
		return nil
	}
}

func podArgs(t *testing.T, ns, name string) []string {
	t.Helper()
	p := &corev1.Pod{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p.Spec.Containers[0].Command
}

func objectNames(t *testing.T, ns string, list client.ObjectList) []string {
	t.Helper()
	if err := k8s.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{names.LabelComponent: names.ComponentMember}); err != nil {
		t.Fatal(err)
	}
	var out []string
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if co := o.(client.Object); co.GetDeletionTimestamp().IsZero() {
			out = append(out, co.GetName())
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// bootstrap creates a cluster and plays the members forming it.
func bootstrap(t *testing.T, ns, name string, replicas int32, fake *etcd.Fake) *v1alpha1.EtcdCluster {
	t.Helper()
	return bootstrapCluster(t, newCluster(ns, name, replicas), fake)
}

// bootstrapCluster creates c and plays its members forming the cluster.
func bootstrapCluster(t *testing.T, c *v1alpha1.EtcdCluster, fake *etcd.Fake) *v1alpha1.EtcdCluster {
	t.Helper()
	ctx := context.Background()
	ns, name, replicas := c.Namespace, c.Name, c.Spec.Replicas
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	var members, urls []string
	for i := 0; i < int(replicas); i++ {
		m := names.Member(name, i)
		members, urls = append(members, m), append(urls, names.PeerURL(name, ns, m, true))
	}
	eventually(t, timeout, "bootstrap pods with IPs", func() error {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return err
		}
		ready := 0
		for _, p := range pods.Items {
			if p.Status.PodIP != "" {
				ready++
			}
		}
		if ready != int(replicas) {
			return fmt.Errorf("%d of %d pods have an IP", ready, replicas)
		}
		return nil
	})
	fake.Bootstrap(0xc1a55, members, urls)
	return waitFor(t, ns, name, "the bootstrapped cluster to settle", settled(replicas))
}

func memberID(t *testing.T, f *etcd.Fake, name string) uint64 {
	t.Helper()
	for _, m := range f.Members() {
		if m.Name == name {
			return m.ID
		}
	}
	return 0
}

func patchReplicas(t *testing.T, ns, name string, n int32) {
	t.Helper()
	c := getCluster(t, ns, name)
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Replicas = n
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
}

func assertOwned(t *testing.T, obj client.Object, c *v1alpha1.EtcdCluster) {
	t.Helper()
	switch obj.(type) {
	case *corev1.PersistentVolumeClaim, *corev1.Secret:
		// Member volumes and certificates are retained by default: they name their cluster
		// without an owner reference, so that deleting the EtcdCluster keeps them.
		if len(obj.GetOwnerReferences()) != 0 || obj.GetAnnotations()[names.AnnotationOwnerUID] != string(c.UID) || obj.GetLabels()[names.LabelRetention] != v1alpha1.VolumeRetain {
			t.Errorf("%T %s: owner references %+v, annotations %v, labels %v", obj, obj.GetName(), obj.GetOwnerReferences(), obj.GetAnnotations(), obj.GetLabels())
		}
		return
	}
	refs := obj.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != c.UID || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("%T %s owner references = %+v", obj, obj.GetName(), refs)
	}
}

// assertNoWrites lets several passes run on a settled cluster and asserts none of them wrote.
func assertNoWrites(t *testing.T, op *operator) {
	t.Helper()
	op.writes.reset()
	start := op.passes.Load()
	eventually(t, timeout, "5 more reconcile passes", func() error {
		if n := op.passes.Load() - start; n < 5 {
			return fmt.Errorf("%d passes", n)
		}
		return nil
	})
	// The only write of a settled cluster is the renewal of its claim, once per half term.
	w := slices.DeleteFunc(op.writes.reset(), func(s string) bool { return strings.HasPrefix(s, "update *v1.Lease ") })
	if len(w) != 0 {
		t.Fatalf("steady state wrote to the API server: %v", w)
	}
}

func assertEvent(t *testing.T, ns, reason, contains string) {
	t.Helper()
	eventually(t, timeout, "event "+reason, func() error {
		var evs corev1.EventList
		if err := k8s.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == reason && strings.Contains(e.Message, contains) {
				return nil
			}
		}
		var seen []string
		for _, e := range evs.Items {
			seen = append(seen, fmt.Sprintf("%s×%d", e.Reason, e.Count))
		}
		return fmt.Errorf("no %s event mentioning %q among %d events: %s", reason, contains, len(evs.Items), strings.Join(seen, ", "))
	})
}

// describeObjects lists every pod and PVC of ns with what keeps it (for failure messages).
func describeObjects(t *testing.T, ns string) string {
	var out []string
	var pods corev1.PodList
	var pvcs corev1.PersistentVolumeClaimList
	if err := k8s.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	if err := k8s.List(context.Background(), &pvcs, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		out = append(out, fmt.Sprintf("pod %s deleted=%v finalizers=%v owners=%d", p.Name, p.DeletionTimestamp != nil, p.Finalizers, len(p.OwnerReferences)))
	}
	for _, p := range pvcs.Items {
		out = append(out, fmt.Sprintf("pvc %s deleted=%v finalizers=%v owners=%d labels=%v", p.Name, p.DeletionTimestamp != nil, p.Finalizers, len(p.OwnerReferences), p.Labels))
	}
	return strings.Join(out, "; ")
}

// metaItems returns the items of a list as client.Objects.
func metaItems(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	err := meta.EachListItem(list, func(o runtime.Object) error {
		out = append(out, o.(client.Object))
		return nil
	})
	return out, err
}
