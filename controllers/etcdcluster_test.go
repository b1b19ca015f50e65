package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

const timeout = 60 * time.Second

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
	ctx := context.Background()
	if err := k8s.Create(ctx, newCluster(ns, name, replicas)); err != nil {
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

func TestBootstrapScaleAndReplace(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fake := etcd.NewFake("3.6.16")
	op := startOperator(t, ns, fake)
	kubelet(t, ns)

	if err := k8s.Create(ctx, newCluster(ns, "demo", 3)); err != nil {
		t.Fatal(err)
	}
	eventually(t, timeout, "three bootstrap members", func() error {
		if got := objectNames(t, ns, &corev1.PodList{}); !slices.Equal(got, []string{"demo-0", "demo-1", "demo-2"}) {
			return fmt.Errorf("pods %v", got)
		}
		if got := objectNames(t, ns, &corev1.PersistentVolumeClaimList{}); len(got) != 3 {
			return fmt.Errorf("PVCs %v", got)
		}
		return nil
	})
	// The members have not formed a cluster (the fake etcd waits for Bootstrap below): once the
	// operator has written its status, Available says so.
	c := waitFor(t, ns, "demo", "Available=False/Bootstrapping before the members form a cluster", func(c *v1alpha1.EtcdCluster) error {
		if cond := condition(c, v1alpha1.ConditionAvailable); cond.Status != metav1.ConditionFalse || cond.Reason != "Bootstrapping" {
			return fmt.Errorf("Available = %s/%s", cond.Status, cond.Reason)
		}
		return nil
	})
	args := podArgs(t, ns, "demo-0")
	for _, want := range []string{"--initial-cluster-state=new", "--initial-cluster-token=" + string(c.UID),
		"--initial-cluster=demo-0=https://demo-0.demo-peer." + ns + ".svc:2380,demo-1=https://demo-1.demo-peer." + ns + ".svc:2380,demo-2=https://demo-2.demo-peer." + ns + ".svc:2380"} {
		if !slices.Contains(args, want) {
			t.Errorf("bootstrap pod lacks %s", want)
		}
	}

	// Every object is owned by the cluster, so deleting it deletes them.
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.PersistentVolumeClaim{}} {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "demo-1"}, obj); err != nil {
			t.Fatal(err)
		}
		assertOwned(t, obj, c)
	}
	for _, n := range []string{"demo-peer", "demo-client"} {
		svc := &corev1.Service{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, svc); err != nil {
			t.Fatal(err)
		}
		assertOwned(t, svc, c)
	}
	pdb := &policyv1.PodDisruptionBudget{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "demo"}, pdb); err != nil {
		t.Fatal(err)
	}
	if pdb.Spec.MinAvailable.IntValue() != 2 {
		t.Errorf("PDB minAvailable = %v, want quorum 2", pdb.Spec.MinAvailable)
	}
	for _, n := range []string{"demo-ca", "demo-server-tls", "demo-peer-tls", "demo-client-tls"} {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, s); err != nil {
			t.Fatal(err)
		}
		assertOwned(t, s, c)
		if n != "demo-ca" && len(s.Data[pki.KeyCert]) == 0 {
			t.Errorf("secret %s holds no certificate", n)
		}
	}

	// The members form the cluster.
	var members, urls []string
	for i := 0; i < 3; i++ {
		m := names.Member("demo", i)
		members, urls = append(members, m), append(urls, names.PeerURL("demo", ns, m, true))
	}
	fake.Bootstrap(0xc1a55, members, urls)
	c = waitFor(t, ns, "demo", "Available with 3 members", settled(3))
	if c.Status.ClusterID != "c1a55" || c.Status.Leader != "demo-0" || c.Status.CurrentVersion != "3.6.16" {
		t.Errorf("status clusterID=%s leader=%s version=%s", c.Status.ClusterID, c.Status.Leader, c.Status.CurrentVersion)
	}
	eventually(t, timeout, "PVCs to record the cluster ID", func() error {
		for _, m := range members {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: m}, pvc); err != nil {
				return err
			}
			if pvc.Annotations[names.AnnotationClusterID] != "c1a55" {
				return fmt.Errorf("PVC %s annotations %v", m, pvc.Annotations)
			}
		}
		return nil
	})

	// Steady state: passes keep observing, but nothing is written.
	assertNoWrites(t, op)

	// Scale up 3 -> 5: one learner at a time, promoted before the next is added.
	patchReplicas(t, ns, "demo", 5)
	waitFor(t, ns, "demo", "5 members", settled(5))
	wantCalls := []string{
		"AddLearner https://demo-3.demo-peer." + ns + ".svc:2380", "Promote demo-3",
		"AddLearner https://demo-4.demo-peer." + ns + ".svc:2380", "Promote demo-4",
	}
	if got := fake.Calls(); !slices.Equal(got, wantCalls) {
		t.Fatalf("scale-up membership changes:\n got %q\nwant %q", got, wantCalls)
	}
	args = podArgs(t, ns, "demo-4")
	for _, want := range []string{"--initial-cluster-state=existing", "--require-data=false", "--expected-cluster-id=c1a55"} {
		if !slices.Contains(args, want) {
			t.Errorf("joining pod lacks %s: %v", want, args)
		}
	}

	// Scale down 5 -> 3 while demo-4 leads: leadership moves first, then one removal at a time,
	// each followed by the member's pod and then its volume.
	fake.SetLeader("demo-4")
	waitFor(t, ns, "demo", "demo-4 as leader", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.Leader != "demo-4" {
			return fmt.Errorf("leader %s", c.Status.Leader)
		}
		return nil
	})
	patchReplicas(t, ns, "demo", 3)
	waitFor(t, ns, "demo", "3 members", settled(3))
	eventually(t, timeout, "objects of removed members to go", func() error {
		if got := objectNames(t, ns, &corev1.PersistentVolumeClaimList{}); !slices.Equal(got, members) {
			return fmt.Errorf("PVCs %v", got)
		}
		if got := objectNames(t, ns, &corev1.PodList{}); !slices.Equal(got, members) {
			return fmt.Errorf("pods %v", got)
		}
		return nil
	})
	wantCalls = append(wantCalls, "MoveLeader demo-0", "Remove demo-4", "Remove demo-3")
	if got := fake.Calls(); !slices.Equal(got, wantCalls) {
		t.Fatalf("scale-down membership changes:\n got %q\nwant %q", got, wantCalls)
	}

	// Replacement: demo-1's PVC is deleted. The member is removed and a new member (new ID, new
	// volume) takes its place, named with the lowest index free at that moment: demo-3 while the
	// old volume still terminates, demo-1 again once it is gone. The cluster ID stays.
	oldID := memberID(t, fake, "demo-1")
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "demo-1"}, pvc); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	c = waitFor(t, ns, "demo", "3 members after replacement", func(c *v1alpha1.EtcdCluster) error {
		if err := settled(3)(c); err != nil {
			return err
		}
		for _, m := range fake.Members() {
			if m.ID == oldID {
				return fmt.Errorf("the lost member %s (%x) is still a member", m.Name, oldID)
			}
		}
		return nil
	})
	if c.Status.ClusterID != "c1a55" {
		t.Errorf("cluster ID changed to %s", c.Status.ClusterID)
	}
	var replacement string
	for _, m := range fake.Members() {
		if m.Name != "demo-0" && m.Name != "demo-2" {
			replacement = m.Name
		}
	}
	if replacement != "demo-1" && replacement != "demo-3" {
		t.Fatalf("the replacement is named %q; want the lowest free name, demo-1 or demo-3", replacement)
	}
	if id := memberID(t, fake, replacement); id == 0 || id == oldID {
		t.Errorf("the replacement %s has ID %x (the lost member had %x)", replacement, id, oldID)
	}
	eventually(t, timeout, "the lost member's objects to go", func() error {
		want := []string{"demo-0", "demo-2", replacement}
		slices.Sort(want)
		if got := objectNames(t, ns, &corev1.PersistentVolumeClaimList{}); !slices.Equal(got, want) {
			return fmt.Errorf("PVCs %v", got)
		}
		return nil
	})
	wantCalls = append(wantCalls, "Remove demo-1", "AddLearner https://"+replacement+".demo-peer."+ns+".svc:2380", "Promote "+replacement)
	if got := fake.Calls(); !slices.Equal(got, wantCalls) {
		t.Fatalf("replacement membership changes:\n got %q\nwant %q", got, wantCalls)
	}
	assertEvent(t, ns, "MemberRemoved", "PersistentVolumeClaim")
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
	if w := op.writes.reset(); len(w) != 0 {
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
		return fmt.Errorf("no %s event mentioning %q among %d events", reason, contains, len(evs.Items))
	})
}

func TestSplitBrainGuardStopsMembershipChanges(t *testing.T) {
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	op := startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "sb", 3, fake)

	fake.SetForeignClusterID("sb-2", 0xbad)
	patchReplicas(t, ns, "sb", 5)
	c := waitFor(t, ns, "sb", "Degraded ClusterIDMismatch", func(c *v1alpha1.EtcdCluster) error {
		d := condition(c, v1alpha1.ConditionDegraded)
		if d.Status != metav1.ConditionTrue || d.Reason != "ClusterIDMismatch" {
			return fmt.Errorf("Degraded=%s/%s", d.Status, d.Reason)
		}
		return nil
	})
	if msg := condition(c, v1alpha1.ConditionDegraded).Message; !strings.Contains(msg, "sb-2 reports cluster ID bad") || !strings.Contains(msg, "membership changes are stopped") {
		t.Errorf("Degraded message does not say what happened and what stops: %q", msg)
	}
	assertEvent(t, ns, "ClusterIDMismatch", "sb-2")
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

func TestStatusLossDoesNotBootstrapAgain(t *testing.T) {
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
	c = waitFor(t, ns, "lost", "the cluster ID recovered from the volumes", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.ClusterID != "c1a55" {
			return fmt.Errorf("clusterID %q", c.Status.ClusterID)
		}
		return nil
	})
	assertEvent(t, ns, "ClusterIDRecovered", "c1a55")
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

func TestPausedClusterIsLeftAlone(t *testing.T) {
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	c := newCluster(ns, "p", 3)
	c.Spec.Paused = true
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "p", "Progressing=False/Paused", func(c *v1alpha1.EtcdCluster) error {
		if p := condition(c, v1alpha1.ConditionProgressing); p.Status != metav1.ConditionFalse || p.Reason != "Paused" {
			return fmt.Errorf("Progressing=%s/%s", p.Status, p.Reason)
		}
		return nil
	})
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("a paused cluster got pods %v", pods)
	}
	var secrets corev1.SecretList
	if err := k8s.List(context.Background(), &secrets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Fatalf("a paused cluster got secrets")
	}
}

func TestMissingUserSecretIsReported(t *testing.T) {
	ns := newNamespace(t)
	startOperator(t, ns, etcd.NewFake("3.6.16"))
	c := newCluster(ns, "usr", 3)
	c.Spec.TLS = v1alpha1.TLSSpec{ServerSecretName: "mine-server", PeerSecretName: "mine-peer", ClientSecretName: "mine-client"}
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	c = waitFor(t, ns, "usr", "Degraded TLSNotReady", func(c *v1alpha1.EtcdCluster) error {
		if d := condition(c, v1alpha1.ConditionDegraded); d.Reason != "TLSNotReady" {
			return fmt.Errorf("Degraded=%s/%s", d.Status, d.Reason)
		}
		return nil
	})
	if msg := condition(c, v1alpha1.ConditionDegraded).Message; !strings.Contains(msg, "mine-server") || !strings.Contains(msg, "spec.tls") {
		t.Errorf("message does not name the missing secret: %q", msg)
	}
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("members started without their certificates: %v", pods)
	}
}
