package etcdcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/statuscond"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
)

// Fencing members at the user's request (planner/userfence.go): the EtcdCluster's
// names.AnnotationFenceMembers names them, the operator puts names.AnnotationStopEtcd on their
// pods, and their launchers stop etcd while the pods stay.

// addUserFence gives the planner the members the user asks to fence and the pods that carry
// the stop annotation.
func (o *observation) addUserFence(c *v1alpha1.EtcdCluster, s *planner.State, members memberTable) {
	s.FenceRequested = planner.ParseFenceMembers(c.Annotations[names.AnnotationFenceMembers])
	for name, p := range o.pods {
		m := members.get(name)
		m.UserFenced = p.Annotations[names.AnnotationStopEtcd] == "true"
		m.LauncherFences = resources.LauncherFences(p)
	}
}

// userFence puts the stop annotation on a member's pod (FenceMember) or removes it
// (UnfenceMember). The merge patch carries the pod's UID, which the API server refuses to
// change: a pod recreated under the name since is not touched. It touches only its own key,
// so it needs no resourceVersion, and patching twice does what patching once did.
func (r *Reconciler) userFence(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation, a planner.Action) error {
	p, ok := o.pods[a.Member]
	if !ok || !p.DeletionTimestamp.IsZero() {
		return nil
	}
	var value any // nil removes the annotation
	event, what := v1alpha1.EventMemberUnfenced, "unfenced "+a.Member+": its etcd starts again"
	if a.Kind == planner.FenceMember {
		value = "true"
		event, what = v1alpha1.EventMemberFenced, "fenced "+a.Member+" at the user's request: its etcd stops (leadership handed over first), its pod stays for investigation; remove it from the annotation "+names.AnnotationFenceMembers+" to unfence"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":         p.UID,
		"annotations": map[string]any{names.AnnotationStopEtcd: value},
	}})
	if err != nil {
		return err
	}
	if err := client.IgnoreNotFound(r.Patch(ctx, p.DeepCopy(), client.RawPatch(types.MergePatchType, patch))); err != nil {
		return fmt.Errorf("%s: %w", a.Message, err)
	}
	logf.FromContext(ctx).Info(a.Message, "member", a.Member)
	r.Recorder.Eventf(c, corev1.EventTypeNormal, event, "%s", what)
	return nil
}

// membersFencedCondition is the MembersFenced condition: True with the fenced members, False
// when none is; its reason is FenceRefused while a fence asked for is refused, and its message
// says why. A cluster whose fence annotation was never used has no such condition.
func membersFencedCondition(c *v1alpha1.EtcdCluster, s planner.State, gen int64) (metav1.Condition, bool) {
	fenced := s.UserFencedMembers()
	_, annotated := c.Annotations[names.AnnotationFenceMembers]
	had := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionMembersFenced) != nil
	if !annotated && !had && len(fenced) == 0 {
		return metav1.Condition{}, false
	}
	reason, msg := v1alpha1.ReasonNoMembersFenced, "no member is fenced"
	if len(fenced) > 0 {
		reason = v1alpha1.ReasonMembersFenced
		// A pod's annotation reaches its launcher when the kubelet next refreshes the pod's
		// downward-API files (up to about a minute): until its etcd stops answering, the member
		// is said to be stopping, not fenced (status.members[].fenced waits too).
		var stopped, stopping []string
		for _, name := range fenced {
			if memberHealthy(s, name) {
				stopping = append(stopping, name)
			} else {
				stopped = append(stopped, name)
			}
		}
		var parts []string
		if len(stopped) > 0 {
			parts = append(parts, "fenced at the user's request (etcd stopped, pods kept): "+strings.Join(stopped, ", "))
		}
		if len(stopping) > 0 {
			parts = append(parts, "fenced at the user's request, etcd still answering until the launcher reads its pod's annotation (within about a minute): "+strings.Join(stopping, ", "))
		}
		msg = fmt.Sprintf("%s; remove them from the annotation %s to unfence", strings.Join(parts, "; "), names.AnnotationFenceMembers)
	}
	if refusal := planner.FenceRefusal(s); refusal != "" {
		reason = v1alpha1.ReasonFenceRefused
		msg = refusal + "; " + msg
	}
	return statuscond.New(v1alpha1.ConditionMembersFenced, len(fenced) > 0, reason, msg, gen), true
}

// memberHealthy: the member named answers, follows a leader and belongs to the cluster.
func memberHealthy(s planner.State, name string) bool {
	for _, m := range s.Members {
		if m.Name == name {
			return m.Healthy(s.ClusterID)
		}
	}
	return false
}
