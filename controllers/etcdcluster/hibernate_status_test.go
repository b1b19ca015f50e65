package etcdcluster

import (
	"errors"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/planner"
)

// hibernationStatus over the conditions a pass computed: the Hibernated condition, and
// Available, Degraded and Progressing worded for an outage asked for, compared whole.
func TestHibernationStatus(t *testing.T) {
	const (
		stopped   = "every member pod is stopped; the volumes, Secrets, Services and membership are kept; set spec.hibernate to false to wake the cluster"
		hibAvail  = "hibernating (spec.hibernate): the member pods are stopped, as asked; clients cannot reach the cluster until spec.hibernate is set to false"
		waking    = "spec.hibernate is false: the members restart from their volumes, with their data and cluster ID; waiting for a quorum of them to elect a leader"
		wakeAvail = "waking from hibernation: clients reach the cluster once a quorum of members restarted from their volumes elects a leader"
		awake     = "the cluster woke from hibernation: a quorum of members answers, with a leader"
	)
	// computed: what the other setters made of a cluster without quorum.
	computed := []metav1.Condition{
		cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonQuorumLost, "no member answers"),
		cond(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonEtcdUnreachable, "m"),
		cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonEtcdUnreachable, "m"),
	}
	up := []metav1.Condition{
		cond(v1alpha1.ConditionAvailable, metav1.ConditionTrue, v1alpha1.ReasonQuorumHealthy, "3 of 3"),
		cond(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonSettled, "settled"),
		cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAllMembersHealthy, "every member is healthy"),
	}
	withPod := []planner.Member{{Name: "c-0", HasPod: true}, {Name: "c-1"}}
	noPod := []planner.Member{{Name: "c-0"}, {Name: "c-1"}}
	hib := func(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return cond(v1alpha1.ConditionHibernated, status, reason, msg)
	}
	for _, tc := range []struct {
		name     string
		spec     bool
		previous *metav1.Condition
		state    planner.State
		action   planner.Action
		execErr  error
		computed []metav1.Condition
		want     []metav1.Condition
	}{
		{name: "never hibernated: nothing changes", state: planner.State{ClusterID: 1}, computed: computed, want: computed},
		{name: "stopping pods, quorum still up", spec: true, state: planner.State{ClusterID: 1, Hibernate: true, Members: withPod},
			action: planner.Action{Kind: planner.DeletePod, Reason: v1alpha1.ReasonHibernating, Message: "hibernating: stopping c-0"}, computed: up,
			want: []metav1.Condition{up[0], up[1],
				cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonHibernated, "nothing needs attention: spec.hibernate is true: stopping the member pods one at a time, the leader last (1 left); hibernating: stopping c-0"),
				hib(metav1.ConditionFalse, v1alpha1.ReasonHibernating, "spec.hibernate is true: stopping the member pods one at a time, the leader last (1 left); hibernating: stopping c-0")}},
		{name: "hibernated", spec: true, state: planner.State{ClusterID: 1, Hibernate: true, Members: noPod},
			action: planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonHibernated, Message: "hibernated"}, computed: computed,
			want: []metav1.Condition{
				cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonHibernated, hibAvail),
				cond(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonHibernated, stopped),
				cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonHibernated, "nothing needs attention: "+stopped),
				hib(metav1.ConditionTrue, v1alpha1.ReasonHibernated, stopped)}},
		{name: "hibernated with a defragmentation asked for: Progressing says it waits", spec: true,
			state:  planner.State{ClusterID: 1, Hibernate: true, Members: noPod, DefragNow: &planner.DefragRequest{Token: "d1"}},
			action: planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonHibernated, Message: "hibernated"}, computed: computed,
			want: []metav1.Condition{
				cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonHibernated, hibAvail),
				cond(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonHibernated,
					stopped+`; the defragmentation asked for (spec.maintenance.defragNow "d1") waits for a settled cluster: wake it (spec.hibernate false) first`),
				cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonHibernated, "nothing needs attention: "+stopped),
				hib(metav1.ConditionTrue, v1alpha1.ReasonHibernated, stopped)}},
		{name: "a pod stuck terminating still needs attention", spec: true, state: planner.State{ClusterID: 1, Hibernate: true, Members: withPod},
			action: planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonHibernating, Attention: true, Message: "stuck"}, computed: computed,
			want: []metav1.Condition{
				cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonHibernated, hibAvail),
				computed[1], computed[2],
				hib(metav1.ConditionFalse, v1alpha1.ReasonHibernating, "spec.hibernate is true: stopping the member pods one at a time, the leader last (1 left); stuck")}},
		{name: "waking", previous: ptrCond(hib(metav1.ConditionTrue, v1alpha1.ReasonHibernated, stopped)), state: planner.State{ClusterID: 1, Waking: true, Members: withPod},
			action: planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonWaking, Message: "w"}, computed: computed,
			want: []metav1.Condition{
				cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonWaking, wakeAvail),
				computed[1],
				cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonWaking, "nothing needs attention: "+waking),
				hib(metav1.ConditionFalse, v1alpha1.ReasonWaking, waking)}},
		{name: "a failed step while waking is reported", previous: ptrCond(hib(metav1.ConditionFalse, v1alpha1.ReasonWaking, waking)), state: planner.State{ClusterID: 1, Waking: true},
			action: planner.Action{Kind: planner.CreatePod, Reason: v1alpha1.ReasonWaking}, execErr: errors.New("quota"), computed: computed,
			want: []metav1.Condition{
				cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonWaking, wakeAvail),
				computed[1], computed[2],
				hib(metav1.ConditionFalse, v1alpha1.ReasonWaking, waking)}},
		{name: "awake once a quorum answers", previous: ptrCond(hib(metav1.ConditionFalse, v1alpha1.ReasonWaking, waking)), state: planner.State{ClusterID: 1, Waking: true},
			action: planner.Action{Kind: planner.None, Reason: v1alpha1.ReasonSettled}, computed: up,
			want: append(append([]metav1.Condition{}, up...), hib(metav1.ConditionFalse, v1alpha1.ReasonAwake, awake))},
		{name: "awake stays awake through a later outage", previous: ptrCond(hib(metav1.ConditionFalse, v1alpha1.ReasonAwake, awake)), state: planner.State{ClusterID: 1},
			action: planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonEtcdUnreachable, Attention: true}, computed: computed,
			want: append(append([]metav1.Condition{}, computed...), hib(metav1.ConditionFalse, v1alpha1.ReasonAwake, awake))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster("ns", "c", 3)
			c.Generation, c.Spec.Hibernate = gen, tc.spec
			if tc.previous != nil {
				c.Status.Conditions = []metav1.Condition{*tc.previous}
			}
			st := v1alpha1.EtcdClusterStatus{Conditions: append([]metav1.Condition{}, tc.computed...)}
			hibernationStatus(c, tc.state, tc.action, tc.execErr, &st)
			for i := range st.Conditions {
				st.Conditions[i].LastTransitionTime = metav1.Time{}
			}
			if !reflect.DeepEqual(st.Conditions, tc.want) {
				t.Errorf("conditions:\n got %+v\nwant %+v", st.Conditions, tc.want)
			}
		})
	}
}

func ptrCond(c metav1.Condition) *metav1.Condition { return &c }
