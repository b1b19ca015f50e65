package etcdcluster

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
)

// TestNetworkPolicy: one NetworkPolicy per cluster admits peer traffic from members only,
// client traffic from the operator and the named clients, metrics from the named monitoring;
// it follows spec changes, goes when disabled and comes back when enabled; a peer the API
// server refuses stops the pass with a condition that names it, and fixing the spec recovers.
func TestNetworkPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	kubelet(t, ns)
	startOperator(t, ns, fake)

	web := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	prometheus := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "monitoring"}}}
	c := newCluster(ns, "np", 3)
	c.Spec.NetworkPolicy = v1alpha1.NetworkPolicySpec{Clients: []networkingv1.NetworkPolicyPeer{web}, Monitoring: []networkingv1.NetworkPolicyPeer{prometheus}}
	bootstrapCluster(t, c, fake)
	c = getCluster(t, ns, "np")

	tcp := corev1.ProtocolTCP
	port := func(ps ...int) []networkingv1.NetworkPolicyPort {
		var out []networkingv1.NetworkPolicyPort
		for _, p := range ps {
			out = append(out, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: ptr.To(intstr.FromInt(p))})
		}
		return out
	}
	members := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
		"etcd.quorate.dev/cluster": "np", "etcd.quorate.dev/component": "member"}}}
	operator := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "quorate-system"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"control-plane": "controller-manager"}},
	}
	jobs := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{
		MatchLabels:      map[string]string{"etcd.quorate.dev/cluster": "np", "app.kubernetes.io/managed-by": "quorate"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "etcd.quorate.dev/backup", Operator: metav1.LabelSelectorOpExists}}}}
	want := func(clients, monitoring []networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicySpec {
		return networkingv1.NetworkPolicySpec{
			PodSelector: *members.PodSelector,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{Ports: port(2380), From: []networkingv1.NetworkPolicyPeer{members}},
				{Ports: port(2379, 2382), From: clients},
				{Ports: port(2381), From: monitoring},
			},
		}
	}
	key := types.NamespacedName{Namespace: ns, Name: "np"}
	waitPolicy := func(what string, spec *networkingv1.NetworkPolicySpec) {
		t.Helper()
		eventually(t, timeout, what, func() error {
			np := &networkingv1.NetworkPolicy{}
			err := k8s.Get(ctx, key, np)
			if spec == nil {
				if apierrors.IsNotFound(err) {
					return nil
				}
				return fmt.Errorf("NetworkPolicy still there (%v)", err)
			}
			if err != nil {
				return err
			}
			if !equality.Semantic.DeepEqual(np.Spec, *spec) {
				return fmt.Errorf("NetworkPolicy spec\n %+v\nwant\n %+v", np.Spec, *spec)
			}
			assertOwned(t, np, c)
			return nil
		})
	}

	// Named clients never shut out the operator, the members and the backup Jobs.
	spec := want([]networkingv1.NetworkPolicyPeer{operator, members, jobs, web}, []networkingv1.NetworkPolicyPeer{prometheus})
	waitPolicy("the NetworkPolicy admitting members, operator+web and monitoring", &spec)

	// No clients named: anyone may reach the client port; the peer port stays guarded.
	patchCluster(t, ns, "np", func(c *v1alpha1.EtcdCluster) { c.Spec.NetworkPolicy.Clients = nil })
	spec = want(nil, []networkingv1.NetworkPolicyPeer{prometheus})
	waitPolicy("the NetworkPolicy open to every client", &spec)

	// Disabled: deleted, with an Event. Enabled again: back.
	patchCluster(t, ns, "np", func(c *v1alpha1.EtcdCluster) { c.Spec.NetworkPolicy.Enabled = ptr.To(false) })
	waitPolicy("the NetworkPolicy to be deleted", nil)
	assertEvent(t, ns, v1alpha1.EventNetworkPolicyDeleted, "deleted NetworkPolicy np: spec.networkPolicy.enabled is false")
	patchCluster(t, ns, "np", func(c *v1alpha1.EtcdCluster) { c.Spec.NetworkPolicy.Enabled = ptr.To(true) })
	waitPolicy("the NetworkPolicy to be back", &spec)

	// A peer the API server refuses: the pass stops with Degraded naming the NetworkPolicy and
	// the field, the policy in force stays as it was; fixing the spec recovers.
	bad := networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/33"}}
	patchCluster(t, ns, "np", func(c *v1alpha1.EtcdCluster) { c.Spec.NetworkPolicy.Clients = []networkingv1.NetworkPolicyPeer{bad} })
	wantCondition(t, ns, "np", metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonNetworkPolicyNotReady,
		Message: `updating *v1.NetworkPolicy np: NetworkPolicy.networking.k8s.io "np" is invalid: spec.ingress[1].from[3].ipBlock.cidr: Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64); correct spec.networkPolicy (the NetworkPolicy in force is unchanged)`})
	waitPolicy("the NetworkPolicy in force to stay", &spec)
	patchCluster(t, ns, "np", func(c *v1alpha1.EtcdCluster) {
		c.Spec.NetworkPolicy.Clients = []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}}
	})
	spec = want([]networkingv1.NetworkPolicyPeer{operator, members, jobs, {IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}}, []networkingv1.NetworkPolicyPeer{prometheus})
	waitPolicy("the NetworkPolicy with the fixed client", &spec)
	waitFor(t, ns, "np", "Degraded=False", func(c *v1alpha1.EtcdCluster) error {
		if d := condition(c, v1alpha1.ConditionDegraded); d.Status != metav1.ConditionFalse {
			return fmt.Errorf("Degraded=%s/%s: %s", d.Status, d.Reason, d.Message)
		}
		return nil
	})
}
