package etcdcluster

import (
	"errors"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/planner"
)

// Every condition setter is compared whole (conditions carry no timestamp until
// meta.SetStatusCondition stores them).

const gen = 7

func cond(t string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: gen}
}

func TestAvailableCondition(t *testing.T) {
	formed := planner.State{ClusterID: 0xc1, EtcdReachable: true}
	for _, tc := range []struct {
		name  string
		state planner.State
		sum   summary
		want  metav1.Condition
	}{
		{"a healthy quorum with a leader", formed, summary{voters: 3, healthyVoters: 2, leader: "c-0"},
			cond(v1alpha1.ConditionAvailable, metav1.ConditionTrue, v1alpha1.ReasonQuorumHealthy, "2 of 3 voting members healthy; leader c-0")},
		{"before the cluster forms", planner.State{}, summary{},
			cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonBootstrapping, "the cluster has not formed yet")},
		{"a healthy quorum still electing", formed, summary{voters: 3, healthyVoters: 3},
			cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonNoLeader, "a quorum of members is healthy but no leader is elected yet: etcd is holding an election")},
		{"no member answers", planner.State{ClusterID: 0xc1}, summary{voters: 3},
			cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonQuorumLost, "no member answers with quorum: clients cannot write; the operator recreates missing member pods from their volumes")},
		{"too few healthy voters", formed, summary{voters: 5, healthyVoters: 2, leader: "c-0"},
			cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonQuorumLost, "2 of 5 voting members healthy, 3 needed: clients cannot write; the operator recreates missing member pods from their volumes")},
	} {
		if got := availableCondition(tc.state, tc.sum, gen); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// During a join the external voters count: three healthy ones and a learner of the
// operator's that does not answer are a healthy quorum, led by the external leader.
func TestAvailableConditionCountsExternalVoters(t *testing.T) {
	ext := func(name string, id uint64, healthy bool) planner.External {
		return planner.External{Name: name, ID: id, Endpoint: true, Reachable: healthy, ClusterID: 0xc1, HasLeader: healthy}
	}
	s := planner.State{ClusterID: 0xc1, EtcdReachable: true, LeaderID: 0xe1,
		Join: &planner.Join{Started: true, External: []planner.External{ext("vm-0", 0xe1, true), ext("vm-1", 0xe2, true), ext("vm-2", 0xe3, false)}}}
	sum := withExternal(s, summary{learners: 1, unhealthy: []string{"c-0"}})
	if want := (summary{voters: 3, healthyVoters: 2, learners: 1, leader: "vm-0 (external)", unhealthy: []string{"c-0"}}); !reflect.DeepEqual(sum, want) {
		t.Fatalf("withExternal = %+v, want %+v", sum, want)
	}
	want := cond(v1alpha1.ConditionAvailable, metav1.ConditionTrue, v1alpha1.ReasonQuorumHealthy, "2 of 3 voting members healthy; leader vm-0 (external)")
	if got := availableCondition(s, sum, gen); got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	s.Join.Started = false
	if got := withExternal(s, summary{}); !reflect.DeepEqual(got, summary{}) {
		t.Errorf("before the join starts the external members counted: %+v", got)
	}
}

func TestProgressingCondition(t *testing.T) {
	for _, tc := range []struct {
		name   string
		action planner.Action
		err    error
		want   metav1.Condition
	}{
		{"a step that failed is retried", planner.Action{Kind: planner.AddLearner, Reason: v1alpha1.ReasonScaling, Message: "scaling up"}, errors.New("etcdserver: too many learners"),
			cond(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonStepFailed, "AddLearner failed: etcdserver: too many learners; retrying")},
		{"a step in progress", planner.Action{Kind: planner.AddLearner, Reason: v1alpha1.ReasonScaling, Message: "scaling up from 3 to 5 voting members"}, nil,
			cond(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonScaling, "scaling up from 3 to 5 voting members")},
		{"a wait is progress", planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonTerminating, Message: "waiting"}, nil,
			cond(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonTerminating, "waiting")},
		{"settled", planner.Action{Kind: planner.None, Reason: v1alpha1.ReasonSettled, Message: "3 healthy voting members"}, nil,
			cond(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonSettled, "3 healthy voting members")},
		{"halted", planner.Action{Kind: planner.Halt, Reason: v1alpha1.ReasonUnknownMember, Message: "stopped"}, nil,
			cond(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonUnknownMember, "stopped")},
		{"paused", planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonPaused, Message: "paused"}, nil,
			cond(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonPaused, "paused")},
		{"a step without a reason", planner.Action{Kind: planner.Wait}, nil,
			cond(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonUnknown, "")},
	} {
		if got := progressingCondition(tc.action, tc.err, gen); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func TestDegradedCondition(t *testing.T) {
	formed := planner.State{ClusterID: 0xc1, EtcdReachable: true}
	for _, tc := range []struct {
		name   string
		state  planner.State
		action planner.Action
		sum    summary
		want   metav1.Condition
	}{
		{"a halt", formed, planner.Action{Kind: planner.Halt, Reason: v1alpha1.ReasonClusterIDMismatch, Message: "c-1 reports cluster ID bad", Attention: true}, summary{unhealthy: []string{"c-1"}},
			cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonClusterIDMismatch, "c-1 reports cluster ID bad")},
		{"lost data", formed, planner.Action{Kind: planner.Remove, Reason: v1alpha1.ReasonMemberDataLost, Message: "removing c-2", Attention: true}, summary{},
			cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonMemberDataLost, "removing c-2")},
		{"quorum at risk", formed, planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonQuorumAtRisk, Message: "waiting for c-0", Attention: true}, summary{unhealthy: []string{"c-0"}},
			cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonQuorumAtRisk, "waiting for c-0")},
		{"etcd unreachable", planner.State{ClusterID: 0xc1}, planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonEtcdUnreachable, Message: "no member answers"}, summary{},
			cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonEtcdUnreachable, "no member answers")},
		{"unhealthy members", formed, planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonMemberUnhealthy, Message: "x"}, summary{unhealthy: []string{"c-1", "c-2"}},
			cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonMemberUnhealthy, "unhealthy members: c-1, c-2; see their pod logs and events")},
		{"a stuck rollout", formed, planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonRolloutStuck, Message: "the rollout is stopped", Attention: true}, summary{unhealthy: []string{"c-2"}},
			cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonRolloutStuck, "the rollout is stopped")},
		{"an alarm while a raised quota rolls out", planner.State{ClusterID: 0xc1, EtcdReachable: true, Alarms: []string{planner.AlarmNoSpace}},
			planner.Action{Kind: planner.DeletePod, Reason: v1alpha1.ReasonRollingUpdate, Message: "replacing"}, summary{},
			cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonNoSpace, "etcd raised NOSPACE: the database reached spec.etcd.quotaBackendBytes; clients can read and delete but not write until the quota is raised (the operator rolls it out and disarms the alarm) or space is freed")},
		{"nothing wrong", formed, planner.Action{Kind: planner.None, Reason: v1alpha1.ReasonSettled}, summary{},
			cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAllMembersHealthy, "every member is healthy")},
		{"bootstrapping is not degraded", planner.State{}, planner.Action{Kind: planner.Wait, Reason: v1alpha1.ReasonBootstrapping}, summary{},
			cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAllMembersHealthy, "every member is healthy")},
	} {
		if got := degradedCondition(tc.state, tc.action, tc.sum, gen); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func TestAlarmCondition(t *testing.T) {
	for _, tc := range []struct {
		alarms []string
		want   metav1.Condition
	}{
		{nil, cond(v1alpha1.ConditionAlarm, metav1.ConditionFalse, v1alpha1.ReasonNoAlarm, "etcd has raised no alarm")},
		{[]string{planner.AlarmNoSpace}, cond(v1alpha1.ConditionAlarm, metav1.ConditionTrue, v1alpha1.ReasonNoSpace,
			"etcd raised NOSPACE: the database reached spec.etcd.quotaBackendBytes; clients can read and delete but not write until the quota is raised (the operator rolls it out and disarms the alarm) or space is freed")},
		{[]string{planner.AlarmCorrupt, planner.AlarmNoSpace}, cond(v1alpha1.ConditionAlarm, metav1.ConditionTrue, v1alpha1.ReasonCorrupt,
			"etcd raised CORRUPT: a member's data differs from its peers'; etcd refuses writes; the operator compares the voters' data (only while every voter is its own and healthy, and --consistency-check-interval is not 0), replaces the member outside the majority and disarms the alarm once they agree. If Degraded does not name a divergent member within minutes, the comparison cannot run: find the member with etcdctl endpoint hashkv, delete its PVC to have it replaced, then etcdctl alarm disarm (docs/runbooks.md)")},
	} {
		if got := alarmCondition(tc.alarms, gen); got != tc.want {
			t.Errorf("%v:\n got %+v\nwant %+v", tc.alarms, got, tc.want)
		}
	}
}
