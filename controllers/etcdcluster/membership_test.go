package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestBootstrapScaleAndReplace(t *testing.T) {
	t.Parallel()
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
		if cond := condition(c, v1alpha1.ConditionAvailable); cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonBootstrapping {
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
	for _, n := range []string{names.CASecretsOf("demo").Cluster, "demo-server-tls", "demo-peer-tls", "demo-client-tls"} {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, s); err != nil {
			t.Fatal(err)
		}
		assertOwned(t, s, c)
		if n != names.CASecretsOf("demo").Cluster && len(s.Data[pki.KeyCert]) == 0 {
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

	// Replacement: demo-1's PVC is deleted while demo-1 still serves from it (the PVC-protection
	// finalizer keeps the volume while its pod runs). It is replaced add-first: a new member
	// (new ID, new volume, the lowest free name: demo-3) joins and votes before demo-1 is
	// removed; then demo-1's pod goes, and its volume with it. The cluster ID stays.
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
	if replacement != "demo-3" {
		t.Fatalf("the replacement is named %q; want the lowest free name, demo-3", replacement)
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
	wantCalls = append(wantCalls, "AddLearner https://demo-3.demo-peer."+ns+".svc:2380", "Promote demo-3", "Remove demo-1")
	if got := fake.Calls(); !slices.Equal(got, wantCalls) {
		t.Fatalf("replacement membership changes:\n got %q\nwant %q", got, wantCalls)
	}
	assertEvent(t, ns, v1alpha1.EventMemberAdded, "to replace demo-1, whose volume is being deleted")
	assertEvent(t, ns, v1alpha1.EventMemberRemoved, "removing demo-1, whose volume is being deleted, now that its replacement votes")
}

// A membership step that fails is reported as Progressing=True/StepFailed and retried until it
// succeeds, without repeating a change that was made.
func TestFailedStepIsReportedAndRetried(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "sf", 3, fake)

	fake.FailNext("AddLearner", 1000, errors.New("etcdserver: request timed out"))
	patchReplicas(t, ns, "sf", 4)
	assertStepFailed(t, ns, "sf", "AddLearner failed: etcdserver: request timed out; retrying")
	if calls := fake.Calls(); len(calls) != 0 {
		t.Fatalf("membership changed while every AddLearner failed: %v", calls)
	}

	fake.FailNext("AddLearner", 0, nil)
	waitFor(t, ns, "sf", "4 members once AddLearner works again", settled(4))
	wantCalls := []string{"AddLearner https://sf-3.sf-peer." + ns + ".svc:2380", "Promote sf-3"}
	if got := fake.Calls(); !slices.Equal(got, wantCalls) {
		t.Fatalf("membership changes:\n got %q\nwant %q", got, wantCalls)
	}
}

// assertStepFailed waits for Progressing=True/StepFailed on the cluster and compares the whole
// condition, with message, against what a failed step reports.
func assertStepFailed(t *testing.T, ns, name, message string) {
	t.Helper()
	c := waitFor(t, ns, name, "Progressing=True/StepFailed", func(c *v1alpha1.EtcdCluster) error {
		if p := condition(c, v1alpha1.ConditionProgressing); p.Reason != v1alpha1.ReasonStepFailed {
			return fmt.Errorf("Progressing=%s/%s", p.Status, p.Reason)
		}
		return nil
	})
	want := metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonStepFailed,
		Message: message, ObservedGeneration: c.Generation}
	got := condition(c, v1alpha1.ConditionProgressing)
	got.LastTransitionTime = metav1.Time{}
	if got != want {
		t.Errorf("Progressing =\n %+v\nwant\n %+v", got, want)
	}
}

// etcd refuses a membership change while its members have not been connected to one another
// for 5 s (a member just restarted): the operator waits and asks again, says why in
// Progressing, and returns no error for backoff (no error log).
func TestUnhealthyClusterIsAWait(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	op := startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "uh", 3, fake)

	refused := fmt.Errorf("adding learner https://uh-3.uh-peer.%s.svc:2380: %w", ns, etcd.ErrUnhealthyCluster)
	fake.FailNext("AddLearner", 1000, refused)
	patchReplicas(t, ns, "uh", 4)
	assertStepFailed(t, ns, "uh", "AddLearner failed: "+refused.Error()+"; retrying")

	fake.FailNext("AddLearner", 0, nil)
	waitFor(t, ns, "uh", "4 members once etcd takes the change", settled(4))
	for _, err := range op.returned() {
		if errors.Is(err, etcd.ErrUnhealthyCluster) {
			t.Errorf("a pass returned etcd's refusal for backoff: %v", err)
		}
	}
}

// A scale-down whose removal would leave the voters that stay without a quorum (two of the
// four are too slow to follow the leader: they answer for their status, but time out on
// linearizable reads) waits: Progressing and Degraded say QuorumAtRisk with the probe's whole
// answer, Degraded's change is a Warning Event, no pass returns it for backoff, nothing is
// removed. The
// member list, which a slow member times out on, is read through the leader: the cluster stays
// Available. Once they keep up again the removal goes ahead.
func TestRemovalThatWouldLoseQuorumIsAWait(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	op := startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "rq", 5, fake)
	leader := getCluster(t, ns, "rq").Status.Leader
	var cut []string
	for _, m := range []string{"rq-0", "rq-1", "rq-2", "rq-3"} {
		if m != leader && len(cut) < 2 {
			cut = append(cut, m)
			fake.SlowReads(m, true)
		}
	}
	if leader == "" || leader == "rq-4" || len(cut) != 2 {
		t.Fatalf("leader %q: the test needs one among rq-0..rq-3 and two followers to slow down", leader)
	}
	patchReplicas(t, ns, "rq", 4)
	refusal := fmt.Sprintf("not removing member rq-4 yet: 2 of the 4 voting members that would stay reach a leader with a quorum now, and removing it needs 3; "+
		"without: %[1]s (a linearizable read through %[1]s: context deadline exceeded (fake)); %[2]s (a linearizable read through %[2]s: context deadline exceeded (fake)). "+
		"The operator probes again, in 2s at first, then less often, up to every 30s; a partition, a member down or a member too slow to follow its leader is the likely cause", cut[0], cut[1])
	wantCondition(t, ns, "rq", metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonQuorumAtRisk, Message: refusal})
	wantCondition(t, ns, "rq", metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonQuorumAtRisk, Message: refusal})
	assertEvent(t, ns, v1alpha1.ReasonQuorumAtRisk, "Degraded is True: "+refusal)
	if calls := fake.Calls(); len(calls) != 0 {
		t.Fatalf("membership changed while the removal would lose quorum: %v", calls)
	}
	if a := condition(getCluster(t, ns, "rq"), v1alpha1.ConditionAvailable); a.Status != metav1.ConditionTrue {
		t.Errorf("Available is %+v while two of five members are slow", a)
	}
	for _, m := range cut {
		fake.SlowReads(m, false)
	}
	waitFor(t, ns, "rq", "4 members once the voters that stay keep up", settled(4))
	if got, want := fake.Calls(), []string{"Remove rq-4"}; !slices.Equal(got, want) {
		t.Errorf("membership changes:\n got %q\nwant %q", got, want)
	}
	for _, err := range op.returned() {
		var waits *removalWaits
		if errors.As(err, &waits) {
			t.Errorf("a pass returned the removal's wait for backoff: %v", err)
		}
	}
}

// etcd refuses to promote a learner that has not caught up; the operator asks again until it
// may, and adds no other learner meanwhile.
func TestPromotionWaitsForTheLearnerToCatchUp(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "lag", 3, fake)

	fake.LagPromotions(3)
	patchReplicas(t, ns, "lag", 4)
	waitFor(t, ns, "lag", "4 members", settled(4))
	if n := fake.RefusedPromotions(); n != 3 {
		t.Errorf("%d promotions were refused, want the 3 the learner lagged for", n)
	}
	wantCalls := []string{"AddLearner https://lag-3.lag-peer." + ns + ".svc:2380", "Promote lag-3"}
	if got := fake.Calls(); !slices.Equal(got, wantCalls) {
		t.Fatalf("membership changes:\n got %q\nwant %q", got, wantCalls)
	}
}
