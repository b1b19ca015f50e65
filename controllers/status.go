package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/version"
)

// recordClusterID settles which cluster ID the members must report, and makes it durable: in
// status, and on every started member's PVC (which survives the loss of status and forbids a
// second bootstrap). It then builds the planner's state.
func (r *Reconciler) recordClusterID(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation) error {
	var id uint64
	if c.Status.ClusterID != "" {
		parsed, err := names.ParseID(c.Status.ClusterID)
		if err != nil {
			return fmt.Errorf("status.clusterID %q is not a hex cluster ID: %w", c.Status.ClusterID, err)
		}
		id = parsed
	}
	if id == 0 {
		for _, n := range sortedKeys(o.pvcs) {
			if v := o.pvcs[n].Annotations[names.AnnotationClusterID]; v != "" {
				if parsed, err := names.ParseID(v); err == nil {
					id = parsed
					r.Recorder.Eventf(c, corev1.EventTypeWarning, "ClusterIDRecovered", "status had no cluster ID; recovered %s from the volume of %s", v, n)
					break
				}
			}
		}
	}
	if id == 0 && o.members != nil && o.listedClusterID != 0 {
		id = o.listedClusterID
		r.Recorder.Eventf(c, corev1.EventTypeNormal, "ClusterBootstrapped", "etcd cluster %s formed with %d members", names.FormatID(id), len(o.members))
	}
	if id != 0 {
		c.Status.ClusterID = names.FormatID(id)
	}
	o.state = o.buildState(c, id, time.Now())
	o.state.RollSettle = r.RollSettle
	if id == 0 || c.Spec.Paused {
		return nil
	}
	for _, m := range o.state.Members {
		p, ok := o.pvcs[m.Name]
		if !ok || !m.Started || !m.InEtcd || m.PVCHasData || !p.DeletionTimestamp.IsZero() {
			continue
		}
		patch := client.MergeFrom(p.DeepCopy())
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[names.AnnotationClusterID] = c.Status.ClusterID
		if err := r.Patch(ctx, p, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("recording the cluster ID on PVC %s: %w", p.Name, err)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// computeStatus derives the whole status from the observation and the planned action.
func (r *Reconciler) computeStatus(c *v1alpha1.EtcdCluster, o *observation, a planner.Action, execErr error) v1alpha1.EtcdClusterStatus {
	st := *c.Status.DeepCopy()
	st.ObservedGeneration = c.Generation
	st.Selector = names.SelectorString(names.MemberSelector(c.Name))
	s := o.state

	// Members as etcd lists them; without a member list, keep the last observed list but mark
	// every member that did not answer now as unhealthy.
	members := []v1alpha1.MemberStatus{}
	voters, healthyVoters, learners := 0, 0, 0
	var minVersion *version.Version
	st.Leader = ""
	for _, m := range s.Members {
		if !m.InEtcd && (s.EtcdReachable || !m.PVCHasData) {
			continue
		}
		ms := v1alpha1.MemberStatus{Name: m.Name, Learner: m.Learner, Healthy: m.Healthy(s.ClusterID)}
		if m.InEtcd {
			ms.ID = names.FormatID(m.ID)
			ms.PeerURL = names.PeerURL(c.Name, c.Namespace, m.Name, c.Spec.TLS.IsEnabled())
		} else if old := findMember(c.Status.Members, m.Name); old != nil {
			ms.ID, ms.PeerURL, ms.Learner = old.ID, old.PeerURL, old.Learner
		}
		if stt, ok := o.statuses[m.Name]; ok {
			ms.Version, ms.DBSize = stt.Version, stt.DBSize
			ms.IsLeader = s.LeaderID != 0 && stt.MemberID == s.LeaderID
			if v, err := version.Parse(stt.Version); err == nil && (minVersion == nil || v.Less(*minVersion)) {
				minVersion = &v
			}
		}
		if ms.IsLeader {
			st.Leader = m.Name
		}
		if ms.Learner {
			learners++
		} else {
			voters++
			if ms.Healthy {
				healthyVoters++
			}
		}
		metrics.MemberHealthy.WithLabelValues(c.Namespace, c.Name, m.Name).Set(boolFloat(ms.Healthy))
		members = append(members, ms)
	}
	for _, old := range c.Status.Members {
		if findMember(members, old.Name) == nil {
			metrics.MemberHealthy.DeleteLabelValues(c.Namespace, c.Name, old.Name)
		}
	}
	if len(members) == 0 {
		members = nil
	}
	st.Members = members
	st.Replicas = int32(voters)
	st.ReadyMembers = int32(healthyVoters)
	if minVersion != nil {
		st.CurrentVersion = minVersion.String()
	}
	metrics.ClusterMembers.WithLabelValues(c.Namespace, c.Name, "voter").Set(float64(voters))
	metrics.ClusterMembers.WithLabelValues(c.Namespace, c.Name, "learner").Set(float64(learners))

	quorum := s.ClusterID != 0 && s.EtcdReachable && voters > 0 && healthyVoters >= planner.Quorum(voters)
	available := quorum && st.Leader != ""
	metrics.ClusterAvailable.WithLabelValues(c.Namespace, c.Name).Set(boolFloat(available))
	gen := c.Generation
	switch {
	case available:
		setCondition(&st, gen, v1alpha1.ConditionAvailable, true, "QuorumHealthy", fmt.Sprintf("%d of %d voting members healthy; leader %s", healthyVoters, voters, st.Leader))
	case s.ClusterID == 0:
		setCondition(&st, gen, v1alpha1.ConditionAvailable, false, planner.ReasonBootstrapping, "the cluster has not formed yet")
	case quorum:
		setCondition(&st, gen, v1alpha1.ConditionAvailable, false, "NoLeader", "a quorum of members is healthy but no leader is elected yet: etcd is holding an election")
	case !s.EtcdReachable:
		setCondition(&st, gen, v1alpha1.ConditionAvailable, false, "QuorumLost",
			"no member answers with quorum: clients cannot write; the operator recreates missing member pods from their volumes")
	default:
		setCondition(&st, gen, v1alpha1.ConditionAvailable, false, "QuorumLost",
			fmt.Sprintf("%d of %d voting members healthy, %d needed: clients cannot write; the operator recreates missing member pods from their volumes", healthyVoters, voters, planner.Quorum(voters)))
	}

	switch {
	case execErr != nil:
		setCondition(&st, gen, v1alpha1.ConditionProgressing, true, "StepFailed", fmt.Sprintf("%s failed: %v; retrying", a.Kind, execErr))
	case a.Kind == planner.None || a.Kind == planner.Halt || a.Reason == planner.ReasonPaused:
		setCondition(&st, gen, v1alpha1.ConditionProgressing, false, a.Reason, a.Message)
	default:
		setCondition(&st, gen, v1alpha1.ConditionProgressing, true, a.Reason, a.Message)
	}

	// A member that was just added and has not started yet is joining, not unhealthy.
	var unhealthy []string
	for _, m := range s.Members {
		if ms := findMember(st.Members, m.Name); ms != nil && !ms.Healthy && (m.Started || !m.InEtcd) {
			unhealthy = append(unhealthy, m.Name)
		}
	}
	switch {
	case a.Kind == planner.Halt:
		setCondition(&st, gen, v1alpha1.ConditionDegraded, true, a.Reason, a.Message)
	case a.Reason == planner.ReasonMemberDataLost || a.Reason == planner.ReasonQuorumAtRisk:
		setCondition(&st, gen, v1alpha1.ConditionDegraded, true, a.Reason, a.Message)
	case s.ClusterID != 0 && !s.EtcdReachable:
		setCondition(&st, gen, v1alpha1.ConditionDegraded, true, planner.ReasonEtcdUnreachable, a.Message)
	case len(unhealthy) > 0:
		setCondition(&st, gen, v1alpha1.ConditionDegraded, true, planner.ReasonMemberUnhealthy,
			fmt.Sprintf("unhealthy members: %s; see their pod logs and events", strings.Join(unhealthy, ", ")))
	default:
		setCondition(&st, gen, v1alpha1.ConditionDegraded, false, "AllMembersHealthy", "every member is healthy")
	}
	return st
}

func findMember(ms []v1alpha1.MemberStatus, name string) *v1alpha1.MemberStatus {
	for i := range ms {
		if ms[i].Name == name {
			return &ms[i]
		}
	}
	return nil
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func setCondition(st *v1alpha1.EtcdClusterStatus, gen int64, t string, status bool, reason, message string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	if reason == "" {
		reason = "Unknown"
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: gen})
}

// updateStatus writes status once, only if it changed, and emits Events on condition changes.
func (r *Reconciler) updateStatus(ctx context.Context, original, c *v1alpha1.EtcdCluster, o *observation, a planner.Action, execErr error) error {
	st := r.computeStatus(c, o, a, execErr)
	r.eventOnTransitions(c, original.Status, st)
	return r.patchStatus(ctx, original, st)
}

// updateStatusError records an error that stopped a pass before planning.
func (r *Reconciler) updateStatusError(ctx context.Context, original, c *v1alpha1.EtcdCluster, reason string, err error) error {
	st := *original.Status.DeepCopy()
	setCondition(&st, c.Generation, v1alpha1.ConditionDegraded, true, reason, err.Error())
	r.eventOnTransitions(c, original.Status, st)
	return r.patchStatus(ctx, original, st)
}

func (r *Reconciler) patchStatus(ctx context.Context, original *v1alpha1.EtcdCluster, st v1alpha1.EtcdClusterStatus) error {
	if equality.Semantic.DeepEqual(original.Status, st) {
		return nil
	}
	updated := original.DeepCopy()
	updated.Status = st
	if err := r.Status().Patch(ctx, updated, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	return nil
}

// eventOnTransitions emits one Event when Available or Degraded changes status or reason.
func (r *Reconciler) eventOnTransitions(c *v1alpha1.EtcdCluster, before, after v1alpha1.EtcdClusterStatus) {
	for _, t := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionDegraded} {
		old, now := meta.FindStatusCondition(before.Conditions, t), meta.FindStatusCondition(after.Conditions, t)
		if now == nil || (old != nil && old.Status == now.Status && old.Reason == now.Reason) {
			continue
		}
		eventType := corev1.EventTypeNormal
		bad := (t == v1alpha1.ConditionDegraded && now.Status == metav1.ConditionTrue) || (t == v1alpha1.ConditionAvailable && now.Status == metav1.ConditionFalse && old != nil)
		if bad {
			eventType = corev1.EventTypeWarning
		}
		if t == v1alpha1.ConditionAvailable && now.Status == metav1.ConditionFalse && old == nil {
			continue // nothing to announce while a new cluster bootstraps
		}
		r.Recorder.Eventf(c, eventType, now.Reason, "%s is %s: %s", t, now.Status, now.Message)
		if now.Reason == planner.ReasonClusterIDMismatch && now.Status == metav1.ConditionTrue {
			metrics.ClusterIDMismatches.WithLabelValues(c.Namespace, c.Name).Inc()
		}
	}
}
