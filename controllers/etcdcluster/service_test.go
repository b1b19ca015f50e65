package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
)

// clientEndpoints plays the EndpointSlice controller for the client Service: one slice that
// lists the given pods.
func clientEndpoints(t *testing.T, ns, cluster string, pods ...string) {
	t.Helper()
	ctx := context.Background()
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.ClientService(cluster) + "-x",
		Labels: map[string]string{discoveryv1.LabelServiceName: names.ClientService(cluster), discoveryv1.LabelManagedBy: endpointSliceController}},
		AddressType: discoveryv1.AddressTypeIPv4}
	uids := podUIDs(t, ns)
	for i, p := range pods {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.9.0.%d", i+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p, UID: uids[p]}})
	}
	existing := &discoveryv1.EndpointSlice{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(es), existing); err != nil {
		if err := k8s.Create(ctx, es); err != nil {
			t.Fatal(err)
		}
		return
	}
	existing.Endpoints = es.Endpoints
	if err := k8s.Update(ctx, existing); err != nil {
		t.Fatal(err)
	}
}

// servingLabels are the members' pods' names.LabelServing, by pod (pods being deleted left out).
func servingLabels(t *testing.T, ns string) map[string]string {
	t.Helper()
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			out[p.Name] = p.Labels[names.LabelServing]
		}
	}
	return out
}

// A rolling update takes each member out of the client Service, waits until the Service's
// EndpointSlices no longer list it, and only then replaces its pod; the new pod serves.
func TestRollTakesAMemberOutOfTheServiceFirst(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	op := startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "svc", 3, fake)
	all := []string{"svc-0", "svc-1", "svc-2"}
	clientEndpoints(t, ns, "svc", all...)
	before := podUIDs(t, ns)

	patchCluster(t, ns, "svc", func(c *v1alpha1.EtcdCluster) { c.Spec.Etcd.QuotaBackendBytes = 300 << 20 })
	var first string
	eventually(t, timeout, "a member out of the Service", func() error {
		for p, v := range servingLabels(t, ns) {
			if v == "false" {
				first = p
				return nil
			}
		}
		return fmt.Errorf("serving labels %v", servingLabels(t, ns))
	})
	waiting := regexp.MustCompile(`^waiting for the client Service to drop the endpoint of ` + first + ` before replacing its pod \([0-9]+s of at most 30s\)$`)
	waitFor(t, ns, "svc", "Progressing: "+waiting.String(), func(c *v1alpha1.EtcdCluster) error {
		if p := condition(c, v1alpha1.ConditionProgressing); p.Status != metav1.ConditionTrue || p.Reason != v1alpha1.ReasonRollingUpdate || !waiting.MatchString(p.Message) {
			return fmt.Errorf("Progressing=%s/%s %q", p.Status, p.Reason, p.Message)
		}
		return nil
	})
	if now := podUIDs(t, ns); now[first] != before[first] {
		t.Fatalf("the pod of %s was replaced while the client Service still listed it", first)
	}
	// The EndpointSlice controller drops it: the roll goes on, and reaches every member.
	clientEndpoints(t, ns, "svc", slices.DeleteFunc(slices.Clone(all), func(p string) bool { return p == first })...)
	eventually(t, timeout, "the pod of "+first+" replaced", func() error {
		if podUIDs(t, ns)[first] == before[first] {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	clientEndpoints(t, ns, "svc")
	waitFor(t, ns, "svc", "settled", settled(3))
	after := podUIDs(t, ns)
	for m, uid := range before {
		if after[m] == uid {
			t.Errorf("the pod of %s was not rolled", m)
		}
	}
	if got, want := servingLabels(t, ns), map[string]string{"svc-0": "true", "svc-1": "true", "svc-2": "true"}; !maps.Equal(got, want) {
		t.Errorf("serving labels after the roll %v, want %v", got, want)
	}
	// Each pod was taken out of the Service before it was deleted.
	for _, m := range all {
		out, deleted := -1, -1
		for i, w := range op.writes.snapshot() {
			if w == "patch *v1.Pod "+m && out < 0 {
				out = i
			}
			if w == "delete *v1.Pod "+m && deleted < 0 {
				deleted = i
			}
		}
		if out < 0 || deleted < 0 || out > deleted {
			t.Errorf("%s: taken out at write %d, deleted at write %d; writes %v", m, out, deleted, op.writes.snapshot())
		}
	}
}

// Pods made by a release before names.LabelServing get it before the client Service selects
// it: a Service changed first would drop every member.
func TestServiceSelectsServingOnlyOnceEveryPodCarriesIt(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	op := startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrap(t, ns, "old", 3, fake)
	op.stop()

	// What an earlier release left: pods without the label, a Service selecting members alone.
	ctx := context.Background()
	for _, m := range []string{"old-0", "old-1", "old-2"} {
		patch := []byte(`[{"op":"remove","path":"/metadata/labels/etcd.quorate.dev~1serving"}]`)
		if err := k8s.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m}}, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.ClientService("old")}, svc); err != nil {
		t.Fatal(err)
	}
	svc.Spec.Selector = names.MemberSelector("old")
	svc.Annotations[names.AnnotationObjectHash] = "an earlier release's"
	if err := k8s.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}

	op = startOperator(t, ns, fake)
	eventually(t, timeout, "the client Service selecting serving pods", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
			return err
		}
		if !maps.Equal(svc.Spec.Selector, names.ServingSelector("old")) {
			return fmt.Errorf("selector %v", svc.Spec.Selector)
		}
		return nil
	})
	if got, want := servingLabels(t, ns), map[string]string{"old-0": "true", "old-1": "true", "old-2": "true"}; !maps.Equal(got, want) {
		t.Errorf("serving labels %v, want %v", got, want)
	}
	writes := op.writes.snapshot()
	service := slices.Index(writes, "update *v1.Service "+names.ClientService("old"))
	for _, m := range []string{"old-0", "old-1", "old-2"} {
		if i := slices.Index(writes, "patch *v1.Pod "+m); i < 0 || i > service {
			t.Errorf("pod %s labelled at write %d, the Service updated at write %d: %v", m, i, service, writes)
		}
	}
}

// On a cluster whose admission forbids changing pod labels (a policy engine's rule, played by
// an interceptor that refuses every patch of a pod's labels as such a rule does), a member that cannot
// leave the client Service is stopped without: the rollout goes on, and an Event names the
// refusal and what to allow.
func TestRollGoesOnWhenPodLabelsMayNotChange(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	var frozen atomic.Bool
	startWith(t, ns, fake, "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) {
		r.Client = interceptor.NewClient(noWatch{r.Client}, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				data, err := p.Data(obj)
				if err != nil {
					return err
				}
				if _, ok := obj.(*corev1.Pod); ok && frozen.Load() && strings.Contains(string(data), `"labels"`) {
					return apierrors.NewForbidden(corev1.Resource("pods"), obj.GetName(), errors.New("pod labels are frozen here"))
				}
				return c.Patch(ctx, obj, p, opts...)
			},
		})
	})
	kubelet(t, ns)
	bootstrap(t, ns, "pol", 3, fake)
	frozen.Store(true)
	before := podUIDs(t, ns)
	patchCluster(t, ns, "pol", func(c *v1alpha1.EtcdCluster) { c.Spec.Etcd.QuotaBackendBytes = 300 << 20 })
	assertEvent(t, ns, v1alpha1.EventServiceDrainRefused, "pod labels are frozen here")
	waitFor(t, ns, "pol", "settled", settled(3))
	after := podUIDs(t, ns)
	for m, uid := range before {
		if after[m] == uid {
			t.Errorf("the pod of %s was not rolled", m)
		}
	}
}
