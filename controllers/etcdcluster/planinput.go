package etcdcluster

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/cronspec"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/launcher"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
)

// Settings of the operator that feed the planner.
type Settings struct {
	// RollSettle: how long every member's pod must have been Ready before a rolling update
	// replaces the next one.
	RollSettle time.Duration
	Deadlines  planner.Deadlines
	// MinDefragInterval: a scheduled defragmentation round starts no sooner than this after
	// the last one, however often spec.maintenance.defrag.schedule runs (0: no minimum).
	MinDefragInterval time.Duration
}

// buildState turns the observation into the planner's input. clusterID is the recorded one.
func (o *observation) buildState(c *v1alpha1.EtcdCluster, clusterID uint64, now time.Time, set Settings) planner.State {
	s := o.clusterState(c, clusterID, now, set)
	members := memberTable{cluster: c.Name, byName: map[string]*planner.Member{}}
	o.addEtcdMembers(c, &s, members)
	var leader leaderVote
	o.addStatuses(members, &leader, clusterID)
	o.addPods(members, now, set.Deadlines.Terminating)
	o.addUserFence(c, &s, members)
	o.addVolumes(c, &s, members, now)
	for _, m := range members.byName {
		s.Members = append(s.Members, *m)
	}
	if c.Joining() {
		s.Join = o.joinState(c)
		for _, st := range o.extStatuses {
			leader.follow(st, s.Join.ListedClusterID)
		}
	}
	s.LeaderID = leader.id
	sort.Slice(s.Members, func(i, j int) bool { return s.Members[i].Index < s.Members[j].Index })
	return s
}

// clusterState is the planner's input about the cluster as a whole: its spec, settings,
// alarms, recovery, maintenance and retained volumes.
func (o *observation) clusterState(c *v1alpha1.EtcdCluster, clusterID uint64, now time.Time, set Settings) planner.State {
	s := planner.State{
		Cluster:        c.Name,
		Replicas:       int(c.Spec.Replicas),
		Paused:         c.Spec.Paused,
		ClusterID:      clusterID,
		Version:        c.Spec.Version,
		Image:          c.Spec.Image,
		QuotaBytes:     c.Spec.Etcd.QuotaBackendBytes,
		EtcdReachable:  o.members != nil,
		Alarms:         o.alarmTypes(),
		CorruptMembers: o.corruptMembers(),
		AdoptVolumes:   c.Spec.AdoptRetainedVolumes,
		RollSettle:     set.RollSettle,
		Deadlines:      set.Deadlines,
		Now:            now,
	}
	if c.Spec.Recovery != nil {
		s.Recovery.Requested = c.Spec.Recovery.ForceNewCluster
	}
	s.Defrag = defragPolicy(c, now, set.MinDefragInterval)
	s.DefragNow, s.MoveLeaderNow = onDemand(c)
	hibernationState(c, &s)
	if r := c.Status.Recovery; r != nil {
		s.Recovery.Token, s.Recovery.Phase, s.Recovery.Member = r.Token, r.Phase, r.Member
	}
	s.RetainedVolumes = sortedKeys(o.retained)
	return s
}

// memberTable is the planner's members being built, by name.
type memberTable struct {
	cluster string
	byName  map[string]*planner.Member
}

// get is the member of that name, added when it is not there yet.
func (t memberTable) get(name string) *planner.Member {
	if m, ok := t.byName[name]; ok {
		return m
	}
	idx, _ := names.MemberIndex(t.cluster, name)
	m := &planner.Member{Name: name, Index: idx}
	t.byName[name] = m
	return m
}

// leaderVote finds the leader: the one named by the answer of the highest term from the
// cluster.
type leaderVote struct {
	term, id uint64
}

func (v *leaderVote) follow(st etcd.Status, cluster uint64) {
	if st.Leader != 0 && st.RaftTerm >= v.term && st.ClusterID == cluster {
		v.term, v.id = st.RaftTerm, st.Leader
	}
}

// addEtcdMembers adds etcd's member list: the operator's members, and the unknown ones (an
// external member of a join is neither).
func (o *observation) addEtcdMembers(c *v1alpha1.EtcdCluster, s *planner.State, members memberTable) {
	for _, em := range o.members {
		name, ok := o.memberOf(em)
		if !ok && isExternal(c, em) {
			continue
		}
		if !ok {
			s.UnknownMembers = append(s.UnknownMembers, memberLabel(em))
			continue
		}
		m := members.get(name)
		m.InEtcd, m.ID, m.Started, m.Learner = true, em.ID, em.Started(), em.IsLearner
	}
}

// addStatuses adds what each member answered, and follows the leader it names.
func (o *observation) addStatuses(members memberTable, leader *leaderVote, clusterID uint64) {
	for name, st := range o.statuses {
		m := members.get(name)
		if m.ID != 0 && st.MemberID != m.ID {
			// The pod's address answers as another member (an IP reused after a restart):
			// what it says is not about this member.
			m.PodProblem = fmt.Sprintf("its pod's address answers as member %s, not as %s", names.FormatID(st.MemberID), names.FormatID(m.ID))
			continue
		}
		m.Reachable, m.ClusterID, m.HasLeader = true, st.ClusterID, st.Leader != 0
		m.Version, m.Revision, m.DBSize, m.DBSizeInUse = st.Version, st.Revision, st.DBSize, st.DBSizeInUse
		leader.follow(st, clusterID)
	}
}

// addPods adds what the members' pods show: their age, readiness, spec, and what the launcher
// refused.
func (o *observation) addPods(members memberTable, now time.Time, terminating time.Duration) {
	for name, p := range o.pods {
		m := members.get(name)
		m.HasPod = true
		m.PodTerminating = !p.DeletionTimestamp.IsZero()
		if m.PodTerminating {
			m.TerminatingFor = max(now.Sub(p.DeletionTimestamp.Time), 0)
		}
		m.PodCurrent = p.Annotations[names.AnnotationSpecHash] == o.desiredHash
		m.PodFailed = p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
		m.PodAge = max(now.Sub(p.CreationTimestamp.Time), 0)
		m.Age = m.PodAge
		m.PodForcesNewCluster = resources.ForcesNewCluster(p)
		if p.Labels[names.LabelServing] == "false" {
			m.Unpublished, m.InService = true, o.inService[name]
			// Out since an unknown time (labelled by hand): as long as the wait allows.
			m.UnpublishedFor = planner.ServiceDrainLimit
			if at, err := time.Parse(time.RFC3339, p.Annotations[names.AnnotationUnpublishedAt]); err == nil {
				m.UnpublishedFor = max(now.Sub(at), 0)
			}
		}
		m.DrainRefused = slices.Contains(o.drainRefused, name)
		m.ReadyFor, m.UnreadyFor, m.RunningFor, m.ServedSinceStart = readiness(p, now)
		if refusal := resources.LauncherRefusal(p); refusal != nil {
			m.DataDirLost = refusal.Kind == launcher.RefusalDataLost
			// Only while etcd is down, as below: data put right by hand runs again, and the
			// kubelet's record of the last refusal must not halt the cluster on.
			m.ForeignData = refusal.Kind == launcher.RefusalClusterIDMismatch && m.RunningFor == 0
			if refusal.Kind == launcher.RefusalPeersUnreachable {
				m.PeersUnreachable = refusal.Message
			}
			if refusal.Kind == launcher.RefusalDiskFull {
				m.DiskFull = refusal.Message
			}
			// Only while etcd is down: the kubelet keeps the last termination while the
			// container runs again.
			if refusal.Kind == launcher.RefusalCorruptAtStart && m.RunningFor == 0 {
				m.CorruptAtStart, m.CorruptPeers = true, o.corruptPeers(refusal)
			}
			if refusal.Kind == launcher.RefusalVolumeUnreadable && m.PodProblem == "" {
				m.PodProblem = "its launcher may not read the volume: " + refusal.Message
			}
		}
		if why := resources.PodProblem(p, now, terminating); why != "" && m.PodProblem == "" {
			m.PodProblem = why
		}
	}
}

// corruptPeers are the etcd IDs of the peers a CorruptAtStart refusal names: by ID, or (etcd
// 3.6, which logs their ID as 0) by a peer URL of a member in etcd's member list.
func (o *observation) corruptPeers(refusal *launcher.Refusal) []uint64 {
	ids := launcher.CorruptPeers(refusal)
	for _, u := range launcher.CorruptPeerURLs(refusal) {
		for _, em := range o.members {
			if slices.Contains(em.PeerURLs, u) && !slices.Contains(ids, em.ID) {
				ids = append(ids, em.ID)
			}
		}
	}
	return ids
}

// addVolumes adds what the members' volumes show, and the size the cluster bootstrapped with.
func (o *observation) addVolumes(c *v1alpha1.EtcdCluster, s *planner.State, members memberTable, now time.Time) {
	for name, p := range o.pvcs {
		m := members.get(name)
		m.HasPVC = true
		m.PVCTerminating = !p.DeletionTimestamp.IsZero()
		m.PVCHasData = p.Annotations[names.AnnotationClusterID] != ""
		m.Fenced = p.Annotations[names.AnnotationFenced]
		m.RecoveredBy = p.Annotations[names.AnnotationRecoveredBy]
		o.judgeVolume(c, p, m)
		m.Age = max(m.Age, now.Sub(p.CreationTimestamp.Time))
		if n, err := strconv.Atoi(p.Annotations[resources.AnnotationBootstrapSize]); err == nil && n > s.BootstrapSize {
			s.BootstrapSize = n
		}
	}
}

// judgeVolume compares a member's PVC with spec.storage.
func (o *observation) judgeVolume(c *v1alpha1.EtcdCluster, p *corev1.PersistentVolumeClaim, m *planner.Member) {
	want := c.Spec.Storage
	class := ptr.Deref(p.Spec.StorageClassName, "")
	if want.StorageClassName != nil && *want.StorageClassName != class {
		m.VolumeOutdated = true
		return
	}
	if volumeTooSmall(c, p) {
		if p.Status.Phase != corev1.ClaimBound {
			return // an unbound claim holds nothing yet, and cannot be expanded
		}
		if o.expandable[class] {
			m.VolumeExpand = true
		} else {
			m.VolumeOutdated = true
		}
		return
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending && cond.Status == corev1.ConditionTrue {
			m.VolumeResizePending = true
		}
	}
}

func memberLabel(m etcd.Member) string {
	if m.Name != "" {
		return m.Name + " (" + names.FormatID(m.ID) + ")"
	}
	return names.FormatID(m.ID) + " " + strings.Join(m.PeerURLs, ",")
}

// defragPolicy is spec.maintenance.defrag for the planner: a scheduled round is due once the
// schedule's next time after the last round (or the cluster's creation) has passed; after a
// round, the schedule's first time at least minInterval after it (a round blocks each member
// in turn), so a held-back round still starts at one of the schedule's times.
func defragPolicy(c *v1alpha1.EtcdCluster, now time.Time, minInterval time.Duration) planner.Defrag {
	d := c.Spec.Maintenance.Defrag
	if d == nil {
		return planner.Defrag{}
	}
	p := planner.Defrag{ThresholdPercent: int(ptr.Deref(d.ThresholdPercent, 0)), MinFree: ptr.Deref(d.MinFreeBytes, planner.DefaultDefragMinFree)}
	if sched, err := cronspec.Parse(d.Schedule, 0); err == nil && d.Schedule != "" {
		from := c.CreationTimestamp.Time
		if c.Status.LastDefragTime != nil {
			from = c.Status.LastDefragTime.Time
		}
		next := sched.Next(from)
		if c.Status.LastDefragTime != nil && minInterval > 0 {
			next = sched.Next(from.Add(minInterval - time.Nanosecond))
		}
		p.Due = !next.After(now)
	}
	return p
}

// onDemand is the maintenance asked for by token and not done yet: the round of
// spec.maintenance.defragNow until status.maintenance.defrag records its completion (with the
// members it did so far), and spec.maintenance.moveLeader until status.maintenance.moveLeader
// answers its token.
func onDemand(c *v1alpha1.EtcdCluster) (*planner.DefragRequest, *planner.LeaderRequest) {
	var st v1alpha1.MaintenanceStatus
	if c.Status.Maintenance != nil {
		st = *c.Status.Maintenance
	}
	var defrag *planner.DefragRequest
	if t := c.Spec.Maintenance.DefragNow; t != "" {
		switch d := st.Defrag; {
		case d == nil || d.Token != t:
			defrag = &planner.DefragRequest{Token: t}
		case d.CompletionTime == nil:
			defrag = &planner.DefragRequest{Token: t, Done: slices.Clone(d.Defragmented)}
		}
	}
	var move *planner.LeaderRequest
	if r := c.Spec.Maintenance.MoveLeader; r != nil && r.Token != "" && (st.MoveLeader == nil || st.MoveLeader.Token != r.Token) {
		move = &planner.LeaderRequest{Token: r.Token, To: r.To}
	}
	return defrag, move
}

// readiness reads how long the pod has been Ready, or not Ready, and its etcd container
// running (0 when it is not), and whether the pod has been Ready since that container started.
// A Ready condition that turned False after the container's start means the pod was Ready in
// between: it went False when the container died otherwise, before the next start. Both times
// are kept to the second, so a tie counts as not served; so does a time not known.
func readiness(p *corev1.Pod, now time.Time) (readyFor, unreadyFor, runningFor time.Duration, served bool) {
	var started time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == resources.EtcdContainer && cs.State.Running != nil {
			started = cs.State.Running.StartedAt.Time
			runningFor = max(now.Sub(started), time.Nanosecond)
		}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type != corev1.PodReady {
			continue
		}
		if cond.Status == corev1.ConditionTrue {
			// Ready since a time not known (a kubelet that leaves it out): ready long.
			readyFor = max(now.Sub(cond.LastTransitionTime.Time), time.Nanosecond)
		}
		if cond.LastTransitionTime.IsZero() {
			continue
		}
		served = runningFor > 0 && !started.IsZero() && (readyFor > 0 || cond.LastTransitionTime.After(started))
		if served && readyFor == 0 {
			unreadyFor = max(now.Sub(cond.LastTransitionTime.Time), 0)
		}
	}
	return readyFor, unreadyFor, runningFor, served
}
