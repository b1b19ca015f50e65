package chaos

import (
	"context"
	"errors"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cm "github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// cluster is an EtcdCluster of n voters led by leader, plus one learner.
func cluster(n int, leader string) *v1alpha1.EtcdCluster {
	c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "etcd"}}
	for i := 0; i < n; i++ {
		name := "etcd-" + string(rune('0'+i))
		c.Status.Members = append(c.Status.Members, v1alpha1.MemberStatus{Name: name, IsLeader: name == leader})
	}
	c.Status.Members = append(c.Status.Members, v1alpha1.MemberStatus{Name: "etcd-9", Learner: true})
	return c
}

func target(t *testing.T, c *v1alpha1.EtcdCluster) Target {
	cl := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(c).WithStatusSubresource(c).Build()
	return Target{Client: cl, Namespace: "ns", Cluster: "etcd", Rand: rand.New(rand.NewSource(1))}
}

func pods(s cm.PodSelector) []string { return s.Selector.Pods["ns"] }

func TestTargetsFollowLiveStatus(t *testing.T) {
	ctx := context.Background()
	tg := target(t, cluster(5, "etcd-3"))

	f, err := tg.PodKillLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := pods(f.Object.(*cm.PodChaos).Spec.PodSelector); !slices.Equal(got, []string{"etcd-3"}) {
		t.Errorf("pod-kill-leader targets %v, want the leader etcd-3", got)
	}
	f, _ = tg.PodKillFollower(ctx)
	if got := pods(f.Object.(*cm.PodChaos).Spec.PodSelector); len(got) != 1 || got[0] == "etcd-3" || got[0] == "etcd-9" {
		t.Errorf("pod-kill-follower targets %v: must be one voter that is not the leader", got)
	}

	f, _ = tg.PartitionLeader(ctx, time.Minute)
	nc := f.Object.(*cm.NetworkChaos).Spec
	if !slices.Equal(pods(nc.PodSelector), []string{"etcd-3"}) || !slices.Equal(pods(*nc.Target), []string{"etcd-0", "etcd-1", "etcd-2", "etcd-4"}) ||
		nc.Action != cm.PartitionAction || nc.Direction != cm.Both || *nc.Duration != "1m0s" {
		t.Errorf("partition-leader: %v -> %v %s %s %v", pods(nc.PodSelector), pods(*nc.Target), nc.Action, nc.Direction, *nc.Duration)
	}
	if f.CutOff != 2 {
		t.Errorf("partition-leader allows %d request timeouts in a row, want 2 (the writes lost with the leader, then the leader itself)", f.CutOff)
	}

	f, _ = tg.PartitionMinority(ctx, time.Minute)
	nc = f.Object.(*cm.NetworkChaos).Spec
	minority, rest := pods(nc.PodSelector), pods(*nc.Target)
	if len(minority) != 2 || slices.Contains(minority, "etcd-3") || len(rest) != 3 || !slices.Contains(rest, "etcd-3") {
		t.Errorf("partition-minority of 5: isolated %v from %v; want 2 followers cut from the 3 others, leader among them", minority, rest)
	}
	if f.QuorumLost {
		t.Error("a minority partition keeps a quorum")
	}
	if f.CutOff != 2 {
		t.Errorf("partition-minority of 5 cuts off %d members, want 2", f.CutOff)
	}

	f, _ = tg.PartitionMajority(ctx, time.Minute)
	nc = f.Object.(*cm.NetworkChaos).Spec
	if isolated := pods(nc.PodSelector); len(isolated) != 3 || !slices.Contains(isolated, "etcd-3") || len(pods(*nc.Target)) != 5 || !f.QuorumLost {
		t.Errorf("partition-majority of 5: isolated %v from %v (quorum lost %v); want 3 members incl. the leader cut from all", isolated, pods(*nc.Target), f.QuorumLost)
	}

	f, _ = tg.Delay(ctx, 100*time.Millisecond, time.Minute)
	if d := f.Object.(*cm.NetworkChaos).Spec.Delay; d == nil || d.Latency != "100ms" || d.Jitter != "20ms" {
		t.Errorf("delay spec %+v", d)
	}
	f, _ = tg.Loss(ctx, 20, time.Minute)
	if l := f.Object.(*cm.NetworkChaos).Spec.Loss; l == nil || l.Loss != "20" {
		t.Errorf("loss spec %+v", l)
	}
	f, _ = tg.ClockSkew(ctx, -10*time.Minute, time.Minute)
	if tc := f.Object.(*cm.TimeChaos).Spec; tc.TimeOffset != "-10m0s" || !slices.Equal(pods(tc.PodSelector), []string{"etcd-3"}) || !slices.Equal(tc.ContainerNames, []string{"etcd"}) {
		t.Errorf("clock-skew spec %+v", tc)
	}
	f = tg.OperatorKill("quorate-system", map[string]string{"control-plane": "controller-manager"}, 30*time.Second)
	if s := f.Object.(*cm.Schedule).Spec; s.Schedule != "@every 30s" || s.Type != cm.ScheduleTypePodChaos || s.PodChaos == nil ||
		s.PodChaos.Selector.Namespaces[0] != "quorate-system" || s.PodChaos.Action != cm.PodKillAction {
		t.Errorf("operator-kill schedule %+v", s)
	}
}

func TestNoLeaderNoFault(t *testing.T) {
	tg := target(t, cluster(3, ""))
	_, err := tg.PartitionLeader(context.Background(), time.Minute)
	if err == nil || !strings.Contains(err.Error(), "reports no leader") {
		t.Fatalf("err = %v, want a refusal naming the missing leader", err)
	}
	if _, err := target(t, cluster(1, "etcd-0")).PartitionMinority(context.Background(), time.Minute); err == nil {
		t.Fatal("a one-member cluster has no minority to partition")
	}
}

type recorder struct {
	mu     sync.Mutex
	starts []string
	ends   int
}

func (r *recorder) Fault(name, _ string) func() {
	r.mu.Lock()
	r.starts = append(r.starts, name)
	r.mu.Unlock()
	return func() { r.mu.Lock(); r.ends++; r.mu.Unlock() }
}

// chaosMesh plays Chaos Mesh's controller on the fake client: it marks every PodChaos injected,
// or failing with message fail when it is set.
func chaosMesh(ctx context.Context, c client.Client, fail string) {
	for ctx.Err() == nil {
		var l cm.PodChaosList
		_ = c.List(ctx, &l)
		for i := range l.Items {
			p := &l.Items[i]
			if fail != "" {
				now := metav1.Now()
				p.Status.Experiment.Records = []*cm.Record{{Id: "ns/etcd-0", Events: []cm.RecordEvent{
					{Type: cm.TypeFailed, Operation: cm.Apply, Message: fail, Timestamp: &now},
					{Type: cm.TypeFailed, Operation: cm.Apply, Message: fail, Timestamp: &now},
					{Type: cm.TypeFailed, Operation: cm.Apply, Message: fail, Timestamp: &now},
					{Type: cm.TypeFailed, Operation: cm.Apply, Message: fail, Timestamp: &now},
					{Type: cm.TypeFailed, Operation: cm.Apply, Message: fail, Timestamp: &now}}}}
			} else {
				p.Status.Conditions = []cm.ChaosCondition{{Type: cm.ConditionAllInjected, Status: corev1.ConditionTrue}}
				p.Status.Experiment.Records = []*cm.Record{{Id: "ns/etcd-0/etcd", Phase: cm.Injected, InjectedCount: 1}}
			}
			_ = c.Status().Update(ctx, p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// withChaosMesh is a fake API server holding a 3-member cluster and the given pods, with
// chaosMesh playing the controller until the test ends, and an Injector recording into rec.
func withChaosMesh(t *testing.T, fail string, rec Recorder, pods ...*corev1.Pod) (context.Context, client.Client, Target, *Injector) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := cluster(3, "etcd-0")
	objs := []client.Object{c}
	for _, p := range pods {
		objs = append(objs, p)
	}
	cl := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).WithStatusSubresource(c, &cm.PodChaos{}).Build()
	go chaosMesh(ctx, cl, fail)
	return ctx, cl, Target{Client: cl, Namespace: "ns", Cluster: "etcd"},
		&Injector{Client: cl, Recorder: rec, Poll: 5 * time.Millisecond, Timeout: 5 * time.Second}
}

func TestInjectorWaitsForInjectionAndRemoval(t *testing.T) {
	rec := &recorder{}
	ctx, cl, tg, in := withChaosMesh(t, "", rec)
	f, _ := tg.PodKillLeader(ctx)
	ran := false
	res, err := in.Inject(ctx, f, 0, func(ctx context.Context) error {
		// While the fault is active, the object exists and is injected.
		got := &cm.PodChaos{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(f.Object), got); err != nil {
			return err
		}
		ran = got.Status.Conditions[0].Type == cm.ConditionAllInjected
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("Inject: err=%v, during ran on an injected fault: %v", err, ran)
	}
	if res.Records["ns/etcd-0/etcd"] != string(cm.Injected) {
		t.Errorf("records %v", res.Records)
	}
	var left cm.PodChaosList
	_ = cl.List(ctx, &left)
	if n := len(left.Items); n != 0 {
		t.Errorf("%d chaos objects left after the fault", n)
	}
	if len(rec.starts) != 1 || rec.ends != 1 || !strings.HasPrefix(rec.starts[0], "PodChaos/pod-kill-leader-") {
		t.Errorf("timeline: starts %v, ends %d", rec.starts, rec.ends)
	}
}

func TestInjectorReportsFailedInjectionAndCleansUp(t *testing.T) {
	ctx, cl, tg, in := withChaosMesh(t, "no such container", &recorder{}, runningPod("etcd-0", -time.Hour))
	f, _ := tg.ContainerKill(ctx)
	during := errors.New("must not run")
	_, err := in.Inject(ctx, f, 0, func(context.Context) error { return during })
	if err == nil || errors.Is(err, during) || !strings.Contains(err.Error(), f.Ref()) || !strings.Contains(err.Error(), "no such container") {
		t.Fatalf("err = %v, want the failed injection naming %s and Chaos Mesh's message", err, f.Ref())
	}
	if TargetGone(err) {
		t.Errorf("TargetGone(%v) = true for a container that is missing in a pod that exists", err)
	}
	var left cm.PodChaosList
	_ = cl.List(ctx, &left)
	if len(left.Items) != 0 {
		t.Errorf("a fault that did not take was left behind")
	}
}

// A fault whose target pod was deleted or did not run (a roll replacing it) says so: the caller may build it
// again with targets chosen anew.
func TestInjectorReportsATargetGone(t *testing.T) {
	ctx, _, tg, in := withChaosMesh(t, `Pod "etcd-0" not found`, &recorder{})
	f, _ := tg.ContainerKill(ctx)
	_, err := in.Inject(ctx, f, 0, nil)
	if !TargetGone(err) {
		t.Fatalf("TargetGone(%v) = false, want true", err)
	}
	if TargetGone(errors.New(`Pod "etcd-0" not found`)) {
		t.Errorf("TargetGone is true for an error that is not a failed injection")
	}
	for _, c := range []struct {
		id, msg string
		want    bool
	}{
		{"ns/etcd-4", `Pod "etcd-4" not found`, true},
		{"ns/etcd-4/etcd", `pods "etcd-4" not found`, true},
		{"ns/etcd-4", `Pod "etcd-3" not found`, false},
		{"ns/etcd-4/etcd", `container "etcd" not found in pod etcd-4`, false},
		{"ns/etcd-4", `chaos-daemon pod on node n1 not found`, false},
		{"ns/etcd-4", `pod not running`, true},
	} {
		if got := targetDown(c.id, c.msg); got != c.want {
			t.Errorf("targetDown(%q, %q) = %v, want %v", c.id, c.msg, got, c.want)
		}
	}
}

// runningPod is a running pod of the cluster, created age from now (in the future when
// positive).
func runningPod(name string, age time.Duration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(time.Now().Add(age))},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// A fault that keeps failing with a message that does not say the pod is gone counts as a
// target gone when the live pod says so: gone, being deleted, not running, or created after
// the fault (the roll of campaign run 50: "unable to set ip tables chains for pod etcd-4").
func TestInjectorReportsATargetReplacedWhateverTheMessage(t *testing.T) {
	const msg = "failed to apply for pod ns/etcd-0: unable to set ip tables chains for pod etcd-0"
	deleting := runningPod("etcd-0", -time.Hour)
	deleting.DeletionTimestamp, deleting.Finalizers = &metav1.Time{Time: time.Now()}, []string{"test"}
	pending := runningPod("etcd-0", -time.Hour)
	pending.Status.Phase = corev1.PodPending
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"running since before the fault", runningPod("etcd-0", -time.Hour), false},
		{"gone", nil, true},
		{"being deleted", deleting, true},
		{"not running", pending, true},
		{"created after the fault", runningPod("etcd-0", time.Hour), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pods []*corev1.Pod
			if c.pod != nil {
				pods = append(pods, c.pod)
			}
			ctx, _, tg, in := withChaosMesh(t, msg, &recorder{}, pods...)
			f, _ := tg.ContainerKill(ctx)
			// The fake API server sets no creation time: the fault's is now.
			f.Object.SetCreationTimestamp(metav1.Now())
			_, err := in.Inject(ctx, f, 0, nil)
			if err == nil || !strings.Contains(err.Error(), msg) {
				t.Fatalf("err = %v, want Chaos Mesh's message", err)
			}
			if got := TargetGone(err); got != c.want {
				t.Errorf("TargetGone(%v) = %v, want %v", err, got, c.want)
			}
		})
	}
}

// Of two targets that keep failing, one whose pod was replaced and one whose pod runs as
// before, the fault is not gone: the second's failure is real, and a retarget would hide it.
func TestInjectorAllGoneNeedsEveryFailingTarget(t *testing.T) {
	ctx := context.Background()
	since := metav1.Now()
	cl := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(runningPod("etcd-0", -time.Hour), runningPod("etcd-1", time.Hour)).Build()
	in := &Injector{Client: cl}
	const msg = "unable to set ip tables chains"
	for _, c := range []struct {
		name   string
		failed []failedInjection
		want   bool
	}{
		{"the replaced pod alone", []failedInjection{{id: "ns/etcd-1", msg: msg}}, true},
		{"a missing pod alone", []failedInjection{{id: "ns/etcd-2", msg: msg}}, true},
		{"the replaced pod and one running as before", []failedInjection{{id: "ns/etcd-1", msg: msg}, {id: "ns/etcd-0", msg: msg}}, false},
		{"a failure that says the pod is gone, and the replaced pod", []failedInjection{{id: "ns/etcd-0", msg: `Pod "etcd-0" not found`, down: true}, {id: "ns/etcd-1", msg: msg}}, true},
	} {
		if got := in.allGone(ctx, c.failed, since); got != c.want {
			t.Errorf("%s: allGone = %v, want %v", c.name, got, c.want)
		}
	}
}
