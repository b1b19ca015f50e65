package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
)

// Issue 11's repairs that a real cluster cannot produce on demand, with exact assertions.

func cnd(t string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: message}
}

// The PodDisruptionBudget keeps a quorum of the voters etcd lists now, and lets the drain of a
// single member's node go through.
func TestPDBFollowsTheVoters(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "pdb", 3, fake)
	minAvailable := func(want int32) {
		t.Helper()
		eventually(t, timeout, fmt.Sprintf("PDB minAvailable %d", want), func() error {
			pdb := &policyv1.PodDisruptionBudget{}
			if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "pdb"}, pdb); err != nil {
				return err
			}
			if got := pdb.Spec.MinAvailable.IntVal; got != want {
				return fmt.Errorf("minAvailable %d", got)
			}
			return nil
		})
	}
	minAvailable(2)
	patchReplicas(t, ns, "pdb", 5)
	waitFor(t, ns, "pdb", "5 members", settled(5))
	minAvailable(3)
	patchReplicas(t, ns, "pdb", 1)
	waitFor(t, ns, "pdb", "1 member", settled(1))
	minAvailable(0)
}

// An object that has one of the cluster's names but is not the cluster's is never taken over:
// the step fails with what to do.
func TestForeignObjectIsNotTakenOver(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	startOperator(t, ns, etcd.NewFake("3.6.16"))
	kubelet(t, ns)
	ctx := context.Background()
	foreign := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "own-0", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := k8s.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, newCluster(ns, "own", 1)); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, ns, "own", cnd(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonStepFailed,
		"Bootstrap failed: *v1.PersistentVolumeClaim "+ns+"/own-0 exists but does not belong to EtcdCluster own (no owner): the operator does not take it over; delete or rename it; retrying"))
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("pods %v started on a volume the cluster does not own", pods)
	}
}

// A cluster deleted and created again at once finds objects of its names still there,
// controlled by the deleted one (envtest runs no garbage collector, so they stay): each is
// deleted, announced by an Event, and made anew for the new cluster: the Services (apply),
// the member's volume and pod (create), the certificates (made before the cluster forms).
func TestLeftoversOfAnEarlierClusterAreReplaced(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	ctx := context.Background()
	first := newCluster(ns, "again", 1)
	first.Spec.VolumeRetention = v1alpha1.VolumeDelete
	first = bootstrapCluster(t, first, fake)
	if err := k8s.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	eventually(t, timeout, "the first cluster to go", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(first), &v1alpha1.EtcdCluster{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("it is still there (%v)", err)
		}
		return nil
	})
	again := newCluster(ns, "again", 1)
	again.Spec.VolumeRetention = v1alpha1.VolumeDelete
	if err := k8s.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.PeerService("again")}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.ClientService("again")}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "again-0"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "again-0"}},
	}
	for _, n := range []string{names.CASecretsOf("again").Cluster, names.CASecretsOf("again").Peer, names.ServerSecret("again"),
		names.PeerSecret("again"), names.ClientSecret("again"), names.OperatorSecret("again")} {
		objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}})
	}
	eventually(t, timeout, "the cluster's objects made anew", func() error {
		for _, o := range objs {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return err
			}
			if !metav1.IsControlledBy(o, again) {
				return fmt.Errorf("%T %s is controlled by %+v; cluster status %+v", o, o.GetName(), metav1.GetControllerOf(o), getCluster(t, ns, "again").Status)
			}
		}
		return nil
	})
	// One Event per object deleted: the six Secrets, two Services, the NetworkPolicy, the PDB,
	// the PVC and the pod (client-go combines similar Events past ten into one, counted).
	eventually(t, timeout, "12 LeftoverRemoved Events", func() error {
		var evs corev1.EventList
		if err := k8s.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		n := int32(0)
		for _, e := range evs.Items {
			if e.Reason != v1alpha1.EventLeftoverRemoved {
				continue
			}
			if !strings.Contains(e.Message, fmt.Sprintf(", left by an earlier EtcdCluster again (UID %s) and not yet garbage-collected, to create this cluster's own", first.UID)) {
				return fmt.Errorf("event %q", e.Message)
			}
			n += e.Count
		}
		if n != 12 {
			return fmt.Errorf("%d", n)
		}
		return nil
	})
	assertEvent(t, ns, v1alpha1.EventLeftoverRemoved, "deleted *v1.Secret again.ca, left by an earlier EtcdCluster again (UID "+string(first.UID)+")")
}

// A member is judged by what answers as that member: an address that answers as another
// member (an IP taken over after a restart) does not make a down member look healthy.
func TestHealthIsMatchedByMemberID(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "imp", 3, fake)
	fake.AnswerAs("imp-2", "imp-0")
	msg := fmt.Sprintf("member imp-2 does not answer (its pod's address answers as member %s, not as %s); membership changes wait until every member is healthy",
		names.FormatID(memberID(t, fake, "imp-0")), names.FormatID(memberID(t, fake, "imp-2")))
	c := wantCondition(t, ns, "imp", cnd(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonMemberUnhealthy, msg))
	if m := findMember(c.Status.Members, "imp-2"); m == nil || m.Healthy {
		t.Errorf("imp-2 in status: %+v", m)
	}
	fake.AnswerAs("imp-2", "")
	waitFor(t, ns, "imp", "healthy again", settled(3))
}

// A version change is checked against the version the members run, refused with the rule it
// breaks, rolls nothing, and can be set back.
func TestVersionChangeIsCheckedAgainstTheMembers(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.5.20")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	c := newCluster(ns, "ver", 3)
	c.Spec.Version = "3.5.20"
	bootstrapCluster(t, c, fake)
	before := podUIDs(t, ns)

	for _, tc := range []struct{ version, message string }{
		{"3.6.16", "spec.version 3.6.16 cannot be rolled out while members run etcd 3.5.20: etcd 3.5.20 cannot be upgraded to 3.6 directly: first upgrade to 3.5.26 or a newer 3.5 release"},
		{"3.5.99", "etcd 3.5.99 is not a release this operator knows; it runs 3.5.0 to 3.5.35 and 3.6.0 to 3.6.16"},
	} {
		patchCluster(t, ns, "ver", func(c *v1alpha1.EtcdCluster) { c.Spec.Version = tc.version })
		wantCondition(t, ns, "ver", cnd(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonVersionChangeRefused, tc.message))
		assertEvent(t, ns, v1alpha1.ReasonVersionChangeRefused, tc.version)
		patchCluster(t, ns, "ver", func(c *v1alpha1.EtcdCluster) { c.Spec.Version = "3.5.20" })
		waitFor(t, ns, "ver", "back at 3.5.20", settled(3))
		wantCondition(t, ns, "ver", cnd(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAllMembersHealthy, "every member is healthy"))
	}
	if after := podUIDs(t, ns); !maps.Equal(before, after) {
		t.Fatalf("a refused version change replaced pods: %v -> %v", before, after)
	}
}

func podUIDs(t *testing.T, ns string) map[string]types.UID {
	t.Helper()
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out
}

// NOSPACE is the cluster's, not a member's: it does not stop the rollout of a larger quota,
// and the operator disarms it once the database fits.
func TestNoSpaceIsClearedOnceTheQuotaFits(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "nsp", 3, fake)
	quota := v1alpha1.QuotaFor(newCluster(ns, "nsp", 3).Spec.Storage.Size) // unset: it follows the volume
	full := quota + 1<<20
	for _, m := range []string{"nsp-0", "nsp-1", "nsp-2"} {
		fake.SetDBSize(m, full)
	}
	fake.RaiseAlarm("nsp-0", planner.AlarmNoSpace)
	wantCondition(t, ns, "nsp", cnd(v1alpha1.ConditionAlarm, metav1.ConditionTrue, v1alpha1.ReasonNoSpace,
		"etcd raised NOSPACE: the database reached spec.etcd.quotaBackendBytes; clients can read and delete but not write until the quota is raised (the operator rolls it out and disarms the alarm) or space is freed"))
	wantCondition(t, ns, "nsp", cnd(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonNoSpace,
		fmt.Sprintf("etcd raised NOSPACE: the database (%d bytes in use) does not fit the quota (%d bytes); clients can read and delete but not write; raise spec.etcd.quotaBackendBytes (the operator rolls it out and disarms the alarm), or delete keys and compact", full, quota)))
	if c := getCluster(t, ns, "nsp"); condition(c, v1alpha1.ConditionAvailable).Status != metav1.ConditionTrue || c.Status.ReadyMembers != 3 {
		t.Errorf("an alarm made members unhealthy: Available %v, ready %d", condition(c, v1alpha1.ConditionAvailable), c.Status.ReadyMembers)
	}
	before := podUIDs(t, ns)
	patchCluster(t, ns, "nsp", func(c *v1alpha1.EtcdCluster) { c.Spec.Etcd.QuotaBackendBytes = 800 << 20 }) // fits 1Gi with the log
	wantCondition(t, ns, "nsp", cnd(v1alpha1.ConditionAlarm, metav1.ConditionFalse, v1alpha1.ReasonNoAlarm, "etcd has raised no alarm"))
	waitFor(t, ns, "nsp", "settled", settled(3))
	after := podUIDs(t, ns)
	for m, uid := range before {
		if after[m] == uid {
			t.Errorf("the pod of %s was not rolled to the new quota", m)
		}
	}
	if calls := fake.Calls(); !slices.Contains(calls, "Disarm nsp-0 NOSPACE") {
		t.Errorf("calls %v: no disarm", calls)
	}
	if len(fake.Alarms()) != 0 {
		t.Errorf("alarms left: %v", fake.Alarms())
	}
	assertEvent(t, ns, v1alpha1.EventAlarmDisarmed, "disarming NOSPACE")
}

// Lowering replicas before a learner is promoted removes the learner.
func TestLearnerIsCancelledWhenReplicasAreLowered(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "can", 3, fake)
	fake.LagPromotions(1 << 30)
	patchReplicas(t, ns, "can", 4)
	eventually(t, timeout, "a learner that has started", func() error {
		if memberID(t, fake, "can-3") == 0 {
			return errors.New("no started learner yet")
		}
		return nil
	})
	patchReplicas(t, ns, "can", 3)
	waitFor(t, ns, "can", "3 members", settled(3))
	fake.LagPromotions(0)
	want := []string{"AddLearner https://can-3.can-peer." + ns + ".svc:2380", "Remove can-3"}
	if got := fake.Calls(); !slices.Equal(got, want) {
		t.Fatalf("membership changes:\n got %q\nwant %q", got, want)
	}
	assertEvent(t, ns, v1alpha1.EventMemberRemoved, "removing learner can-3: spec.replicas no longer needs it")
}

// Once a member has run, its pod says so, and the launcher reads it at every start: it never
// again starts etcd on an empty volume, whatever the pod's flags allow.
func TestMembersThatRanAreMarkedOnTheirPods(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "mark", 3, fake)
	eventually(t, timeout, "pods marked", func() error {
		for _, m := range []string{"mark-0", "mark-1", "mark-2"} {
			p := &corev1.Pod{}
			if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: m}, p); err != nil {
				return err
			}
			if p.Annotations[names.AnnotationRequireData] != "true" || p.Annotations[names.AnnotationClusterID] != "c1a55" {
				return fmt.Errorf("pod %s annotations %v", m, p.Annotations)
			}
			if !slices.Contains(p.Spec.Containers[0].Command, "--pod-annotations=/etc/quorate/podinfo/annotations") {
				return fmt.Errorf("pod %s does not hand its annotations to the launcher", m)
			}
		}
		return nil
	})
}

// A pod that ended (evicted, or stopped by a node shutdown) never runs again: it is replaced.
func TestEndedPodIsReplaced(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "end", 3, fake)
	ctx := context.Background()
	p := &corev1.Pod{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "end-1"}, p); err != nil {
		t.Fatal(err)
	}
	old := p.UID
	p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Terminated", "Pod was terminated in response to imminent node shutdown."
	if err := k8s.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	eventually(t, timeout, "end-1 replaced", func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "end-1"}, p); err != nil {
			return err
		}
		if p.UID == old {
			return errors.New("still the ended pod")
		}
		return nil
	})
	assertEvent(t, ns, v1alpha1.EventPodReplaced, "the pod of end-1 ended and will not run again: replacing it; the member restarts from its volume")
	waitFor(t, ns, "end", "settled", settled(3))
	if calls := fake.Calls(); len(calls) != 0 {
		t.Fatalf("membership changed: %v", calls)
	}
}

// spec.volumeRetention: Retain (the default) keeps volumes and certificates without owner
// references; Delete makes the EtcdCluster their owner; either can be set back.
func TestVolumeRetentionPolicy(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	c := bootstrap(t, ns, "pol", 3, fake)
	owned := func(want bool) {
		t.Helper()
		eventually(t, timeout, fmt.Sprintf("volumes and certificates owned=%v", want), func() error {
			var objs []client.Object
			for _, m := range []string{"pol-0", "pol-1", "pol-2"} {
				objs = append(objs, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: m}})
			}
			for _, s := range []string{names.CASecretsOf("pol").Cluster, "pol-server-tls", "pol-peer-tls", "pol-client-tls"} {
				objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s}})
			}
			for _, o := range objs {
				if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: o.GetName()}, o); err != nil {
					return err
				}
				if metav1.IsControlledBy(o, c) != want {
					return fmt.Errorf("%T %s owner references %v", o, o.GetName(), o.GetOwnerReferences())
				}
			}
			return nil
		})
	}
	owned(false)
	patchCluster(t, ns, "pol", func(c *v1alpha1.EtcdCluster) { c.Spec.VolumeRetention = v1alpha1.VolumeDelete })
	owned(true)
	patchCluster(t, ns, "pol", func(c *v1alpha1.EtcdCluster) { c.Spec.VolumeRetention = v1alpha1.VolumeRetain })
	owned(false)
}

// Deleting an EtcdCluster keeps its volumes; one created later under the same name stops at
// them, and restarts the old cluster from them (its cluster ID, no bootstrap) only when asked.
func TestRetainedVolumesAreAdoptedOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	ctx := context.Background()
	old := bootstrap(t, ns, "ret", 3, fake)
	eventually(t, timeout, "volumes that recorded the cluster ID", func() error {
		for _, m := range []string{"ret-0", "ret-1", "ret-2"} {
			p := &corev1.PersistentVolumeClaim{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: m}, p); err != nil {
				return err
			}
			if p.Annotations[names.AnnotationClusterID] == "" {
				return fmt.Errorf("%s has no cluster ID yet", m)
			}
		}
		return nil
	})
	if err := k8s.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	collectGarbage(t, ns, old.UID)
	if err := k8s.Create(ctx, newCluster(ns, "ret", 3)); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, ns, "ret", cnd(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonRetainedVolumes,
		"the volumes ret-0, ret-1, ret-2 were retained from an earlier EtcdCluster named ret: set spec.adoptRetainedVolumes to true to restart that cluster from them, or delete them to start an empty cluster"))
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("pods %v started before the volumes were adopted", pods)
	}
	patchCluster(t, ns, "ret", func(c *v1alpha1.EtcdCluster) { c.Spec.AdoptRetainedVolumes = true })
	c := waitFor(t, ns, "ret", "the old cluster back", settled(3))
	if c.Status.ClusterID != "c1a55" {
		t.Errorf("cluster ID %q, want the retained c1a55", c.Status.ClusterID)
	}
	assertEvent(t, ns, v1alpha1.EventVolumesAdopted, "ret-0, ret-1, ret-2")
	assertEvent(t, ns, v1alpha1.EventClusterIDRecovered, "c1a55")
	for _, m := range []string{"ret-0", "ret-1", "ret-2"} {
		if args := podArgs(t, ns, m); !slices.Contains(args, "--require-data=true") {
			t.Errorf("adopted member %s does not require its data: %v", m, args)
		}
	}
	if calls := fake.Calls(); len(calls) != 0 {
		t.Fatalf("membership changed: %v", calls)
	}
}

// collectGarbage plays the garbage collector, which envtest lacks: it deletes what the owner
// with uid controlled.
func collectGarbage(t *testing.T, ns string, uid types.UID) {
	t.Helper()
	ctx := context.Background()
	for _, list := range []client.ObjectList{&corev1.PodList{}, &corev1.ServiceList{}, &policyv1.PodDisruptionBudgetList{}, &networkingv1.NetworkPolicyList{}, &corev1.PersistentVolumeClaimList{}, &corev1.SecretList{}} {
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, _ := metaItems(list)
		for _, o := range items {
			for _, ref := range o.GetOwnerReferences() {
				if ref.UID == uid {
					if err := k8s.Delete(ctx, o, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	eventually(t, timeout, "the old pods to go", func() error {
		if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
			return fmt.Errorf("pods %v", pods)
		}
		return nil
	})
}

// A forced recovery: a majority of the members are gone for good; nothing happens until the
// user asks; then the member with the most data restarts alone with --force-new-cluster, its
// pod is replaced by an ordinary one, and the cluster grows back with new members.
func TestForcedRecovery(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	ctx := context.Background()
	bootstrap(t, ns, "rec", 3, fake)
	fake.SetRevision("rec-1", 1234)
	patchCluster(t, ns, "rec", func(c *v1alpha1.EtcdCluster) { c.Spec.Paused = true })
	waitFor(t, ns, "rec", "paused", func(c *v1alpha1.EtcdCluster) error {
		if condition(c, v1alpha1.ConditionProgressing).Reason != v1alpha1.ReasonPaused {
			return errors.New("not paused yet")
		}
		return nil
	})
	for _, m := range []string{"rec-0", "rec-2"} {
		fake.SetDown(m, true)
		for _, o := range []client.Object{&corev1.PersistentVolumeClaim{}, &corev1.Pod{}} {
			o.SetNamespace(ns)
			o.SetName(m)
			if err := k8s.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, timeout, "the lost members' objects gone", func() error {
		if got := objectNames(t, ns, &corev1.PersistentVolumeClaimList{}); !slices.Equal(got, []string{"rec-1"}) {
			return fmt.Errorf("PVCs %v", got)
		}
		return nil
	})
	patchCluster(t, ns, "rec", func(c *v1alpha1.EtcdCluster) { c.Spec.Paused = false })
	wantCondition(t, ns, "rec", cnd(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonEtcdUnreachable,
		"no member answers with quorum: waiting for members to come back from their volumes; if a majority of volumes is lost for good, set spec.recovery.forceNewCluster to restart from the member that has the most data (writes it had not applied are lost)"))

	patchCluster(t, ns, "rec", func(c *v1alpha1.EtcdCluster) {
		c.Spec.Recovery = &v1alpha1.RecoverySpec{ForceNewCluster: "incident-1"}
	})
	c := waitFor(t, ns, "rec", "the recovery recorded", func(c *v1alpha1.EtcdCluster) error {
		if r := c.Status.Recovery; r == nil || r.Phase == "" {
			return fmt.Errorf("recovery %+v", r)
		}
		return nil
	})
	if r := c.Status.Recovery; r.Token != "incident-1" || r.Member != "rec-1" || r.Revision != 1234 {
		t.Errorf("recovery status %+v", r)
	}
	assertEvent(t, ns, v1alpha1.EventRecoveryStarted, "forcing a new cluster from member rec-1, which has applied revision 1234 (the most of the members that answer): writes acknowledged after revision 1234 that it had not applied are lost")
	eventually(t, timeout, "rec-1 restarted with --force-new-cluster", func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "rec-1"}, p); err != nil {
			return err
		}
		if !slices.Contains(p.Spec.Containers[0].Command, "--force-new-cluster") {
			return errors.New("not yet")
		}
		return nil
	})
	fake.ForceNewCluster("rec-1")
	c = waitFor(t, ns, "rec", "3 members again", settled(3))
	if r := c.Status.Recovery; r.Phase != v1alpha1.RecoveryCompleted {
		t.Errorf("recovery phase %s", r.Phase)
	}
	if args := podArgs(t, ns, "rec-1"); slices.Contains(args, "--force-new-cluster") {
		t.Errorf("rec-1 still runs with --force-new-cluster: %v", strings.Join(args, " "))
	}
	u := "https://rec-%d.rec-peer." + ns + ".svc:2380"
	want := []string{fmt.Sprintf("AddLearner "+u, 0), "Promote rec-0", fmt.Sprintf("AddLearner "+u, 2), "Promote rec-2"}
	if got := fake.Calls(); !slices.Equal(got, want) {
		t.Fatalf("membership changes:\n got %q\nwant %q", got, want)
	}
}

// A forced recovery while the other members' pods and volumes are still there, unreachable
// (a partition between the operator and them, or paused containers): before the survivor is
// forced, each other volume is marked as fenced and each other pod deleted, so the old
// majority cannot go on as a second cluster with the same ID; the fenced volumes are deleted
// once the recovered cluster answers, and the cluster grows back on new volumes.
func TestForcedRecoveryFencesTheOthers(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	ctx := context.Background()
	bootstrap(t, ns, "fen", 3, fake)
	fake.SetRevision("fen-1", 1234)
	oldUIDs := map[string]types.UID{}
	for _, m := range []string{"fen-0", "fen-2"} {
		fake.SetDown(m, true)
		p := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: m}, p); err != nil {
			t.Fatal(err)
		}
		oldUIDs[m] = p.UID
	}
	wantCondition(t, ns, "fen", cnd(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonEtcdUnreachable,
		"no member answers with quorum: waiting for members to come back from their volumes; if a majority of volumes is lost for good, set spec.recovery.forceNewCluster to restart from the member that has the most data (writes it had not applied are lost)"))
	patchCluster(t, ns, "fen", func(c *v1alpha1.EtcdCluster) {
		c.Spec.Recovery = &v1alpha1.RecoverySpec{ForceNewCluster: "incident-1"}
	})
	eventually(t, timeout, "fen-1 restarted with --force-new-cluster", func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "fen-1"}, p); err != nil {
			return err
		}
		if !slices.Contains(p.Spec.Containers[0].Command, "--force-new-cluster") {
			return errors.New("not yet")
		}
		return nil
	})
	// The survivor is forced: by now the others are fenced and stopped.
	if pods := objectNames(t, ns, &corev1.PodList{}); !slices.Equal(pods, []string{"fen-1"}) {
		t.Fatalf("pods when the survivor is forced: %v, want fen-1 alone", pods)
	}
	for _, m := range []string{"fen-0", "fen-2"} {
		p := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: m}, p); err != nil {
			t.Fatal(err)
		}
		if got := p.Annotations[names.AnnotationFenced]; got != "incident-1" {
			t.Errorf("the volume of %s is marked %q, want fenced by incident-1", m, got)
		}
	}
	assertEvent(t, ns, v1alpha1.EventRecoveryProgress, "fencing fen-0 before fen-1 is forced to lead alone: its volume is marked so that it never runs again")
	fake.ForceNewCluster("fen-1")
	for _, m := range []string{"fen-0", "fen-2"} {
		fake.SetDown(m, false)
	}
	waitFor(t, ns, "fen", "3 members again", settled(3))
	for _, m := range []string{"fen-0", "fen-2"} {
		p := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: m}, p); err != nil {
			t.Fatal(err)
		}
		if p.UID == oldUIDs[m] || p.Annotations[names.AnnotationFenced] != "" {
			t.Errorf("%s runs on its fenced volume (UID %s, mark %q)", m, p.UID, p.Annotations[names.AnnotationFenced])
		}
	}
}

// Storage changes: a volume grows in place where its StorageClass allows it (the file system
// grows at the pod's next start); a change of class (or growth in a class that cannot expand)
// moves each member to a new volume, add-first, the leader last.
func TestStorageChanges(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	ctx := context.Background()
	for name, expands := range map[string]bool{"expands-" + ns: true, "fixed-" + ns: false} {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/test", AllowVolumeExpansion: ptr.To(expands)}
		if err := k8s.Create(ctx, sc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, sc) })
	}
	c := newCluster(ns, "sto", 3)
	c.Spec.Storage.StorageClassName = ptr.To("expands-" + ns)
	// A quota of its own: left out, it follows the volume, and a larger volume rolls every
	// member to the larger quota, which is not what this test is about.
	c.Spec.Etcd.QuotaBackendBytes = 256 << 20
	bootstrapCluster(t, c, fake)

	// Growth in place: only a bound claim can be expanded; envtest has no volume controller,
	// so the claims are bound here by hand, each to a volume of its own.
	for _, m := range []string{"sto-0", "sto-1", "sto-2"} {
		bindVolume(t, ns, m)
	}
	before := podUIDs(t, ns)
	patchCluster(t, ns, "sto", func(c *v1alpha1.EtcdCluster) { c.Spec.Storage.Size = resource.MustParse("2Gi") })
	eventually(t, timeout, "every PVC asking for 2Gi", func() error {
		for _, m := range []string{"sto-0", "sto-1", "sto-2"} {
			p := &corev1.PersistentVolumeClaim{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: m}, p); err != nil {
				return err
			}
			if got := p.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("2Gi")) != 0 {
				return fmt.Errorf("%s asks for %s", m, got.String())
			}
		}
		return nil
	})
	assertEvent(t, ns, v1alpha1.EventVolumeExpanded, "sto-1")
	// The resizer says sto-1's file system grows when its pod restarts.
	p := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "sto-1"}, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}
	if err := k8s.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	eventually(t, timeout, "sto-1's pod restarted", func() error {
		if now := podUIDs(t, ns); now["sto-1"] == before["sto-1"] {
			return errors.New("not yet")
		}
		return nil
	})
	p.Status.Conditions = nil
	if err := k8s.Status().Update(ctx, p); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "sto", "grown", settled(3))
	if calls := fake.Calls(); len(calls) != 0 {
		t.Fatalf("growing volumes in place changed membership: %v", calls)
	}

	// Another class: every member moves.
	patchCluster(t, ns, "sto", func(c *v1alpha1.EtcdCluster) { c.Spec.Storage.StorageClassName = ptr.To("fixed-" + ns) })
	waitFor(t, ns, "sto", "moved", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.Storage != nil {
			return fmt.Errorf("storage %+v", *c.Status.Storage)
		}
		return settled(3)(c)
	})
	u := "https://sto-%d.sto-peer." + ns + ".svc:2380"
	want := []string{fmt.Sprintf("AddLearner "+u, 3), "Promote sto-3", "Remove sto-1", fmt.Sprintf("AddLearner "+u, 1), "Promote sto-1",
		"Remove sto-2", fmt.Sprintf("AddLearner "+u, 2), "Promote sto-2", "MoveLeader sto-1", "Remove sto-0"}
	if got := fake.Calls(); !slices.Equal(got, want) {
		t.Fatalf("membership changes:\n got %q\nwant %q", got, want)
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := k8s.List(ctx, &pvcs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pvcs.Items {
		if p.DeletionTimestamp.IsZero() && ptr.Deref(p.Spec.StorageClassName, "") != "fixed-"+ns {
			t.Errorf("PVC %s is of class %v", p.Name, p.Spec.StorageClassName)
		}
	}
}

// bindVolume plays the volume controller: it binds a claim to a new PersistentVolume of its
// class and size, provisioned by the class's provisioner.
func bindVolume(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pvc); err != nil {
		t.Fatal(err)
	}
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + ns + "-" + name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "example.com/test"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              ptr.Deref(pvc.Spec.StorageClassName, ""),
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name, UID: pvc.UID},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
		},
	}
	if err := k8s.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, pv) })
	pvc.Spec.VolumeName = pv.Name
	if err := k8s.Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: size}
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	if err := k8s.Status().Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
}

// Two installs that both see a cluster (a move from a cluster-wide to a namespaced install)
// never both act: the holder of the cluster's claim does everything, and the other takes over
// only once the claim has expired.
func TestTwoInstallsNeverBothAct(t *testing.T) {
	// Not parallel: it measures the gap between two installs' writes against the claim's
	// margin, which other tests' load would blur.
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	kubelet(t, ns)
	ops := map[string]*operator{
		"cluster-wide": startInstall(t, ns, fake, "cluster-wide"),
		"namespaced":   startInstall(t, ns, fake, "namespaced"),
	}
	c := bootstrap(t, ns, "two", 3, fake)
	holder := c.Status.Operator
	if ops[holder] == nil {
		t.Fatalf("status.operator = %q, want one of the installs", holder)
	}
	other := "namespaced"
	if holder == other {
		other = "cluster-wide"
	}
	assertEvent(t, ns, v1alpha1.EventOwnedElsewhere, "operator "+other+" sees this cluster but leaves it to "+holder)
	patchReplicas(t, ns, "two", 5)
	waitFor(t, ns, "two", "5 members", settled(5))
	u := "https://two-%d.two-peer." + ns + ".svc:2380"
	want := []string{fmt.Sprintf("AddLearner "+u, 3), "Promote two-3", fmt.Sprintf("AddLearner "+u, 4), "Promote two-4"}
	if got := fake.Calls(); !slices.Equal(got, want) {
		t.Fatalf("membership changes with two installs:\n got %q\nwant %q", got, want)
	}

	// The holder goes away (its install is removed): the other takes over once the claim
	// expires, and carries on.
	ops[holder].stop()
	waitFor(t, ns, "two", "the other install to take over", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.Operator != other {
			return fmt.Errorf("status.operator %q", c.Status.Operator)
		}
		return nil
	})
	assertEvent(t, ns, v1alpha1.EventOwnershipTakenOver, "operator "+other+" took over this cluster from "+holder+", whose claim expired")
	patchReplicas(t, ns, "two", 3)
	waitFor(t, ns, "two", "3 members", settled(3))
	want = append(want, "Remove two-4", "Remove two-3")
	if got := fake.Calls(); !slices.Equal(got, want) {
		t.Fatalf("membership changes after the takeover:\n got %q\nwant %q", got, want)
	}
	lease := &coordinationv1.Lease{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "two-operator"}, lease); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(lease.Spec.LeaseTransitions, 0); got != 1 || ptr.Deref(lease.Spec.HolderIdentity, "") != other {
		t.Errorf("claim: holder %v, %d transitions; want %s after one transition", lease.Spec.HolderIdentity, got, other)
	}
}

// A pod stuck terminating (its node does not answer, so the kubelet never finishes it) is
// reported with its node, and holds up only its own member: another member's missing pod is
// still created.
func TestPodStuckTerminatingIsReported(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	deadlines := planner.DefaultDeadlines
	deadlines.Terminating = 2 * time.Second
	startWith(t, ns, fake, "test/"+ns, deadlines)
	kubelet(t, ns)
	ctx := context.Background()
	bootstrap(t, ns, "stk", 3, fake)
	// stk-1's pod keeps a finalizer, as if its kubelet never confirmed it stopped.
	// The kubelet helper may write the pod's status meanwhile: on a conflict, read it again.
	p := &corev1.Pod{}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "stk-1"}, p); err != nil {
			return err
		}
		p.Finalizers = append(p.Finalizers, "test.quorate.dev/unreachable-node")
		return k8s.Update(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "stk-1"}, p); err == nil {
			p.Finalizers = nil
			_ = k8s.Update(ctx, p)
		}
	})
	fake.SetDown("stk-1", true)
	if err := k8s.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	// Meanwhile stk-2's pod is lost too: it is recreated although stk-1's is stuck.
	fake.SetDown("stk-2", true)
	old := podUIDs(t, ns)["stk-2"]
	if err := k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stk-2"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, timeout, "stk-2's pod recreated while stk-1's is stuck", func() error {
		if uid, ok := podUIDs(t, ns)["stk-2"]; !ok || uid == old {
			return errors.New("not yet")
		}
		return nil
	})
	fake.SetDown("stk-2", false)
	waitFor(t, ns, "stk", "stk-1 reported as stuck", func(c *v1alpha1.EtcdCluster) error {
		d := condition(c, v1alpha1.ConditionDegraded)
		if d.Reason != v1alpha1.ReasonMemberUnhealthy || !strings.Contains(d.Message, "member stk-1 does not answer (its pod has been terminating for") ||
			!strings.Contains(d.Message, `on node "", which does not finish it; once the node is gone for good, delete the pod with --force)`) {
			return fmt.Errorf("Degraded=%s/%s: %s", d.Status, d.Reason, d.Message)
		}
		return nil
	})
}
