package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/launcher"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
)

// externalFake is a running 3-member plaintext cluster "outside": vm-0 (the leader), vm-1 and
// vm-2, at 10.0.0.5-7.
func externalFake() *etcd.Fake {
	fake := etcd.NewFake("3.6.16")
	var vms, urls []string
	for i := 0; i < 3; i++ {
		vms, urls = append(vms, fmt.Sprintf("vm-%d", i)), append(urls, fmt.Sprintf("http://10.0.0.%d:2380", 5+i))
		fake.ServeAt(fmt.Sprintf("%s10.0.0.%d:2379", externalPrefix, 5+i), vms[i])
	}
	fake.Bootstrap(0xe7, vms, urls)
	return fake
}

func joinCluster(ns string, remove bool) *v1alpha1.EtcdCluster {
	c := newCluster(ns, "mig", 3)
	c.Spec.TLS.Enabled = ptr.To(false)
	c.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Join: &v1alpha1.JoinSpec{RemoveExternalMembers: remove,
		Endpoints: []string{"http://10.0.0.5:2379", "http://10.0.0.6:2379", "http://10.0.0.7:2379"}}}
	return c
}

func plaintext(r *Reconciler) { r.AllowPlaintext = true }

// TestJoinMovesAnExternalClusterIn: the operator records the external cluster, adds its three
// members as learners one at a time (each pod told the external peers), waits for the
// go-ahead, then removes the external members, the leader last once leadership moved.
func TestJoinMovesAnExternalClusterIn(t *testing.T) {
	t.Parallel()
	ns, fake := startJoin(t, false, nil)
	c := waitFor(t, ns, "mig", "the go-ahead", func(c *v1alpha1.EtcdCluster) error {
		if j := c.Status.Join; j == nil || j.Phase != v1alpha1.JoinWaitingForGoAhead {
			return fmt.Errorf("status.join %+v, Progressing %+v", c.Status.Join, condition(c, v1alpha1.ConditionProgressing))
		}
		return nil
	})
	if c.Status.ClusterID != "e7" {
		t.Errorf("status.clusterID = %q, want the external cluster's e7", c.Status.ClusterID)
	}
	var ext []string
	for _, m := range c.Status.Join.ExternalMembers {
		ext = append(ext, m.Name+"="+strings.Join(m.PeerURLs, ","))
	}
	if want := []string{"vm-0=http://10.0.0.5:2380", "vm-1=http://10.0.0.6:2380", "vm-2=http://10.0.0.7:2380"}; !reflect.DeepEqual(ext, want) {
		t.Errorf("status.join.externalMembers = %v, want %v", ext, want)
	}
	p := condition(c, v1alpha1.ConditionProgressing)
	if want := "the operator's 3 members vote beside 3 external members; set spec.bootstrap.join.removeExternalMembers to true to remove the external members, one at a time"; p.Reason != v1alpha1.ReasonWaitingForGoAhead || p.Message != want {
		t.Errorf("Progressing = %s: %q, want %s: %q", p.Reason, p.Message, v1alpha1.ReasonWaitingForGoAhead, want)
	}
	want := []string{"AddLearner http://mig-0.mig-peer." + ns + ".svc:2380", "Promote mig-0", "AddLearner http://mig-1.mig-peer." + ns + ".svc:2380", "Promote mig-1",
		"AddLearner http://mig-2.mig-peer." + ns + ".svc:2380", "Promote mig-2"}
	if got := fake.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("membership calls before the go-ahead\n got %v\nwant %v", got, want)
	}
	flag := ""
	for _, a := range podArgs(t, ns, "mig-2") {
		if strings.HasPrefix(a, "--initial-cluster=") {
			flag = a
		}
	}
	if want := "--initial-cluster=mig-0=http://mig-0.mig-peer." + ns + ".svc:2380,mig-1=http://mig-1.mig-peer." + ns + ".svc:2380,mig-2=http://mig-2.mig-peer." + ns + ".svc:2380,vm-0=http://10.0.0.5:2380,vm-1=http://10.0.0.6:2380,vm-2=http://10.0.0.7:2380"; flag != want {
		t.Errorf("the last member's pod has\n %s\nwant\n %s", flag, want)
	}

	wantPeers(t, ns, "10.0.0.5/32", "10.0.0.6/32", "10.0.0.7/32")

	patchCluster(t, ns, "mig", func(c *v1alpha1.EtcdCluster) { c.Spec.Bootstrap.Join.RemoveExternalMembers = true })
	waitFor(t, ns, "mig", "the join to complete", func(c *v1alpha1.EtcdCluster) error {
		if j := c.Status.Join; j == nil || j.Phase != v1alpha1.JoinCompleted || j.Remaining != 0 || j.CompletionTime == nil {
			return fmt.Errorf("status.join %+v", c.Status.Join)
		}
		return settled(3)(c)
	})
	want = append(want, "Remove vm-1", "Remove vm-2", "MoveLeader mig-0", "Remove vm-0")
	if got := fake.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("membership calls\n got %v\nwant %v", got, want)
	}
	var left []string
	for _, m := range fake.Members() {
		left = append(left, m.Name)
	}
	if !reflect.DeepEqual(left, []string{"mig-0", "mig-1", "mig-2"}) {
		t.Errorf("members left: %v", left)
	}
	wantPeers(t, ns)
	assertEvent(t, ns, v1alpha1.EventJoinStarted, "joining etcd cluster e7 of 3 members")
	assertEvent(t, ns, v1alpha1.EventJoinCompleted, "the last external member is gone: the cluster e7 is managed by the operator alone")
}

// TestJoinRefusesAnUnhealthyCluster: a member that does not answer stops the join before any
// change, with the reason; once it is back the join starts.
func TestJoinRefusesAnUnhealthyCluster(t *testing.T) {
	t.Parallel()
	ns, fake := startJoin(t, true, func(f *etcd.Fake) { f.SetDown("vm-2", true) })
	wantCondition(t, ns, "mig", metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonJoinRefused,
		Message: "the external cluster is not joined: member vm-2 (" + fmt.Sprintf("%x", memberID(t, fake, "vm-2")) + ") does not answer: 10.0.0.7:2379: status of external 10.0.0.7:2379: connection refused (fake); nothing was changed, and the join starts once this is fixed"})
	if c := getCluster(t, ns, "mig"); c.Status.ClusterID != "" || c.Status.Join != nil {
		t.Errorf("a refused join recorded clusterID %q, join %+v", c.Status.ClusterID, c.Status.Join)
	}
	if calls := fake.Calls(); len(calls) != 0 {
		t.Errorf("a refused join changed the membership: %v", calls)
	}
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Errorf("a refused join created pods: %v", pods)
	}
	fake.SetDown("vm-2", false)
	waitJoined(t, ns)
	if slices.ContainsFunc(fake.Members(), func(m etcd.Member) bool { return strings.HasPrefix(m.Name, "vm-") }) {
		t.Errorf("external members left: %v", fake.Members())
	}
}

// startJoin starts the operator on a new namespace with externalFake (changed by prep first)
// and creates the cluster "mig" that joins it.
func startJoin(t *testing.T, remove bool, prep func(*etcd.Fake)) (string, *etcd.Fake) {
	t.Helper()
	ns := newNamespace(t)
	fake := externalFake()
	if prep != nil {
		prep(fake)
	}
	kubelet(t, ns)
	startWith(t, ns, fake, "test/"+ns, planner.DefaultDeadlines, plaintext)
	if err := k8s.Create(context.Background(), joinCluster(ns, remove)); err != nil {
		t.Fatal(err)
	}
	return ns, fake
}

// waitJoined waits until the join of cluster mig completed.
func waitJoined(t *testing.T, ns string) {
	t.Helper()
	waitFor(t, ns, "mig", "the join to complete", func(c *v1alpha1.EtcdCluster) error {
		if j := c.Status.Join; j == nil || j.Phase != v1alpha1.JoinCompleted {
			return fmt.Errorf("status.join %+v, Degraded %+v", c.Status.Join, condition(c, v1alpha1.ConditionDegraded))
		}
		return nil
	})
}

// runningPod waits until the kubelet helper runs the pod (it has an IP) and returns it.
func runningPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	eventually(t, timeout, "the pod of "+name+" to run", func() error {
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pod); err != nil {
			return err
		}
		if pod.Status.PodIP == "" {
			return errors.New("no pod IP yet")
		}
		return nil
	})
	return pod
}

// wantPeers waits until the NetworkPolicy of cluster mig admits peer traffic from its members
// and from the external members at the given address blocks.
func wantPeers(t *testing.T, ns string, blocks ...string) {
	t.Helper()
	want := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: names.MemberSelector("mig")}}}
	for _, b := range blocks {
		want = append(want, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: b}})
	}
	eventually(t, timeout, "the peer rule to admit "+strings.Join(blocks, ", "), func() error {
		np := &networkingv1.NetworkPolicy{}
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: names.NetworkPolicy("mig")}, np); err != nil {
			return err
		}
		if got := np.Spec.Ingress[0].From; !reflect.DeepEqual(got, want) {
			return fmt.Errorf("peer rule admits %v, want %v", got, want)
		}
		return nil
	})
}

// TestJoinWaitsForPeersToBeReachable: the first member's launcher cannot reach the external
// peers and refuses to start etcd. The join stops with PeersUnreachable and the launcher's
// words, adds no other member and removes none; once the member starts the join goes on.
func TestJoinWaitsForPeersToBeReachable(t *testing.T) {
	t.Parallel()
	ns, fake := startJoin(t, true, func(f *etcd.Fake) { f.HoldStart("mig-0", true) })
	ctx := context.Background()
	pod := runningPod(t, ns, "mig-0")
	var required []string
	for _, a := range pod.Spec.Containers[0].Command {
		if strings.HasPrefix(a, "--require-peers=") || strings.HasPrefix(a, "--peer-tls-dir=") {
			required = append(required, a)
		}
	}
	if want := []string{"--require-peers=http://10.0.0.5:2380,http://10.0.0.6:2380,http://10.0.0.7:2380"}; !reflect.DeepEqual(required, want) {
		t.Errorf("the joining member's launcher flags %v, want %v", required, want)
	}

	refusal := &launcher.Refusal{Kind: launcher.RefusalPeersUnreachable,
		Message: "this member cannot reach the etcd peer listener of http://10.0.0.7:2380 (dial tcp 10.0.0.7:2380: i/o timeout) for 1m0s; etcd is not started"}
	setEtcdContainer := func(st corev1.ContainerStatus) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				return err
			}
			st.Name = resources.EtcdContainer
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{st}
			return k8s.Status().Update(ctx, pod)
		}); err != nil {
			t.Fatal(err)
		}
	}
	setEtcdContainer(corev1.ContainerStatus{
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Message: refusal.Error()}}})
	wantCondition(t, ns, "mig", metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPeersUnreachable,
		Message: "member mig-0 cannot join: " + refusal.Message + "; membership changes wait, and the member starts by itself once its peers answer"})
	if want, got := []string{"AddLearner http://mig-0.mig-peer." + ns + ".svc:2380"}, fake.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("membership calls while mig-0 cannot reach its peers: %v, want %v", got, want)
	}
	if pods := objectNames(t, ns, &corev1.PodList{}); !reflect.DeepEqual(pods, []string{"mig-0"}) {
		t.Errorf("pods while mig-0 cannot reach its peers: %v, want mig-0 alone", pods)
	}

	// The peers answer: the kubelet restarts the container and etcd starts.
	fake.HoldStart("mig-0", false)
	setEtcdContainer(corev1.ContainerStatus{Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Message: refusal.Error()}}})
	waitJoined(t, ns)
}

// TestJoinWaitsForExternalMembersToConnect: an external member reports no working connection
// to the first member (it cannot reach the member's peer URL). The join stops with
// PeersUnreachable before the member is promoted, and goes on once the connection works.
func TestJoinWaitsForExternalMembersToConnect(t *testing.T) {
	t.Parallel()
	ns, fake := startJoin(t, true, func(f *etcd.Fake) { f.Unreach("vm-1", "mig-0", true) })
	ctx := context.Background()
	// The member's etcd has been running for a minute.
	pod := runningPod(t, ns, "mig-0")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: resources.EtcdContainer,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Now().Add(-time.Minute))}}}}
		return k8s.Status().Update(ctx, pod)
	}); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, ns, "mig", metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPeersUnreachable,
		Message: "external member vm-1 (" + fmt.Sprintf("%x", memberID(t, fake, "vm-1")) + ") has no working connection to member mig-0 (etcd_network_active_peers on vm-1); the external members must reach the peer URL of mig-0 from where they run; membership changes wait, and go on once they connect"})
	if want, got := []string{"AddLearner http://mig-0.mig-peer." + ns + ".svc:2380"}, fake.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("membership calls while vm-1 cannot reach mig-0: %v, want %v", got, want)
	}
	fake.Unreach("vm-1", "mig-0", false)
	waitJoined(t, ns)
}

// TestJoinAbortedByDeletion: the EtcdCluster is deleted between the promotions and the
// go-ahead, one of its members leading. The finalizer holds it while leadership moves to an
// external member and its members leave the external cluster one at a time; only then does it
// go, leaving the three external members a cluster of their own.
func TestJoinAbortedByDeletion(t *testing.T) {
	t.Parallel()
	ns, fake := startJoin(t, false, nil)
	ctx := context.Background()
	c := waitFor(t, ns, "mig", "the go-ahead", func(c *v1alpha1.EtcdCluster) error {
		if j := c.Status.Join; j == nil || j.Phase != v1alpha1.JoinWaitingForGoAhead {
			return fmt.Errorf("status.join %+v", c.Status.Join)
		}
		return nil
	})
	if want := []string{v1alpha1.FinalizerJoin}; !reflect.DeepEqual(c.Finalizers, want) {
		t.Errorf("finalizers mid-join %v, want %v", c.Finalizers, want)
	}
	// 3+3 voters, the external ones healthy: a quorum of 4 needs one of the operator's pods,
	// and the budget keeps a quorum of the operator's own (2) as its margin.
	eventually(t, timeout, "the PDB to count the external voters", func() error {
		pdb := &policyv1.PodDisruptionBudget{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.PDB("mig")}, pdb); err != nil {
			return err
		}
		if got := pdb.Spec.MinAvailable.IntVal; got != 2 {
			return fmt.Errorf("minAvailable %d, want 2", got)
		}
		return nil
	})
	before := len(fake.Calls())
	fake.SetLeader("mig-1")
	if err := k8s.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, timeout, "the EtcdCluster to go", func() error {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &v1alpha1.EtcdCluster{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v); membership calls %v", err, fake.Calls()[before:])
	})
	if got, want := fake.Calls()[before:], []string{"MoveLeader vm-0", "Remove mig-2", "Remove mig-1", "Remove mig-0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("membership calls of the abort\n got %v\nwant %v", got, want)
	}
	var left []string
	for _, m := range fake.Members() {
		left = append(left, fmt.Sprintf("%s learner=%v", m.Name, m.IsLearner))
	}
	if want := []string{"vm-0 learner=false", "vm-1 learner=false", "vm-2 learner=false"}; !reflect.DeepEqual(left, want) {
		t.Errorf("members left: %v, want %v", left, want)
	}
	assertEvent(t, ns, v1alpha1.EventJoinAborted,
		"the join was aborted: none of the operator's members is left in the external cluster, whose 3 members remain; the EtcdCluster, its pods and volumes go")
	assertEvent(t, ns, v1alpha1.EventMemberRemoved, "aborting the join: removing member mig-0 from the external cluster (the last of the operator's members in it)")
}

// TestJoinAbortWaitsForTheExternalCluster: an external member that does not answer stops the
// abort before any member of the operator's is removed, with the reason and how to force it;
// the EtcdCluster stays, and goes once the member is back.
func TestJoinAbortWaitsForTheExternalCluster(t *testing.T) {
	t.Parallel()
	ns, fake := startJoin(t, false, nil)
	ctx := context.Background()
	c := waitFor(t, ns, "mig", "the go-ahead", func(c *v1alpha1.EtcdCluster) error {
		if j := c.Status.Join; j == nil || j.Phase != v1alpha1.JoinWaitingForGoAhead || len(c.Finalizers) == 0 {
			return fmt.Errorf("status.join %+v, finalizers %v", c.Status.Join, c.Finalizers)
		}
		return nil
	})
	before := len(fake.Calls())
	fake.SetDown("vm-1", true)
	if err := k8s.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, ns, "mig", metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonJoinAbortBlocked,
		Message: "the EtcdCluster is being deleted before its join completed, and its members stay in the external cluster until they are removed one at a time: external member vm-1 (" +
			fmt.Sprintf("%x", memberID(t, fake, "vm-1")) + ") does not answer (10.0.0.6:2379: status of external 10.0.0.6:2379: connection refused (fake)), and removing a voter of the operator's could leave the external cluster without a quorum; the abort goes on once it is healthy, or once it is removed with etcdctl member remove; " +
			planner.AbortForce})
	if got := fake.Calls()[before:]; len(got) != 0 {
		t.Errorf("membership calls while an external member is down: %v", got)
	}
	fake.SetDown("vm-1", false)
	eventually(t, timeout, "the EtcdCluster to go", func() error {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &v1alpha1.EtcdCluster{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v); membership calls %v", err, fake.Calls()[before:])
	})
	if got, want := fake.Calls()[before:], []string{"Remove mig-2", "Remove mig-1", "Remove mig-0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("membership calls of the abort\n got %v\nwant %v", got, want)
	}
}
