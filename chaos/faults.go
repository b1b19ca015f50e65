// Package chaos is Quorate's fault library: typed builders of Chaos Mesh objects
// (github.com/chaos-mesh/chaos-mesh/api v1alpha1) aimed at the members of a live EtcdCluster,
// and an Injector that creates them, waits until Chaos Mesh reports them injected, holds them
// for a window, deletes them and waits until Chaos Mesh has recovered and removed them, while
// recording each fault's start and end on the run's timeline.
//
// The faults are executed by the real Chaos Mesh controller and daemon; this package only
// decides what to inject where (from the cluster's status: who leads now) and when it is over.
package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"time"

	cm "github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// AddToScheme registers the Chaos Mesh types.
func AddToScheme(s *runtime.Scheme) error { return cm.AddToScheme(s) }

// Fault is one Chaos Mesh object to inject and what it does, in words.
type Fault struct {
	// Kind names the fault in the library ("pod-kill-leader", "partition-majority", ...).
	Kind string
	// What it does to which member, for the timeline and for failure messages.
	What string
	// Object is the Chaos Mesh object (PodChaos, NetworkChaos, TimeChaos or Schedule).
	Object client.Object
	// QuorumLost is true for faults that leave no side with a quorum: clients must see errors.
	QuorumLost bool
	// CutOff is how many request timeouts a client can wait out one after another in a
	// partition: one per member cut off from the side that keeps a quorum, as a client that
	// sends to each member in turn (etcd's clientv3 does) can meet each of them in a row, and
	// one more when the leader is among them, as every write in flight when it is cut off is
	// lost with it, wherever it was sent.
	CutOff int
}

// Ref names the Chaos Mesh object, e.g. "NetworkChaos/partition-leader-x1y2".
func (f Fault) Ref() string {
	kind := strings.TrimPrefix(fmt.Sprintf("%T", f.Object), "*v1alpha1.")
	return kind + "/" + f.Object.GetName()
}

// Target is the EtcdCluster the faults are aimed at.
type Target struct {
	Client    client.Client
	Namespace string
	Cluster   string
	// Rand picks among followers; nil means a time-seeded source.
	Rand *rand.Rand
}

// Members is the live view of the cluster's voting members the builders choose from.
type Members struct {
	Leader    string
	Followers []string
	All       []string
}

// Members reads the EtcdCluster's status. It fails when there is no leader: faults are
// aimed at a healthy cluster, so that their effect can be told apart from what came before.
func (t Target) Members(ctx context.Context) (Members, error) {
	c := &v1alpha1.EtcdCluster{}
	if err := t.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: t.Cluster}, c); err != nil {
		return Members{}, err
	}
	var m Members
	for _, s := range c.Status.Members {
		if s.Learner {
			continue
		}
		m.All = append(m.All, s.Name)
		if s.IsLeader {
			m.Leader = s.Name
		} else {
			m.Followers = append(m.Followers, s.Name)
		}
	}
	if m.Leader == "" {
		return m, fmt.Errorf("EtcdCluster %s/%s reports no leader: wait until it is Available before injecting a fault", t.Namespace, t.Cluster)
	}
	slices.Sort(m.All)
	slices.Sort(m.Followers)
	return m, nil
}

func (t Target) pick(names []string) string {
	r := t.Rand
	if r == nil {
		r = rand.New(rand.NewSource(time.Now().UnixNano()))
	}
	return names[r.Intn(len(names))]
}

// objectMeta names a chaos object after its kind with a random suffix, so repeated faults of
// one kind never collide with an object Chaos Mesh is still recovering.
func (t Target) objectMeta(kind string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: t.Namespace, Name: fmt.Sprintf("%s-%s", kind, randSuffix(t.Rand)),
		Labels: map[string]string{"app.kubernetes.io/part-of": "quorate-conformance", "quorate.dev/fault": kind}}
}

func randSuffix(r *rand.Rand) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	if r == nil {
		r = rand.New(rand.NewSource(time.Now().UnixNano()))
	}
	b := make([]byte, 5)
	for i := range b {
		b[i] = letters[r.Intn(len(letters))]
	}
	return string(b)
}

// pods selects the named member pods (member names are pod names).
func (t Target) pods(names ...string) cm.PodSelector {
	return cm.PodSelector{Mode: cm.AllMode, Selector: cm.PodSelectorSpec{
		GenericSelectorSpec: cm.GenericSelectorSpec{Namespaces: []string{t.Namespace}},
		Pods:                map[string][]string{t.Namespace: slices.Clone(names)},
	}}
}

func (t Target) podChaos(kind, what string, action cm.PodChaosAction, duration *string, members ...string) Fault {
	return Fault{Kind: kind, What: what, Object: &cm.PodChaos{ObjectMeta: t.objectMeta(kind), Spec: cm.PodChaosSpec{
		ContainerSelector: cm.ContainerSelector{PodSelector: t.pods(members...), ContainerNames: []string{"etcd"}},
		Action:            action, Duration: duration,
	}}}
}

// PodKillLeader deletes the leader's pod (grace period 0), as a node crash would.
func (t Target) PodKillLeader(ctx context.Context) (Fault, error) {
	m, err := t.Members(ctx)
	if err != nil {
		return Fault{}, err
	}
	return t.podChaos("pod-kill-leader", "pod-kill of leader "+m.Leader, cm.PodKillAction, nil, m.Leader), nil
}

// PodKillFollower deletes a random follower's pod.
func (t Target) PodKillFollower(ctx context.Context) (Fault, error) {
	m, err := t.Members(ctx)
	if err != nil {
		return Fault{}, err
	}
	if len(m.Followers) == 0 {
		return Fault{}, fmt.Errorf("no follower to kill: the cluster has one member")
	}
	f := t.pick(m.Followers)
	return t.podChaos("pod-kill-follower", "pod-kill of follower "+f, cm.PodKillAction, nil, f), nil
}

// ContainerKill kills the leader's etcd container; the kubelet restarts it in the same pod.
func (t Target) ContainerKill(ctx context.Context) (Fault, error) {
	m, err := t.Members(ctx)
	if err != nil {
		return Fault{}, err
	}
	return t.podChaos("container-kill", "container-kill of the etcd container of leader "+m.Leader, cm.ContainerKillAction, nil, m.Leader), nil
}

// PodFailure makes a follower's containers run the pause image for d: the member is down
// while its pod and volume stay, as a hung process would be.
func (t Target) PodFailure(ctx context.Context, d time.Duration) (Fault, error) {
	m, err := t.Members(ctx)
	if err != nil {
		return Fault{}, err
	}
	if len(m.Followers) == 0 {
		return Fault{}, fmt.Errorf("no follower to fail: the cluster has one member")
	}
	f := t.pick(m.Followers)
	return t.podChaos("pod-failure", fmt.Sprintf("pod-failure of follower %s for %s", f, d), cm.PodFailureAction, ptr.To(d.String()), f), nil
}

func (t Target) network(kind, what string, d time.Duration, spec cm.NetworkChaosSpec) Fault {
	spec.Duration = ptr.To(d.String())
	return Fault{Kind: kind, What: what, Object: &cm.NetworkChaos{ObjectMeta: t.objectMeta(kind), Spec: spec}}
}

// partition cuts every link between the isolated members and the other members given.
func (t Target) partition(kind, what string, d time.Duration, isolated, others []string) Fault {
	target := t.pods(others...)
	return t.network(kind, what, d, cm.NetworkChaosSpec{PodSelector: t.pods(isolated...), Action: cm.PartitionAction,
		Direction: cm.Both, Target: &target})
}

// PartitionLeader cuts the leader off from every other member. Clients still reach it (only
// member-to-member traffic is cut); the others elect a new leader.
func (t Target) PartitionLeader(ctx context.Context, d time.Duration) (Fault, error) {
	m, err := t.Members(ctx)
	if err != nil {
		return Fault{}, err
	}
	if len(m.Followers) == 0 {
		return Fault{}, fmt.Errorf("no follower to partition the leader from")
	}
	f := t.partition("partition-leader", fmt.Sprintf("partition isolating leader %s from %v for %s", m.Leader, m.Followers, d), d, []string{m.Leader}, m.Followers)
	// The writes in flight when the leader is cut off wait out their timeout; the next
	// request of a client can go to the cut-off leader (seen in CI on 2026-11-26: 3.8 s).
	f.CutOff = 2
	return f, nil
}

// PartitionMinority cuts the largest minority of followers off from the rest: the rest keep
// a quorum and the leader.
func (t Target) PartitionMinority(ctx context.Context, d time.Duration) (Fault, error) {
	m, err := t.Members(ctx)
	if err != nil {
		return Fault{}, err
	}
	n := (len(m.All) - 1) / 2
	if n == 0 {
		return Fault{}, fmt.Errorf("a cluster of %d members has no minority to partition", len(m.All))
	}
	minority := m.Followers[:n]
	rest := without(m.All, minority)
	f := t.partition("partition-minority", fmt.Sprintf("partition of minority %v from %v for %s", minority, rest, d), d, minority, rest)
	f.CutOff = len(minority)
	return f, nil
}

// PartitionMajority isolates a majority of the members from every other member, each on its
// own: no side keeps a quorum, so writes must fail until it heals (and nothing may be lost or
// answered twice).
func (t Target) PartitionMajority(ctx context.Context, d time.Duration) (Fault, error) {
	m, err := t.Members(ctx)
	if err != nil {
		return Fault{}, err
	}
	if len(m.All) < 2 {
		return Fault{}, fmt.Errorf("a cluster of %d member cannot be partitioned", len(m.All))
	}
	// The leader and enough followers to make a quorum, each cut off from all members.
	isolated := append([]string{m.Leader}, m.Followers[:len(m.All)/2]...)
	f := t.partition("partition-majority", fmt.Sprintf("partition isolating %v (a majority) from each other and from the rest for %s", isolated, d), d, isolated, m.All)
	f.QuorumLost = true
	return f, nil
}

// Delay adds latency (with 20% jitter) to all traffic between members.
func (t Target) Delay(ctx context.Context, latency, d time.Duration) (Fault, error) {
	m, err := t.Members(ctx)
	if err != nil {
		return Fault{}, err
	}
	target := t.pods(m.All...)
	return t.network("delay", fmt.Sprintf("delay of %s between members %v for %s", latency, m.All, d), d, cm.NetworkChaosSpec{
		PodSelector: t.pods(m.All...), Action: cm.DelayAction, Direction: cm.To, Target: &target,
		TcParameter: cm.TcParameter{Delay: &cm.DelaySpec{Latency: latency.String(), Jitter: (latency / 5).String(), Correlation: "0"}},
	}), nil
}

// Loss drops percent of the packets between members.
func (t Target) Loss(ctx context.Context, percent int, d time.Duration) (Fault, error) {
	m, err := t.Members(ctx)
	if err != nil {
		return Fault{}, err
	}
	target := t.pods(m.All...)
	return t.network("loss", fmt.Sprintf("%d%% packet loss between members %v for %s", percent, m.All, d), d, cm.NetworkChaosSpec{
		PodSelector: t.pods(m.All...), Action: cm.LossAction, Direction: cm.To, Target: &target,
		TcParameter: cm.TcParameter{Loss: &cm.LossSpec{Loss: fmt.Sprint(percent), Correlation: "0"}},
	}), nil
}

// ClockSkew shifts the leader's wall clock (CLOCK_REALTIME) by offset. etcd's raft runs on
// ticks, not on wall time, so this must not cost availability or correctness.
func (t Target) ClockSkew(ctx context.Context, offset, d time.Duration) (Fault, error) {
	m, err := t.Members(ctx)
	if err != nil {
		return Fault{}, err
	}
	return Fault{Kind: "clock-skew", What: fmt.Sprintf("clock of leader %s shifted by %s for %s", m.Leader, offset, d),
		Object: &cm.TimeChaos{ObjectMeta: t.objectMeta("clock-skew"), Spec: cm.TimeChaosSpec{
			ContainerSelector: cm.ContainerSelector{PodSelector: t.pods(m.Leader), ContainerNames: []string{"etcd"}},
			TimeOffset:        offset.String(), Duration: ptr.To(d.String()),
		}}}, nil
}

// OperatorKill is a Schedule that kills the operator's pod (selected by labels in namespace
// ns) every interval, while the scenario makes it work.
func (t Target) OperatorKill(ns string, labels map[string]string, every time.Duration) Fault {
	sel := cm.PodSelector{Mode: cm.AllMode, Selector: cm.PodSelectorSpec{GenericSelectorSpec: cm.GenericSelectorSpec{
		Namespaces: []string{ns}, LabelSelectors: labels}}}
	return Fault{Kind: "operator-kill", What: fmt.Sprintf("operator pod in %s killed every %s", ns, every),
		Object: &cm.Schedule{ObjectMeta: t.objectMeta("operator-kill"), Spec: cm.ScheduleSpec{
			Schedule: "@every " + every.String(), ConcurrencyPolicy: cm.ForbidConcurrent, HistoryLimit: 2, Type: cm.ScheduleTypePodChaos,
			ScheduleItem: cm.ScheduleItem{EmbedChaos: cm.EmbedChaos{PodChaos: &cm.PodChaosSpec{
				ContainerSelector: cm.ContainerSelector{PodSelector: sel}, Action: cm.PodKillAction}}},
		}}}
}

func without(all, drop []string) []string {
	var out []string
	for _, n := range all {
		if !slices.Contains(drop, n) {
			out = append(out, n)
		}
	}
	return out
}
