package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// hibernatePatch is the merge patch that sets spec.hibernate.
func hibernatePatch(hibernate bool) []byte {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"hibernate": hibernate}})
	return b
}

// hibernationState says whether the operator acted on spec.hibernate of generation gen: its
// Hibernated condition is True (hibernate) or False with reason Awake (wake), for that
// generation. The progress is the condition, or what is awaited.
func hibernationState(c *v1alpha1.EtcdCluster, gen int64, hibernate bool) (bool, string) {
	h := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionHibernated)
	if c.Status.ObservedGeneration < gen || h == nil || h.ObservedGeneration < gen {
		return false, fmt.Sprintf("waiting for the operator to observe generation %d (status describes %d)", gen, c.Status.ObservedGeneration)
	}
	progress := fmt.Sprintf("Hibernated=%s %s: %s", h.Status, h.Reason, h.Message)
	if hibernate {
		return h.Status == metav1.ConditionTrue, progress
	}
	return h.Status == metav1.ConditionFalse && h.Reason == v1alpha1.ReasonAwake, progress
}

// SetHibernate hibernates or wakes a cluster through spec.hibernate and waits until its
// Hibernated condition says so: every member pod stopped, or a quorum answering again.
func (e *Env) SetHibernate(ctx context.Context, name string, hibernate bool, timeout time.Duration) error {
	c, err := e.cluster(ctx, name)
	if err != nil {
		return err
	}
	if !hibernate && !c.Spec.Hibernate && meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionHibernated) == nil {
		fmt.Fprintf(e.Out, "%s is not hibernated (spec.hibernate is false): nothing to wake\n", name)
		return nil
	}
	verb := map[bool]string{true: "hibernating", false: "waking"}[hibernate]
	if err := e.setSwitch(ctx, c, timeout, verb, fmt.Sprintf("spec.hibernate=%t", hibernate), hibernatePatch(hibernate), func(gen int64) (bool, string) {
		return hibernationState(c, gen, hibernate)
	}); err != nil {
		return err
	}
	if hibernate {
		fmt.Fprintf(e.Out, "%s is hibernated: every member pod is stopped, its volumes and Secrets are kept; `kubectl quorate wake %s` brings it back\n", name, name)
	} else {
		fmt.Fprintf(e.Out, "%s is awake: its members restarted from their volumes with cluster ID %s\n", name, orDash(c.Status.ClusterID))
	}
	return nil
}

// hibernation is what status shows of hibernation: the Hibernated condition's reason while
// the cluster hibernates, is hibernated or wakes; "Requested" when spec.hibernate is true and
// the operator has not said anything yet; empty otherwise (Awake, or never hibernated).
func hibernation(c *v1alpha1.EtcdCluster) string {
	h := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionHibernated)
	switch {
	case h == nil && c.Spec.Hibernate:
		return "Requested"
	case h == nil || h.Reason == v1alpha1.ReasonAwake:
		return ""
	}
	return h.Reason
}

// hibernationLine words the hibernation state for the text status.
func hibernationLine(state string) string {
	switch state {
	case v1alpha1.ReasonHibernated:
		return "hibernated (spec.hibernate): every member pod is stopped; `kubectl quorate wake` restarts them"
	case v1alpha1.ReasonHibernating:
		return "hibernating (spec.hibernate): stopping the member pods, the leader last"
	case v1alpha1.ReasonWaking:
		return "waking: the members restart from their volumes"
	}
	return "requested (spec.hibernate): the operator has not acted on it yet"
}
