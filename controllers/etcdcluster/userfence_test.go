package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
)

// podStopAnnotation returns the member pod's stop annotation and UID ("" when it has none).
func podStopAnnotation(t *testing.T, ns, name string) (string, types.UID, error) {
	t.Helper()
	p := &corev1.Pod{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
		return "", "", err
	}
	return p.Annotations[names.AnnotationStopEtcd], p.UID, nil
}

func setFenceAnnotation(t *testing.T, ns, name, value string) {
	t.Helper()
	patchCluster(t, ns, name, func(c *v1alpha1.EtcdCluster) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[names.AnnotationFenceMembers] = value
	})
}

// Fencing at the user's request: the annotation reaches the member's pod (whose launcher stops
// etcd), a fence that would lose the quorum does not, a deleted fenced pod comes back fenced,
// the fenced member is neither removed nor replaced, and unfencing takes the annotation away.
func TestUserFence(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	bootstrap(t, ns, "demo", 3, fake)

	setFenceAnnotation(t, ns, "demo", "demo-2")
	eventually(t, timeout, "demo-2's pod annotated to stop etcd", func() error {
		if v, _, err := podStopAnnotation(t, ns, "demo-2"); err != nil || v != "true" {
			return fmt.Errorf("stop annotation %q (%v); MembersFenced: %+v", v, err, condition(getCluster(t, ns, "demo"), v1alpha1.ConditionMembersFenced))
		}
		return nil
	})
	// Until its launcher stops etcd, the member is said to be stopping, and not fenced.
	wantCondition(t, ns, "demo", metav1.Condition{Type: v1alpha1.ConditionMembersFenced, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonMembersFenced,
		Message: "fenced at the user's request, etcd still answering until the launcher reads its pod's annotation (within about a minute): demo-2; remove them from the annotation etcd.quorate.dev/fence-members to unfence"})
	if m := findMember(getCluster(t, ns, "demo").Status.Members, "demo-2"); m == nil || m.Fenced || !m.Healthy {
		t.Fatalf("demo-2 still serving: status %+v, want healthy and not fenced", m)
	}
	fake.SetDown("demo-2", true) // its launcher stopped etcd
	waitFor(t, ns, "demo", "demo-2 fenced in status", func(c *v1alpha1.EtcdCluster) error {
		if m := findMember(c.Status.Members, "demo-2"); m == nil || !m.Fenced || m.Healthy {
			return fmt.Errorf("demo-2: %+v", m)
		}
		return nil
	})
	fenced := metav1.Condition{Type: v1alpha1.ConditionMembersFenced, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonMembersFenced,
		Message: "fenced at the user's request (etcd stopped, pods kept): demo-2; remove them from the annotation etcd.quorate.dev/fence-members to unfence"}
	wantCondition(t, ns, "demo", fenced)
	assertEvent(t, ns, v1alpha1.EventMemberFenced, "fenced demo-2 at the user's request")

	// A second fence of three would leave one healthy voter: refused, with the arithmetic.
	setFenceAnnotation(t, ns, "demo", "demo-2,demo-1,demo-9")
	refused := metav1.Condition{Type: v1alpha1.ConditionMembersFenced, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonFenceRefused,
		Message: "demo-9: no member of this cluster (its members: demo-0, demo-1, demo-2); remove it from the annotation etcd.quorate.dev/fence-members. " +
			"fencing demo-1 is refused: it would leave 1 healthy, unfenced voter(s) of 3 (demo-0), fewer than a quorum of 2; fenced already: demo-2; bring the unhealthy members back, or unfence others first; " +
			fenced.Message}
	wantCondition(t, ns, "demo", refused)
	assertEvent(t, ns, v1alpha1.ReasonFenceRefused, "fencing demo-1 is refused")
	if v, _, err := podStopAnnotation(t, ns, "demo-1"); err != nil || v != "" {
		t.Fatalf("demo-1's pod: stop annotation %q (%v); the refused fence must not reach it", v, err)
	}

	// Someone deletes the fenced pod: it comes back fenced.
	_, uid, err := podStopAnnotation(t, ns, "demo-2")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-2"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, timeout, "demo-2's pod recreated, fenced", func() error {
		v, now, err := podStopAnnotation(t, ns, "demo-2")
		if err != nil || now == uid || v != "true" {
			return fmt.Errorf("pod %s, stop annotation %q (%v)", now, v, err)
		}
		return nil
	})
	wantCondition(t, ns, "demo", refused)

	// Unfenced: the annotation leaves the pod, the member comes back.
	setFenceAnnotation(t, ns, "demo", "")
	eventually(t, timeout, "demo-2's stop annotation removed", func() error {
		if v, _, err := podStopAnnotation(t, ns, "demo-2"); err != nil || v != "" {
			return fmt.Errorf("stop annotation %q (%v)", v, err)
		}
		return nil
	})
	fake.SetDown("demo-2", false)
	wantCondition(t, ns, "demo", metav1.Condition{Type: v1alpha1.ConditionMembersFenced, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonNoMembersFenced, Message: "no member is fenced"})
	waitFor(t, ns, "demo", "the cluster settled", settled(3))
	assertEvent(t, ns, v1alpha1.EventMemberUnfenced, "unfenced demo-2")
	// The fenced member was never removed nor replaced.
	if calls := slices.DeleteFunc(fake.Calls(), func(c string) bool { return !strings.HasPrefix(c, "Remove ") && !strings.HasPrefix(c, "AddLearner ") }); len(calls) != 0 {
		t.Fatalf("membership changed while a member was fenced: %v", calls)
	}
}
