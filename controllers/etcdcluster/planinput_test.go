package etcdcluster

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/launcher"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
)

// etcd 3.6 names the peers its initial corruption check found different by peer URL (their
// ID logged as 0): the operator reads them as the etcd IDs of the members with those URLs, so
// a member outvoted by both peers is replaced, not left crash-looping forever (found on the
// local cluster by the data-corrupted scenario).
func TestCorruptAtStartPeersByURL(t *testing.T) {
	url := func(m string) string { return "https://" + m + ".etcd-peer.ns.svc:2380" }
	refusal := &launcher.Refusal{Kind: launcher.RefusalCorruptAtStart,
		Message: "etcd's initial corruption check found this member's data differ, at the same revision, from its peers " + url("etcd-1") + "," + url("etcd-2") + "; etcd will not start with them"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-0", Namespace: "ns"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name:                 resources.EtcdContainer,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Message: refusal.Error()}},
		}}}}
	o := &observation{cluster: "etcd", namespace: "ns",
		members: []etcd.Member{
			{ID: 0xa0, Name: "etcd-0", PeerURLs: []string{url("etcd-0")}},
			{ID: 0xa1, Name: "etcd-1", PeerURLs: []string{url("etcd-1")}},
			{ID: 0xa2, Name: "etcd-2", PeerURLs: []string{url("etcd-2")}},
		},
		statuses: map[string]etcd.Status{
			"etcd-1": {ClusterID: 0xc1, MemberID: 0xa1, Leader: 0xa1, RaftTerm: 2},
			"etcd-2": {ClusterID: 0xc1, MemberID: 0xa2, Leader: 0xa1, RaftTerm: 2},
		},
		statusErrs: map[string]error{},
		pods:       map[string]*corev1.Pod{"etcd-0": pod},
	}
	for name := range o.statuses {
		o.pods[name] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ns"}, Spec: v1alpha1.EtcdClusterSpec{Replicas: 3}}
	s := o.buildState(c, 0xc1, time.Now(), Settings{})
	var got planner.Member
	for _, m := range s.Members {
		if m.Name == "etcd-0" {
			got = m
		}
	}
	if !got.CorruptAtStart || !reflect.DeepEqual(got.CorruptPeers, []uint64{0xa1, 0xa2}) {
		t.Fatalf("etcd-0: CorruptAtStart %t, CorruptPeers %x; want true, [a1 a2]", got.CorruptAtStart, got.CorruptPeers)
	}
	a := planner.Plan(s, func(i int) string { return fmt.Sprintf("etcd-%d", i) })
	if a.Kind != planner.Remove || a.Member != "etcd-0" || a.ID != 0xa0 || a.Reason != v1alpha1.ReasonMemberCorrupt {
		t.Fatalf("plan: %+v; want the removal of etcd-0 (a0) for MemberCorrupt", a)
	}
}

// A pod that was Ready after its etcd container started and lost readiness since (a partition,
// no leader) served; one that has not been Ready since the container last started did not,
// whatever it did before a restart (found by campaign run 22 on v1.33.13).
func TestReadinessSinceStart(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	pod := func(ready corev1.ConditionStatus, changed metav1.Time, running *metav1.Time) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: changed}}}}
		cs := corev1.ContainerStatus{Name: resources.EtcdContainer}
		if running != nil {
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: *running}
		} else {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		return p
	}
	ptr := func(t metav1.Time) *metav1.Time { return &t }
	type want struct {
		ready, unready, running time.Duration
		served                  bool
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want want
	}{
		{"ready now", pod(corev1.ConditionTrue, at(time.Minute), ptr(at(time.Hour))), want{time.Minute, 0, time.Hour, true}},
		{"ready, then not: lost its leader", pod(corev1.ConditionFalse, at(20*time.Second), ptr(at(time.Hour))), want{0, 20 * time.Second, time.Hour, true}},
		{"not ready since its start", pod(corev1.ConditionFalse, at(time.Hour+time.Second), ptr(at(time.Hour))), want{0, 0, time.Hour, false}},
		{"went unready in the second it started", pod(corev1.ConditionFalse, at(time.Hour), ptr(at(time.Hour))), want{0, 0, time.Hour, false}},
		{"its container is not running", pod(corev1.ConditionFalse, at(time.Second), nil), want{0, 0, 0, false}},
		{"its container's start not known", pod(corev1.ConditionFalse, at(time.Second), &metav1.Time{}), want{0, 0, now.Sub(time.Time{}), false}},
		{"no time on its Ready condition", pod(corev1.ConditionFalse, metav1.Time{}, ptr(at(time.Hour))), want{0, 0, time.Hour, false}},
		{"ready, since a time not known", pod(corev1.ConditionTrue, metav1.Time{}, ptr(at(time.Hour))), want{now.Sub(time.Time{}), 0, time.Hour, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got want
			got.ready, got.unready, got.running, got.served = readiness(tc.pod, now)
			if got != tc.want {
				t.Errorf("readiness: %+v, want %+v", got, tc.want)
			}
		})
	}
}
