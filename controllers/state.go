package controllers

import (
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/launcher"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
)

// podRefusal is the launcher's refusal to start etcd, read from the etcd container's
// termination message (of its current or its last run); nil when it did not refuse.
func podRefusal(p *corev1.Pod) *launcher.Refusal {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != resources.EtcdContainer {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t == nil {
				continue
			}
			if r := launcher.ParseTermination(t.Message); r != nil {
				return r
			}
		}
	}
	return nil
}

// buildState turns the observation into the planner's input. clusterID is the recorded one,
// rollSettle the operator's setting.
func (o *observation) buildState(c *v1alpha1.EtcdCluster, clusterID uint64, now time.Time, rollSettle time.Duration) planner.State {
	s := planner.State{
		Cluster:       c.Name,
		Replicas:      int(c.Spec.Replicas),
		Paused:        c.Spec.Paused,
		ClusterID:     clusterID,
		EtcdReachable: o.members != nil,
		RollSettle:    rollSettle,
	}
	byName := map[string]*planner.Member{}
	get := func(name string) *planner.Member {
		if m, ok := byName[name]; ok {
			return m
		}
		idx, _ := names.MemberIndex(c.Name, name)
		m := &planner.Member{Name: name, Index: idx}
		byName[name] = m
		return m
	}
	for _, em := range o.members {
		name, ok := o.memberOf(em)
		if !ok {
			s.UnknownMembers = append(s.UnknownMembers, memberLabel(em))
			continue
		}
		m := get(name)
		m.InEtcd, m.ID, m.Started, m.Learner = true, em.ID, em.Started(), em.IsLearner
	}
	var term uint64
	for name, st := range o.statuses {
		m := get(name)
		m.Reachable, m.ClusterID, m.HasLeader, m.Alarms = true, st.ClusterID, st.Leader != 0, len(st.Errors) > 0
		if st.Leader != 0 && st.RaftTerm >= term && st.ClusterID == clusterID {
			term, s.LeaderID = st.RaftTerm, st.Leader
		}
	}
	for name, p := range o.pods {
		m := get(name)
		m.HasPod = true
		m.PodTerminating = !p.DeletionTimestamp.IsZero()
		m.PodCurrent = p.Annotations[names.AnnotationSpecHash] == o.desiredHash
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				m.ReadyFor = max(now.Sub(cond.LastTransitionTime.Time), 0)
			}
		}
		if refusal := podRefusal(p); refusal != nil {
			m.DataDirLost = refusal.Kind == launcher.RefusalDataLost
			m.ForeignData = refusal.Kind == launcher.RefusalClusterIDMismatch
		}
	}
	for name, p := range o.pvcs {
		m := get(name)
		m.HasPVC = true
		m.PVCTerminating = !p.DeletionTimestamp.IsZero()
		m.PVCHasData = p.Annotations[names.AnnotationClusterID] != ""
		if n, err := strconv.Atoi(p.Annotations[resources.AnnotationBootstrapSize]); err == nil && n > s.BootstrapSize {
			s.BootstrapSize = n
		}
	}
	for _, m := range byName {
		s.Members = append(s.Members, *m)
	}
	sort.Slice(s.Members, func(i, j int) bool { return s.Members[i].Index < s.Members[j].Index })
	return s
}

func memberLabel(m etcd.Member) string {
	if m.Name != "" {
		return m.Name + " (" + names.FormatID(m.ID) + ")"
	}
	return names.FormatID(m.ID) + " " + strings.Join(m.PeerURLs, ",")
}
