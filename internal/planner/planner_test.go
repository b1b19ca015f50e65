package planner

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

const cid = 0xc1

func name(i int) string { return fmt.Sprintf("c-%d", i) }

// healthy returns a started, healthy voter with its pod and volume.
func healthy(i int) Member {
	return Member{Name: name(i), Index: i, InEtcd: true, ID: uint64(100 + i), Started: true,
		Reachable: true, ClusterID: cid, HasLeader: true, Version: "3.6.16", Revision: 1000, DBSize: 1 << 20, DBSizeInUse: 1 << 20,
		HasPod: true, PodCurrent: true, ReadyFor: time.Hour, PodAge: time.Minute, Age: time.Minute, HasPVC: true, PVCHasData: true}
}

func running(n int, mods ...func(*State)) State {
	s := State{Cluster: "c", Replicas: n, ClusterID: cid, Version: "3.6.16", QuotaBytes: 1 << 30, EtcdReachable: true, LeaderID: 100,
		Deadlines: DefaultDeadlines}
	for i := 0; i < n; i++ {
		s.Members = append(s.Members, healthy(i))
	}
	for _, f := range mods {
		f(&s)
	}
	return s
}

// settle asks rolling updates to wait 10s after pods become ready; every pod has been ready long.
func settle(s *State) {
	s.RollSettle = 10 * time.Second
	for i := range s.Members {
		s.Members[i].ReadyFor = time.Hour
	}
}

func replicas(n int) func(*State) { return func(s *State) { s.Replicas = n } }
func member(i int, fs ...func(*Member)) func(*State) {
	return func(s *State) {
		for j := range s.Members {
			if s.Members[j].Index == i {
				for _, f := range fs {
					f(&s.Members[j])
				}
				return
			}
		}
		m := Member{Name: name(i), Index: i}
		for _, f := range fs {
			f(&m)
		}
		s.Members = append(s.Members, m)
	}
}

// leaderless is a member that answers but follows no leader, and so is not ready.
func leaderless(m *Member) { m.HasLeader, m.ReadyFor = false, 0 }

// served is a member whose pod was ready since its etcd container started.
func served(m *Member) { m.ServedSinceStart = true }

// drained is a member the operator took out of the client Service long enough ago, whose
// endpoint is gone.
func drained(m *Member) { m.Unpublished, m.UnpublishedFor = true, time.Minute }

// diskFull is a member whose launcher refused to start etcd on a full volume.
func diskFull(m *Member) {
	m.Reachable, m.HasLeader, m.ReadyFor = false, false, 0
	m.DiskFull = "the volume has 1.0MiB free of 200.0MiB, and etcd needs 64.0MiB to open its write-ahead log"
}

// expand is a member whose volume is smaller than spec.storage.size and can grow in place.
func expand(m *Member) { m.VolumeExpand = true }

func TestPlan(t *testing.T) {
	paused := func(s *State) { s.Paused = true }
	for _, tc := range []struct {
		name  string
		state State
		// want is compared whole, apart from Message, which must contain msg.
		want Action
		msg  string
	}{
		{name: "paused makes no change", state: running(3, replicas(5), paused),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonPaused}, msg: "spec.paused"},
		{name: "fresh cluster bootstraps every member at once", state: State{Cluster: "c", Replicas: 3},
			want: Action{Kind: Bootstrap, Members: []string{"c-0", "c-1", "c-2"}, Reason: v1alpha1.ReasonBootstrapping}},
		{name: "bootstrap keeps the size it started with", state: State{Cluster: "c", Replicas: 5, BootstrapSize: 3,
			Members: []Member{{Name: "c-0", HasPVC: true, HasPod: true}}},
			want: Action{Kind: Bootstrap, Members: []string{"c-0", "c-1", "c-2"}, Reason: v1alpha1.ReasonBootstrapping}},
		{name: "bootstrap objects exist: wait for a leader", state: State{Cluster: "c", Replicas: 1,
			Members: []Member{{Name: "c-0", HasPVC: true, HasPod: true}}},
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonBootstrapping}, msg: "elect a leader"},
		{name: "a bootstrap member that cannot start stops the bootstrap, saying why", state: State{Cluster: "c", Replicas: 1,
			Members: []Member{{Name: "c-0", HasPVC: true, HasPod: true, PodProblem: "its container fetch-snapshot is in CrashLoopBackOff (last exit code 1: refusing the snapshot)"}}},
			want: Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonBootstrapping, Attention: true},
			msg:  "bootstrap member c-0 does not start: its container fetch-snapshot is in CrashLoopBackOff (last exit code 1: refusing the snapshot)"},
		{name: "a volume with data forbids a second bootstrap", state: State{Cluster: "c", Replicas: 3,
			Members: []Member{{Name: "c-1", Index: 1, HasPVC: true, PVCHasData: true}}},
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonBootstrapping}, msg: "instead of bootstrapping"},
		{name: "foreign cluster ID halts", state: running(3, member(1, func(m *Member) { m.ClusterID = 0xbad })),
			want: Action{Kind: Halt, Member: "c-1", Reason: v1alpha1.ReasonClusterIDMismatch, Attention: true}, msg: "reports cluster ID bad"},
		{name: "launcher-reported cluster ID mismatch halts", state: running(3, member(2, func(m *Member) { m.ForeignData = true })),
			want: Action{Kind: Halt, Member: "c-2", Reason: v1alpha1.ReasonClusterIDMismatch, Attention: true}, msg: "another etcd cluster"},
		{name: "a member refused for foreign data whose PVC is being deleted is removed, not halted on", state: running(3, member(2, func(m *Member) {
			m.ForeignData, m.Reachable, m.HasLeader, m.PVCTerminating = true, false, false, true
		})),
			want: Action{Kind: Remove, Member: "c-2", ID: 102, Reason: v1alpha1.ReasonMemberDataLost, Attention: true}, msg: "removing member c-2 because its PersistentVolumeClaim is being deleted"},
		{name: "unknown member halts", state: running(3, func(s *State) { s.UnknownMembers = []string{"intruder"} }),
			want: Action{Kind: Halt, Reason: v1alpha1.ReasonUnknownMember, Attention: true}, msg: "intruder"},
		{name: "unreachable etcd: restart members from their volumes", state: running(3, func(s *State) { s.EtcdReachable = false },
			member(0, func(m *Member) { m.HasPod = false })),
			want: Action{Kind: CreatePod, Member: "c-0", RequireData: true, Reason: v1alpha1.ReasonEtcdUnreachable}},
		{name: "a single member that lost its data is not restarted empty", state: running(1, func(s *State) { s.EtcdReachable = false },
			member(0, func(m *Member) { m.DataDirLost, m.Reachable = true, false })),
			want: Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonMemberDataLost, Attention: true}, msg: "if c-0 held the only copy, restore a backup"},
		{name: "unreachable etcd with every pod present waits", state: running(3, func(s *State) { s.EtcdReachable = false }),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonEtcdUnreachable, Attention: true}, msg: "spec.recovery.forceNewCluster"},
		{name: "scale up adds a learner", state: running(3, replicas(5)),
			want: Action{Kind: AddLearner, Reason: v1alpha1.ReasonScaling}, msg: "from 3 to 5"},
		{name: "a new learner gets a fresh volume", state: running(3, replicas(4),
			member(3, func(m *Member) { m.InEtcd, m.ID, m.Learner = true, 200, true })),
			want: Action{Kind: CreatePVC, Member: "c-3", Reason: v1alpha1.ReasonMembersCreating}},
		{name: "a new learner's pod does not require data", state: running(3, replicas(4),
			member(3, func(m *Member) { m.InEtcd, m.ID, m.Learner, m.HasPVC = true, 200, true, true })),
			want: Action{Kind: CreatePod, Member: "c-3", Reason: v1alpha1.ReasonMembersCreating}},
		{name: "a started learner that answers is promoted", state: running(4, member(3, func(m *Member) { m.Learner = true })),
			want: Action{Kind: Promote, Member: "c-3", ID: 103, Reason: v1alpha1.ReasonScaling}},
		{name: "a learner that does not answer blocks changes", state: running(4, replicas(5), member(3, func(m *Member) { m.Learner, m.Reachable = true, false })),
			want: Action{Kind: Wait, Member: "c-3", Reason: v1alpha1.ReasonMemberUnhealthy}, msg: "does not answer"},
		{name: "scale down removes the highest follower", state: running(5, replicas(3)),
			want: Action{Kind: Remove, Member: "c-4", ID: 104, Reason: v1alpha1.ReasonScaling}, msg: "from 5 to 3"},
		{name: "scale down moves leadership off the member first", state: running(5, replicas(3), func(s *State) { s.LeaderID = 104 }),
			want: Action{Kind: MoveLeader, Member: "c-4", ID: 104, Target: 100, TargetName: "c-0", Reason: v1alpha1.ReasonScaling}},
		{name: "the pod of a removed member is deleted", state: running(3, member(3, func(m *Member) { m.HasPod, m.HasPVC = true, true })),
			want: Action{Kind: DeletePod, Member: "c-3", Reason: v1alpha1.ReasonGarbage}},
		{name: "then its volume", state: running(3, member(3, func(m *Member) { m.HasPVC = true })),
			want: Action{Kind: DeletePVC, Member: "c-3", Reason: v1alpha1.ReasonGarbage}},
		{name: "a volume being deleted is left alone", state: running(3, member(3, func(m *Member) { m.HasPVC, m.PVCTerminating = true, true })),
			want: Action{Kind: None, Reason: v1alpha1.ReasonSettled}},
		{name: "a member whose PVC is gone is removed", state: running(3, member(1, func(m *Member) { m.HasPVC, m.HasPod, m.Reachable = false, false, false })),
			want: Action{Kind: Remove, Member: "c-1", ID: 101, Reason: v1alpha1.ReasonMemberDataLost, Attention: true}, msg: "PersistentVolumeClaim is gone"},
		{name: "a member still serving from a volume being deleted is replaced add-first", state: running(3, member(2, func(m *Member) { m.PVCTerminating = true })),
			want: Action{Kind: AddLearner, Reason: v1alpha1.ReasonReplacingMember, Attention: true}, msg: "replace c-2"},
		{name: "so is a leader", state: running(3, member(0, func(m *Member) { m.PVCTerminating = true })),
			want: Action{Kind: AddLearner, Reason: v1alpha1.ReasonReplacingMember, Attention: true}, msg: "replace c-0"},
		{name: "its replacement is promoted", state: running(3, member(0, func(m *Member) { m.PVCTerminating = true }),
			member(3, func(m *Member) { *m = healthy(3); m.Learner = true })),
			want: Action{Kind: Promote, Member: "c-3", ID: 103, Reason: v1alpha1.ReasonScaling}},
		{name: "then leadership leaves the replaced leader", state: running(3,
			member(0, func(m *Member) { m.PVCTerminating = true }), member(3, func(m *Member) { *m = healthy(3) })),
			want: Action{Kind: MoveLeader, Member: "c-0", ID: 100, Target: 101, TargetName: "c-1", Reason: v1alpha1.ReasonReplacingMember}},
		{name: "a replaced follower goes before a replaced leader", state: running(3,
			member(0, func(m *Member) { m.PVCTerminating = true }), member(2, func(m *Member) { m.PVCTerminating = true }),
			member(3, func(m *Member) { *m = healthy(3) })),
			want: Action{Kind: Remove, Member: "c-2", ID: 102, Reason: v1alpha1.ReasonReplacingMember}, msg: "now that its replacement votes"},
		{name: "a member whose data directory vanished is removed", state: running(3, member(2, func(m *Member) { m.DataDirLost, m.Reachable = true, false })),
			want: Action{Kind: Remove, Member: "c-2", ID: 102, Reason: v1alpha1.ReasonMemberDataLost, Attention: true}, msg: "data directory is gone"},
		{name: "a gone member is removed before replacing one still serving", state: running(3,
			member(0, func(m *Member) { m.HasPVC, m.HasPod, m.Reachable = false, false, false }), member(1, func(m *Member) { m.PVCTerminating = true })),
			want: Action{Kind: Remove, Member: "c-0", ID: 100, Reason: v1alpha1.ReasonMemberDataLost, Attention: true}},
		{name: "no replacement that would lose quorum", state: running(3,
			member(1, func(m *Member) { m.HasPVC, m.Reachable = false, false }),
			member(2, func(m *Member) { m.Reachable = false })),
			want: Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonQuorumAtRisk, Attention: true}, msg: "only 1 other voters are healthy"},
		{name: "a missing pod of a started member requires its data", state: running(3, member(1, func(m *Member) { m.HasPod, m.Reachable = false, false })),
			want: Action{Kind: CreatePod, Member: "c-1", RequireData: true, Reason: v1alpha1.ReasonMembersCreating}},
		{name: "a terminating pod is waited for", state: running(3, member(1, func(m *Member) { m.PodTerminating = true })),
			want: Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonTerminating}},
		{name: "an unhealthy member blocks scaling", state: running(3, replicas(5), member(2, func(m *Member) { m.HasLeader = false })),
			want: Action{Kind: Wait, Member: "c-2", Reason: v1alpha1.ReasonMemberUnhealthy}, msg: "has no leader"},
		{name: "an alarm does not block scaling", state: running(3, replicas(5), func(s *State) { s.Alarms = []string{AlarmNoSpace} }),
			want: Action{Kind: AddLearner, Reason: v1alpha1.ReasonScaling}},
		{name: "rollout replaces the highest outdated follower first", state: running(3,
			member(0, func(m *Member) { m.PodCurrent = false }), member(1, drained, func(m *Member) { m.PodCurrent = false })),
			want: Action{Kind: DeletePod, Member: "c-1", Reason: v1alpha1.ReasonRollingUpdate}},
		{name: "rollout moves leadership before replacing the leader", state: running(3, member(0, drained, func(m *Member) { m.PodCurrent = false })),
			want: Action{Kind: MoveLeader, Member: "c-0", ID: 100, Target: 101, TargetName: "c-1", Reason: v1alpha1.ReasonRollingUpdate}},
		{name: "rollout waits until every pod has been ready long enough", state: running(3, settle,
			member(0, func(m *Member) { m.PodCurrent = false }), member(2, func(m *Member) { m.ReadyFor = 3 * time.Second })),
			want: Action{Kind: Wait, Member: "c-2", Reason: v1alpha1.ReasonRollingUpdate, Retry: 7 * time.Second}, msg: "ready for 10s"},
		{name: "rollout waits for a pod that is not ready yet until it is", state: running(3, settle,
			member(0, func(m *Member) { m.PodCurrent = false }), member(2, func(m *Member) { m.ReadyFor = 0 })),
			want: Action{Kind: Wait, Member: "c-2", Reason: v1alpha1.ReasonRollingUpdate}, msg: "ready for 10s"},
		{name: "rollout goes on once every pod has been ready long enough", state: running(3, settle,
			member(0, drained, func(m *Member) { m.PodCurrent = false }), member(2, func(m *Member) { m.ReadyFor = 10 * time.Second })),
			want: Action{Kind: MoveLeader, Member: "c-0", ID: 100, Target: 101, TargetName: "c-1", Reason: v1alpha1.ReasonRollingUpdate}},
		{name: "a settled cluster with a freshly ready pod does nothing", state: running(3, settle, member(2, func(m *Member) { m.ReadyFor = time.Second })),
			want: Action{Kind: None, Reason: v1alpha1.ReasonSettled}},
		{name: "a single member is replaced in place", state: running(1, member(0, func(m *Member) { m.PodCurrent = false })),
			want: Action{Kind: DeletePod, Member: "c-0", Reason: v1alpha1.ReasonRollingUpdate}},
		// Pods that cannot come back by themselves are replaced even while the gate is closed.
		{name: "a pod that ended is replaced", state: running(3, member(1, func(m *Member) { m.PodFailed, m.Reachable = true, false })),
			want: Action{Kind: DeletePod, Member: "c-1", Reason: v1alpha1.ReasonPodEnded}, msg: "ended"},
		{name: "an outdated pod that is down gets the current spec while another member is down", state: running(3,
			member(1, func(m *Member) { m.Reachable = false }),
			member(2, func(m *Member) { m.PodCurrent, m.ReadyFor, m.Reachable = false, 0, false })),
			want: Action{Kind: DeletePod, Member: "c-2", Reason: v1alpha1.ReasonRollingUpdate}, msg: "which is down"},
		// Campaign run 22 on v1.33.13: a partition cut two of five members off while a third
		// was being replaced, and no side had quorum; the pods of the members, outdated and not
		// ready for want of a leader, must not be replaced: each holds a vote.
		{name: "an outdated pod that served and lost its leader is not replaced without quorum", state: running(5,
			member(0, leaderless, served, func(m *Member) { m.PodCurrent, m.UnreadyFor = false, 40*time.Second }),
			member(1, leaderless, served, func(m *Member) { m.PodCurrent = false }),
			member(2, leaderless, served, func(m *Member) { m.PodCurrent = false }),
			member(3, leaderless, served, func(m *Member) { m.PodCurrent = false }),
			member(4, func(m *Member) { m.Reachable, m.HasLeader, m.ReadyFor, m.PodAge = false, false, 0, 10*time.Second })),
			want: Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonMemberUnhealthy},
			msg: "member c-0 has no leader; the pod of c-0, built from an older spec, served since it started and is kept while the cluster has no quorum, " +
				"since its vote may bring quorum back: it is given the current spec in 2m20s if quorum is not back by then; membership changes wait until every member is healthy"},
		{name: "an outdated pod that served, cut off from a healthy majority, is replaced", state: running(3,
			member(2, leaderless, served, func(m *Member) { m.PodCurrent = false })),
			want: Action{Kind: DeletePod, Member: "c-2", Reason: v1alpha1.ReasonRollingUpdate},
			msg:  "replacing the pod of c-2, which is not ready beside a healthy majority, with the current spec"},
		{name: "an outdated pod that served and the operator cannot reach is not replaced without quorum", state: running(3,
			member(0, leaderless, served), member(1, leaderless, served),
			member(2, served, func(m *Member) {
				m.PodCurrent, m.Reachable, m.HasLeader, m.ReadyFor, m.UnreadyFor = false, false, false, 0, 179*time.Second+600*time.Millisecond
			})),
			want: Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonMemberUnhealthy},
			msg: "member c-0 has no leader; the pod of c-2, built from an older spec, served since it started and is kept while the cluster has no quorum, " +
				"since its vote may bring quorum back: it is given the current spec in 1s if quorum is not back by then; membership changes wait until every member is healthy"},
		// A spec that broke the cluster only once a majority ran it (an election timeout too
		// short for the disks): its pods served, then lost their leader; set back, they are
		// replaced once they have been unready past the start deadline.
		{name: "an outdated pod that served is replaced without quorum past the start deadline", state: running(3,
			member(0, leaderless, served, func(m *Member) { m.PodCurrent, m.UnreadyFor = false, 4*time.Minute }),
			member(1, leaderless, served, func(m *Member) { m.PodCurrent, m.UnreadyFor = false, 4*time.Minute }),
			member(2, leaderless, served)),
			want: Action{Kind: DeletePod, Member: "c-0", Reason: v1alpha1.ReasonRollingUpdate},
			msg:  "replacing the pod of c-0, which has not been ready for 4m0s without quorum, with the current spec"},
		// A spec that broke the peers of a two-member cluster and was set back: the pod it
		// built answers without a leader and never served; it is given the current spec.
		{name: "an outdated pod that never served is replaced without quorum", state: running(2,
			member(0, leaderless, served),
			member(1, leaderless, func(m *Member) { m.PodCurrent = false })),
			want: Action{Kind: DeletePod, Member: "c-1", Reason: v1alpha1.ReasonRollingUpdate},
			msg:  "replacing the pod of c-1, which has not been ready since it started, with the current spec"},
		{name: "an outdated pod that still answers is not replaced out of turn", state: running(3,
			member(1, func(m *Member) { m.Reachable = false }), member(2, func(m *Member) { m.PodCurrent = false })),
			want: Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonMemberUnhealthy}, msg: "does not answer"},
		{name: "a rollout stops at a new pod that cannot start, with the cause", state: running(3,
			member(0, func(m *Member) { m.PodCurrent = false }), member(1, func(m *Member) { m.PodCurrent = false }),
			member(2, func(m *Member) {
				m.Reachable, m.ReadyFor, m.PodAge = false, 0, 20*time.Second
				m.PodProblem = `its container etcd is in ImagePullBackOff: Back-off pulling image "etcd:v9"`
			})),
			want: Action{Kind: Wait, Member: "c-2", Reason: v1alpha1.ReasonRolloutStuck, Attention: true}, msg: "runs the new spec but does not answer (its container etcd is in ImagePullBackOff"},
		{name: "a rollout stops at a new pod unready past the deadline", state: running(3,
			member(0, func(m *Member) { m.PodCurrent = false }),
			member(2, func(m *Member) { m.Reachable, m.ReadyFor, m.PodAge = false, 0, 4*time.Minute })),
			want: Action{Kind: Wait, Member: "c-2", Reason: v1alpha1.ReasonRolloutStuck, Attention: true}},
		{name: "a new pod still starting is waited for", state: running(3,
			member(0, func(m *Member) { m.PodCurrent = false }),
			member(2, func(m *Member) { m.Reachable, m.ReadyFor, m.PodAge = false, 0, 10*time.Second })),
			want: Action{Kind: Wait, Member: "c-2", Reason: v1alpha1.ReasonMemberUnhealthy}},
		{name: "a broken member outside a rollout is reported with its cause", state: running(3,
			member(2, func(m *Member) {
				m.Reachable, m.PodProblem = false, "its pod cannot be scheduled: 0/1 nodes are available"
			})),
			want: Action{Kind: Wait, Member: "c-2", Reason: v1alpha1.ReasonMemberUnhealthy, Attention: true}, msg: "cannot be scheduled"},
		// Version rules, checked against what the members run.
		{name: "skipping the 3.6 upgrade floor is refused", state: running(3, func(s *State) {
			for i := range s.Members {
				s.Members[i].Version, s.Members[i].PodCurrent = "3.5.20", false
			}
		}), want: Action{Kind: Wait, Reason: v1alpha1.ReasonVersionChangeRefused, Attention: true}, msg: "first upgrade to 3.5.26"},
		{name: "a downgrade from 3.6 is refused", state: running(3, func(s *State) {
			s.Version = "3.5.35"
			for i := range s.Members {
				s.Members[i].PodCurrent = false
			}
		}), want: Action{Kind: Wait, Reason: v1alpha1.ReasonVersionChangeRefused, Attention: true}, msg: "cannot be downgraded"},
		{name: "an unknown release is refused with the supported ones", state: running(3, func(s *State) {
			s.Version = "3.6.99"
			s.Members[0].PodCurrent = false
		}), want: Action{Kind: Wait, Reason: v1alpha1.ReasonVersionChangeRefused, Attention: true}, msg: "it runs 3.5.0 to 3.5.35 and 3.6.0 to 3.6.16"},
		{name: "setting back a change no member applied rolls nothing", state: running(3, func(s *State) { s.Version = "3.6.16" }),
			want: Action{Kind: None, Reason: v1alpha1.ReasonSettled}},
		{name: "an image that runs another release than spec.version stops the rollout", state: running(3, func(s *State) {
			s.Image = "mirror/etcd@sha256:abc"
			s.Members[0].PodCurrent = false
			s.Members[2].Version = "3.6.15"
		}), want: Action{Kind: Wait, Reason: v1alpha1.ReasonVersionChangeRefused, Attention: true}, msg: "member c-2 runs etcd 3.6.15 from spec.image mirror/etcd@sha256:abc, but spec.version is 3.6.16"},
		{name: "a 3.5 to 3.6 rollout in progress goes on", state: running(3, func(s *State) {
			s.Members[0].Version, s.Members[0].PodCurrent = "3.5.35", false
			s.Members[1].Version, s.Members[1].PodCurrent = "3.5.35", false
			drained(&s.Members[1])
		}), want: Action{Kind: DeletePod, Member: "c-1", Reason: v1alpha1.ReasonRollingUpdate}},
		// Learners.
		{name: "lowering replicas cancels a learner", state: running(3, member(3, func(m *Member) { *m = healthy(3); m.Learner = true })),
			want: Action{Kind: Remove, Member: "c-3", ID: 103, Reason: v1alpha1.ReasonScaling}, msg: "no longer needs it"},
		{name: "a learner that did not start in time is removed", state: running(3, replicas(4),
			member(3, func(m *Member) {
				m.InEtcd, m.ID, m.Learner, m.HasPVC, m.HasPod, m.PodCurrent, m.Age = true, 200, true, true, true, true, 11*time.Minute
				m.PodProblem = "its pod cannot be scheduled: no node"
			})),
			want: Action{Kind: Remove, Member: "c-3", ID: 200, Reason: v1alpha1.ReasonLearnerStuck, Attention: true}, msg: "did not start (its pod cannot be scheduled: no node) within 10m0s"},
		{name: "a learner that did not catch up in time is removed", state: running(3, replicas(4),
			member(3, func(m *Member) { *m = healthy(3); m.Learner, m.Age = true, 11*time.Minute })),
			want: Action{Kind: Remove, Member: "c-3", ID: 103, Reason: v1alpha1.ReasonLearnerStuck, Attention: true}, msg: "did not catch up"},
		// A pod stuck terminating holds up only its own member.
		{name: "a pod stuck terminating does not hold up another member's pod", state: running(3,
			member(1, func(m *Member) { m.PodTerminating, m.TerminatingFor, m.Reachable = true, 5*time.Minute, false }),
			member(2, func(m *Member) { m.HasPod, m.Reachable = false, false })),
			want: Action{Kind: CreatePod, Member: "c-2", RequireData: true, Reason: v1alpha1.ReasonMembersCreating}},
		// Alarms.
		{name: "NOSPACE is disarmed once the database fits the quota", state: running(3, func(s *State) { s.Alarms = []string{AlarmNoSpace} }),
			want: Action{Kind: Disarm, Reason: v1alpha1.ReasonNoSpace}, msg: "disarming NOSPACE"},
		{name: "free pages are returned first, followers first", state: running(3, func(s *State) {
			s.Alarms, s.QuotaBytes = []string{AlarmNoSpace}, 16<<20
			for i := range s.Members {
				s.Members[i].DBSize, s.Members[i].DBSizeInUse = 20<<20, 8<<20
			}
		}), want: Action{Kind: Defragment, Member: "c-1", Reason: v1alpha1.ReasonNoSpace, Attention: true}},
		{name: "a full database waits for a larger quota", state: running(3, func(s *State) {
			s.Alarms, s.QuotaBytes = []string{AlarmNoSpace}, 16<<20
			for i := range s.Members {
				s.Members[i].DBSize, s.Members[i].DBSizeInUse = 17<<20, 17<<20
			}
		}), want: Action{Kind: Wait, Reason: v1alpha1.ReasonNoSpace, Attention: true}, msg: "raise spec.etcd.quotaBackendBytes"},
		{name: "a raised quota is rolled out despite NOSPACE", state: running(3, func(s *State) {
			s.Alarms, s.QuotaBytes = []string{AlarmNoSpace}, 16<<20
			s.Members[2].PodCurrent = false
			drained(&s.Members[2])
		}), want: Action{Kind: DeletePod, Member: "c-2", Reason: v1alpha1.ReasonRollingUpdate}},
		{name: "CORRUPT is never disarmed by the operator", state: running(3, func(s *State) { s.Alarms = []string{AlarmCorrupt} }),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonCorrupt, Attention: true}, msg: "CORRUPT"},
		// Volumes retained by an earlier EtcdCluster of the same name.
		{name: "retained volumes stop the operator", state: State{Cluster: "c", Replicas: 3, RetainedVolumes: []string{"c-0", "c-1"}},
			want: Action{Kind: Halt, Reason: v1alpha1.ReasonRetainedVolumes, Attention: true}, msg: "c-0, c-1 were retained from an earlier EtcdCluster named c"},
		{name: "they are adopted when the spec asks", state: State{Cluster: "c", Replicas: 3, RetainedVolumes: []string{"c-0"}, AdoptVolumes: true},
			want: Action{Kind: AdoptVolumes, Reason: v1alpha1.ReasonAdoptingVolumes}},
		{name: "unreachable etcd: a pod that ended is replaced", state: running(3, func(s *State) { s.EtcdReachable = false },
			member(0, func(m *Member) { m.PodFailed = true })),
			want: Action{Kind: DeletePod, Member: "c-0", Reason: v1alpha1.ReasonEtcdUnreachable}},
		// Storage changes.
		{name: "a volume in another class moves to a new one, add-first", state: running(3, member(1, func(m *Member) { m.VolumeOutdated = true })),
			want: Action{Kind: AddLearner, Reason: v1alpha1.ReasonMigratingStorage}, msg: "replace c-1, whose volume does not match spec.storage"},
		{name: "a member losing its volume goes before one changing class", state: running(3,
			member(1, func(m *Member) { m.VolumeOutdated = true }), member(2, func(m *Member) { m.PVCTerminating = true })),
			want: Action{Kind: AddLearner, Reason: v1alpha1.ReasonReplacingMember, Attention: true}, msg: "replace c-2"},
		{name: "a volume that can grow in place is expanded", state: running(3, member(2, func(m *Member) { m.VolumeExpand = true })),
			want: Action{Kind: ExpandVolume, Member: "c-2", Reason: v1alpha1.ReasonMigratingStorage}},
		// Full disks (issue 39 #1): every member refused to start on a full volume.
		{name: "full disks everywhere: no advice to force a new cluster", state: running(3, func(s *State) { s.EtcdReachable = false },
			member(0, diskFull), member(1, diskFull), member(2, diskFull)),
			want: Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonDiskFull, Attention: true}, msg: "member c-0 cannot start: the volume has 1.0MiB free"},
		{name: "full disks everywhere: a larger size is acted on without quorum", state: running(3, func(s *State) { s.EtcdReachable = false },
			member(0, diskFull), member(1, diskFull, expand), member(2, diskFull, expand)),
			want: Action{Kind: ExpandVolume, Member: "c-1", Reason: v1alpha1.ReasonMigratingStorage}},
		{name: "one full disk: a larger size goes before the health gate", state: running(3, member(1, diskFull, expand), member(2, expand)),
			want: Action{Kind: ExpandVolume, Member: "c-1", Reason: v1alpha1.ReasonMigratingStorage}},
		{name: "one full disk: the member waits, saying why", state: running(3, member(1, diskFull)),
			want: Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonDiskFull, Attention: true}, msg: "do not force a new cluster"},
		{name: "an expanded volume's file system grows with a pod restart", state: running(3, member(2, drained, func(m *Member) { m.VolumeResizePending = true })),
			want: Action{Kind: DeletePod, Member: "c-2", Reason: v1alpha1.ReasonRollingUpdate}, msg: "grow its file system"},
		{name: "steady state does nothing", state: running(3),
			want: Action{Kind: None, Reason: v1alpha1.ReasonSettled}, msg: "3 healthy voting members"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Plan(tc.state, name)
			if a.Message == "" || !strings.Contains(a.Message, tc.msg) {
				t.Errorf("message %q does not contain %q", a.Message, tc.msg)
			}
			got := a
			got.Message = ""
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Plan =\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

func TestFreeName(t *testing.T) {
	s := running(3, member(4, func(m *Member) { m.HasPVC = true }))
	s.Members = slices.DeleteFunc(s.Members, func(m Member) bool { return m.Index == 1 })
	if got := s.FreeName(name); got != "c-1" {
		t.Errorf("FreeName = %s, want c-1", got)
	}
}

// sim is a minimal model of a cluster that executes the planner's actions, to check the
// sequence of steps the planner produces for whole scaling journeys.
type sim struct {
	s       State
	nextID  uint64
	changes []string
}

func (x *sim) apply(t *testing.T, a Action) {
	t.Helper()
	s := &x.s
	idx := func(n string) int {
		for i, m := range s.Members {
			if m.Name == n {
				return i
			}
		}
		t.Fatalf("no member %s", n)
		return -1
	}
	switch a.Kind {
	case AddLearner:
		n := s.FreeName(name)
		var i int
		if _, err := fmt.Sscanf(n, "c-%d", &i); err != nil {
			t.Fatalf("FreeName gave %q: %v", n, err)
		}
		x.nextID++
		s.Members = append(s.Members, Member{Name: n, Index: i, InEtcd: true, ID: x.nextID, Learner: true})
		x.changes = append(x.changes, "add "+n)
	case CreatePVC:
		s.Members[idx(a.Member)].HasPVC = true
	case CreatePod:
		m := &s.Members[idx(a.Member)]
		m.HasPod, m.PodCurrent, m.Started, m.Reachable, m.ClusterID, m.HasLeader, m.PVCHasData = true, true, true, true, cid, true, true
		m.ReadyFor, m.Version, m.PodForcesNewCluster = time.Hour, s.Version, a.ForceNewCluster
		if a.ForceNewCluster {
			// Every other member must be stopped and fenced before one is forced.
			for _, o := range s.Members {
				if o.Name != a.Member && (o.HasPod || (o.HasPVC && o.Fenced != s.Recovery.Token)) {
					t.Errorf("%s is forced while %s has a pod (%v) or an unfenced volume (fenced %q)", a.Member, o.Name, o.HasPod, o.Fenced)
				}
			}
			// --force-new-cluster: the member alone, leading, with the cluster ID.
			for i := range s.Members {
				if s.Members[i].Name != a.Member {
					s.Members[i].InEtcd = false
				}
			}
			s.EtcdReachable, s.LeaderID, m.InEtcd, m.Learner = true, m.ID, true, false
		}
	case StartRecovery:
		s.Recovery.Token, s.Recovery.Phase, s.Recovery.Member = s.Recovery.Requested, v1alpha1.RecoveryRestarting, a.Member
		x.changes = append(x.changes, fmt.Sprintf("recover-from %s@%d", a.Member, a.Revision))
	case RecoveryPhase:
		if a.Phase == v1alpha1.RecoveryNotNeeded {
			s.Recovery.Token = s.Recovery.Requested
		}
		s.Recovery.Phase = a.Phase
		x.changes = append(x.changes, "recovery "+a.Phase)
	case Promote:
		s.Members[idx(a.Member)].Learner = false
		x.changes = append(x.changes, "promote "+a.Member)
	case Remove:
		m := &s.Members[idx(a.Member)]
		m.InEtcd, m.Started, m.Reachable = false, false, false
		x.changes = append(x.changes, "remove "+a.Member)
	case MoveLeader:
		s.LeaderID = a.Target
		x.changes = append(x.changes, "move-leader "+a.TargetName)
	case DeletePod:
		m := &s.Members[idx(a.Member)]
		m.HasPod, m.Reachable, m.HasLeader, m.PodForcesNewCluster = false, false, false, false
		if m.PVCTerminating {
			// The PVC-protection controller lets the volume go once no pod uses it.
			m.HasPVC, m.PVCTerminating = false, false
		}
	case DeletePVC:
		s.Members[idx(a.Member)].HasPVC = false
	case Fence:
		s.Members[idx(a.Member)].Fenced = a.Token
		x.changes = append(x.changes, "fence "+a.Member)
	case MarkRecovered:
		s.Members[idx(a.Member)].RecoveredBy = a.Token
	default:
		t.Fatalf("unexpected action %v", a)
	}
	// A name with no etcd member, Pod or PVC is no longer observed at all.
	s.Members = slices.DeleteFunc(s.Members, func(m Member) bool { return !m.InEtcd && !m.HasPod && !m.HasPVC })
}

// check asserts the invariants every intermediate state must keep.
func (x *sim) check(t *testing.T) {
	t.Helper()
	learners, voters := 0, 0
	for _, m := range x.s.Members {
		if m.InEtcd && m.Learner {
			learners++
		}
		if m.InEtcd && !m.Learner {
			voters++
		}
	}
	if learners > 1 {
		t.Fatalf("%d learners at once", learners)
	}
	if voters == 0 {
		t.Fatal("no voter left")
	}
}

func (x *sim) run(t *testing.T, replicas int) {
	t.Helper()
	x.s.Replicas = replicas
	for steps := 0; ; steps++ {
		if steps > 100 {
			t.Fatal("planner does not converge")
		}
		a := Plan(x.s, name)
		if a.Kind == None {
			return
		}
		x.apply(t, a)
		x.check(t)
	}
}

func TestScalingJourneys(t *testing.T) {
	x := &sim{s: running(1), nextID: 200}
	x.s.LeaderID = 100

	x.run(t, 3)
	x.run(t, 5)
	want := []string{"add c-1", "promote c-1", "add c-2", "promote c-2", "add c-3", "promote c-3", "add c-4", "promote c-4"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("1->3->5 changes = %v\nwant %v", x.changes, want)
	}

	// Make the highest member the leader so scale-down must move leadership first.
	x.s.LeaderID = x.s.Members[4].ID
	x.changes = nil
	x.run(t, 1)
	want = []string{"move-leader c-0", "remove c-4", "remove c-3", "remove c-2", "remove c-1"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("5->1 changes = %v\nwant %v (four removals, leader moved first)", x.changes, want)
	}
	if len(x.s.Members) != 1 {
		t.Fatalf("leftover objects after scale down: %+v", x.s.Members)
	}
}

func TestReplacementJourney(t *testing.T) {
	x := &sim{s: running(3), nextID: 200}
	// c-1 loses its volume: its pod is gone with it.
	m := &x.s.Members[1]
	m.HasPVC, m.HasPod, m.Reachable, m.PVCHasData = false, false, false, false
	x.run(t, 3)
	want := []string{"remove c-1", "add c-1", "promote c-1"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("replacement changes = %v, want %v", x.changes, want)
	}
	for _, m := range x.s.Members {
		if m.Name == "c-1" && m.ID <= 200 {
			t.Fatalf("replacement reused member ID %d", m.ID)
		}
	}
}

// healthyVoters counts voters that answer, as themselves, holding data.
func (x *sim) healthyVoters() int {
	n := 0
	for _, m := range x.s.voters() {
		if m.Healthy(x.s.ClusterID) {
			n++
		}
	}
	return n
}

// Deleting the PVC of every member at once (kubectl delete pvc --all) while the members still
// serve: each is replaced add-first, one at a time, and the number of healthy voters never
// drops below spec.replicas.
func TestReplaceEveryVolumeAddFirst(t *testing.T) {
	for _, lost := range [][]int{{0, 1, 2}, {0, 1}, {1, 2}} {
		x := &sim{s: running(3), nextID: 200}
		for _, i := range lost {
			x.s.Members[i].PVCTerminating = true
		}
		for steps := 0; ; steps++ {
			if steps > 200 {
				t.Fatalf("%v: the planner does not converge: %v", lost, x.changes)
			}
			a := Plan(x.s, name)
			if a.Kind == None {
				break
			}
			x.apply(t, a)
			x.check(t)
			if n := x.healthyVoters(); n < 3 {
				t.Fatalf("%v: after %v, %d healthy voters, fewer than the 3 before (changes %v)", lost, a, n, x.changes)
			}
		}
		for _, m := range x.s.Members {
			if m.ID < 200 && slices.Contains(lost, m.Index) && m.InEtcd {
				t.Errorf("%v: %s, whose volume was deleted, is still a member", lost, m.Name)
			}
		}
		if v := x.s.voters(); len(v) != 3 {
			t.Errorf("%v: %d voters at the end, want 3", lost, len(v))
		}
		adds := 0
		for _, c := range x.changes {
			if strings.HasPrefix(c, "add ") {
				adds++
			}
		}
		if adds != len(lost) {
			t.Errorf("%v: %d members added, want one per lost volume: %v", lost, adds, x.changes)
		}
		t.Logf("%v: %v", lost, x.changes)
	}
}

// A forced recovery: two of three members are gone for good; the user asks for a recovery;
// the member that applied the most restarts alone with --force-new-cluster, its pod is then
// replaced by an ordinary one, and the cluster grows back to three.
func TestRecoveryJourney(t *testing.T) {
	x := &sim{s: running(3), nextID: 200}
	for _, i := range []int{0, 2} {
		m := &x.s.Members[i]
		m.HasPVC, m.HasPod, m.Reachable, m.HasLeader = false, false, false, false
	}
	x.s.Members[1].HasLeader, x.s.Members[1].Revision = false, 1234
	x.s.EtcdReachable, x.s.LeaderID = false, 0
	// Nothing happens on its own.
	if a := Plan(x.s, name); a.Kind != Wait || a.Reason != v1alpha1.ReasonEtcdUnreachable {
		t.Fatalf("without a request: %v", a)
	}
	x.s.Recovery.Requested = "incident-1"
	x.run(t, 3)
	want := []string{"recover-from c-1@1234", "recovery Rejoining", "recovery Completed", "add c-0", "promote c-0", "add c-2", "promote c-2"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("recovery changes = %v\nwant %v", x.changes, want)
	}
	for _, m := range x.s.Members {
		if m.PodForcesNewCluster {
			t.Errorf("%s still runs with --force-new-cluster", m.Name)
		}
	}
	// The same token does not act again, even if quorum were lost again.
	x.s.EtcdReachable = false
	if a := Plan(x.s, name); a.Kind == StartRecovery {
		t.Fatalf("a used token started another recovery: %v", a)
	}
}

// A pod that starts etcd with --force-new-cluster is replaced at once unless the recovery that
// restarts it is under way: its record lost (status lost: token unrecorded), a recovery that
// has completed, or a token the user changed leave it stray, and its next container restart
// would make a second one-member cluster with the cluster's ID.
func TestStrayForcedPodIsReplaced(t *testing.T) {
	forced := func(m *Member) { m.PodForcesNewCluster = true }
	for _, tc := range []struct {
		name     string
		recovery Recovery
		stray    bool
	}{
		{"the recovery's record was lost", Recovery{Requested: "incident-1"}, true},
		{"the recovery completed", Recovery{Requested: "incident-1", Token: "incident-1", Phase: v1alpha1.RecoveryCompleted, Member: "c-1"}, true},
		{"the token was changed mid-recovery", Recovery{Requested: "incident-2", Token: "incident-1", Phase: v1alpha1.RecoveryRestarting, Member: "c-1"}, true},
		{"the token was removed", Recovery{Token: "incident-1", Phase: v1alpha1.RecoveryRestarting, Member: "c-1"}, true},
		{"another member is the survivor", Recovery{Requested: "incident-1", Token: "incident-1", Phase: v1alpha1.RecoveryRestarting, Member: "c-0"}, true},
		{"its own recovery restarts it", Recovery{Requested: "incident-1", Token: "incident-1", Phase: v1alpha1.RecoveryRestarting, Member: "c-1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := running(3, member(1, forced), func(s *State) { s.Recovery = tc.recovery })
			a := Plan(s, name)
			if got := a.Kind == DeletePod && a.Member == "c-1" && a.Reason == v1alpha1.ReasonRecovery && a.Attention; got != tc.stray {
				t.Fatalf("Plan = %+v; stray pod replaced: %v, want %v", a, got, tc.stray)
			}
		})
	}
}

func TestRecoveryIsNotNeededWithQuorum(t *testing.T) {
	s := running(3, func(s *State) { s.Recovery.Requested = "oops" })
	a := Plan(s, name)
	a.Message = ""
	if want := (Action{Kind: RecoveryPhase, Phase: v1alpha1.RecoveryNotNeeded, Reason: v1alpha1.ReasonRecovery}); !reflect.DeepEqual(a, want) {
		t.Fatalf("Plan = %+v, want %+v", a, want)
	}
}

// Moving every member to another StorageClass: one at a time, add-first, the leader last; at
// least spec.replicas healthy voters at every step.
func TestStorageMigrationJourney(t *testing.T) {
	x := &sim{s: running(3), nextID: 200}
	for i := range x.s.Members {
		x.s.Members[i].VolumeOutdated = true // new members get spec.storage (CreatePVC)
	}
	for steps := 0; ; steps++ {
		if steps > 100 {
			t.Fatalf("does not converge: %v", x.changes)
		}
		a := Plan(x.s, name)
		if a.Kind == None {
			break
		}
		x.apply(t, a)
		x.check(t)
		if n := x.healthyVoters(); n < 3 {
			t.Fatalf("after %v, %d healthy voters (changes %v)", a, n, x.changes)
		}
	}
	want := []string{"add c-3", "promote c-3", "remove c-1", "add c-1", "promote c-1", "remove c-2", "add c-2", "promote c-2", "move-leader c-1", "remove c-0"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("changes %v\nwant %v (the leader, c-0, last)", x.changes, want)
	}
	for _, m := range x.s.Members {
		if m.VolumeOutdated {
			t.Errorf("%s is still on the old storage", m.Name)
		}
	}
}

// Defragmentation: only on a settled cluster, followers first, the leader after leadership
// moved, a member below the threshold or the minimum left alone, every member with enough free
// pages when a scheduled round is due.
func TestDefragment(t *testing.T) {
	free := func(i int, dbSize, inUse int64) func(*State) {
		return member(i, func(m *Member) { m.DBSize, m.DBSizeInUse = dbSize, inUse })
	}
	policy := func(d Defrag) func(*State) { return func(s *State) { s.Defrag = d } }
	const mib = 1 << 20
	threshold := Defrag{ThresholdPercent: 30, MinFree: 16 * mib}
	for _, tc := range []struct {
		name  string
		state State
		want  Action
	}{
		{"no policy: nothing", running(3, free(1, 100*mib, 10*mib)), Action{Kind: None, Reason: v1alpha1.ReasonSettled, Message: "3 healthy voting members"}},
		{"a follower over the threshold is defragmented", running(3, policy(threshold), free(2, 100*mib, 60*mib)),
			Action{Kind: Defragment, Member: "c-2", Reason: v1alpha1.ReasonDefragmenting, Message: "defragmenting c-2: 41943040 of its 104857600 bytes are free pages"}},
		{"under the threshold: nothing", running(3, policy(threshold), free(2, 100*mib, 80*mib)),
			Action{Kind: None, Reason: v1alpha1.ReasonSettled, Message: "3 healthy voting members"}},
		{"over the threshold but under the minimum: nothing", running(3, policy(threshold), free(2, 20*mib, 5*mib)),
			Action{Kind: None, Reason: v1alpha1.ReasonSettled, Message: "3 healthy voting members"}},
		{"followers before the leader", running(3, policy(threshold), free(0, 100*mib, 10*mib), free(1, 100*mib, 10*mib)),
			Action{Kind: Defragment, Member: "c-1", Reason: v1alpha1.ReasonDefragmenting, Message: "defragmenting c-1: 94371840 of its 104857600 bytes are free pages"}},
		{"the leader last: leadership moves first", running(3, policy(threshold), free(0, 100*mib, 10*mib)),
			Action{Kind: MoveLeader, Member: "c-0", ID: 100, Target: 101, TargetName: "c-1", Reason: v1alpha1.ReasonDefragmenting, Message: "moving leadership from c-0 to c-1 before defragmenting it"}},
		{"a single member is defragmented where it leads", running(1, policy(threshold), free(0, 100*mib, 10*mib)),
			Action{Kind: Defragment, Member: "c-0", Reason: v1alpha1.ReasonDefragmenting, Message: "defragmenting c-0: 94371840 of its 104857600 bytes are free pages"}},
		{"a due round takes any member over the minimum", running(3, policy(Defrag{MinFree: 16 * mib, Due: true}), free(1, 100*mib, 80*mib)),
			Action{Kind: Defragment, Member: "c-1", Reason: v1alpha1.ReasonDefragmenting, Message: "defragmenting c-1: 20971520 of its 104857600 bytes are free pages"}},
		{"not while a member is unhealthy", running(3, policy(threshold), free(2, 100*mib, 10*mib), member(1, func(m *Member) { m.Reachable = false })),
			Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonMemberUnhealthy, Message: "member c-1 does not answer; membership changes wait until every member is healthy"}},
	} {
		if got := Plan(tc.state, name); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// A forced recovery while the other members still run where the operator cannot reach them (a
// partition, or paused containers): each is fenced (its volume marked) and stopped before the
// survivor is forced, so the old majority cannot go on as a second cluster with the same ID;
// the fenced volumes are deleted once the recovered cluster answers, and never get a pod.
func TestRecoveryFencesTheOthers(t *testing.T) {
	x := &sim{s: running(3), nextID: 200}
	for _, i := range []int{0, 2} {
		m := &x.s.Members[i]
		m.Reachable, m.HasLeader = false, false // pods and volumes there, not answering
	}
	x.s.Members[1].HasLeader, x.s.Members[1].Revision = false, 1234
	x.s.EtcdReachable, x.s.LeaderID = false, 0
	x.s.Recovery.Requested = "incident-1"
	var stops []string
	for steps := 0; steps < 100; steps++ {
		a := Plan(x.s, name)
		if a.Kind == None {
			break
		}
		if a.Kind == DeletePod && a.Reason == v1alpha1.ReasonRecovery {
			stops = append(stops, a.Member)
		}
		if m, ok := x.s.byName(a.Member); ok && a.Kind == CreatePod && m.Fenced != "" {
			t.Fatalf("a fenced member gets a pod: %v", a)
		}
		x.apply(t, a)
		x.check(t)
	}
	want := []string{"recover-from c-1@1234", "fence c-0", "fence c-2", "recovery Rejoining", "recovery Completed", "add c-0", "promote c-0", "add c-2", "promote c-2"}
	if !reflect.DeepEqual(x.changes, want) {
		t.Fatalf("recovery changes = %v\nwant %v", x.changes, want)
	}
	// c-0 and c-2 stopped before the survivor's restart (the survivor c-1 twice: forced, then not).
	if want := []string{"c-0", "c-2", "c-1", "c-1"}; !reflect.DeepEqual(stops, want) {
		t.Fatalf("pods stopped for the recovery: %v, want %v", stops, want)
	}
	for _, m := range x.s.Members {
		if m.Fenced != "" {
			t.Errorf("%s is a member of the recovered cluster on a fenced volume", m.Name)
		}
	}
	// Status lost (the object recreated, or restored by a backup tool) and quorum lost again:
	// the survivor's volume records the token, which does not force a second time.
	x.s.Recovery = Recovery{Requested: "incident-1"}
	x.s.EtcdReachable, x.s.LeaderID = false, 0
	for i := range x.s.Members {
		x.s.Members[i].Reachable, x.s.Members[i].HasLeader = x.s.Members[i].Name == "c-1", false
	}
	a := Plan(x.s, name)
	if !strings.Contains(a.Message, `"incident-1" was acted on before (the volume of c-1 records it)`) {
		t.Errorf("message %q", a.Message)
	}
	a.Message = ""
	if want := (Action{Kind: Wait, Member: "c-1", Reason: v1alpha1.ReasonRecovery, Attention: true}); !reflect.DeepEqual(a, want) {
		t.Fatalf("a token acted on before, with status lost: %+v, want %+v", a, want)
	}
}

// The fence holds without the recovery's record: a fenced member's pod is deleted at once, a
// cluster without quorum does not restart it from its volume and says why, and a later
// recovery does not pick it as the survivor.
func TestFencedVolumesNeverRun(t *testing.T) {
	fenced := func(m *Member) { m.Fenced = "incident-1" }
	down := func(m *Member) { m.HasPod, m.Reachable, m.HasLeader = false, false, false }
	unreachable := func(s *State) { s.EtcdReachable, s.LeaderID = false, 0 }
	for _, tc := range []struct {
		name  string
		state State
		want  Action
		msg   string
	}{
		{name: "a fenced member's pod is deleted", state: running(3, unreachable, member(0, fenced)),
			want: Action{Kind: DeletePod, Member: "c-0", Reason: v1alpha1.ReasonRecovery, Attention: true}, msg: "fenced by the recovery \"incident-1\""},
		{name: "no quorum: a fenced volume is not restarted", state: running(3, unreachable, member(0, fenced, down), member(2, fenced, down),
			member(1, func(m *Member) { m.HasLeader = false })),
			want: Action{Kind: Wait, Reason: v1alpha1.ReasonEtcdUnreachable, Attention: true}, msg: "members c-0, c-2 were fenced"},
		{name: "a new recovery does not start from a fenced volume", state: running(3, unreachable, member(0, fenced, down, func(m *Member) { m.HasPod = false }),
			member(1, func(m *Member) { m.HasLeader, m.Revision = false, 10 }), member(2, fenced, func(m *Member) { m.HasLeader, m.Revision, m.HasPod = false, 99, true }),
			func(s *State) {
				s.Members[2].Fenced = ""
				s.Members[2].Reachable = true
				s.Members[0].Revision = 500
				s.Recovery.Requested = "incident-2"
			}),
			want: Action{Kind: StartRecovery, Member: "c-2", Revision: 99, Reason: v1alpha1.ReasonRecovery, Attention: true}, msg: "from member c-2"},
		{name: "a stuck terminating pod holds the forced start, with the way out", state: running(3, unreachable,
			member(0, fenced, func(m *Member) { m.PodTerminating, m.TerminatingFor, m.Reachable = true, time.Hour, false }),
			member(2, fenced, down), func(s *State) {
				s.Recovery = Recovery{Requested: "incident-1", Token: "incident-1", Phase: v1alpha1.RecoveryRestarting, Member: "c-1"}
			}),
			want: Action{Kind: Wait, Member: "c-0", Reason: v1alpha1.ReasonRecovery, Attention: true}, msg: "kubectl delete pod --force --grace-period=0"},
		// A hung member's pod takes its whole grace period to stop: the others are fenced
		// (and so their pods deleted) meanwhile, not after it.
		{name: "every other member is fenced before the recovery waits for a pod to stop", state: running(3, unreachable,
			member(0, fenced, func(m *Member) { m.PodTerminating, m.TerminatingFor, m.Reachable = true, time.Second, false }),
			member(2, func(m *Member) { m.Reachable, m.HasLeader = false, false }), func(s *State) {
				s.Recovery = Recovery{Requested: "incident-1", Token: "incident-1", Phase: v1alpha1.RecoveryRestarting, Member: "c-1"}
			}),
			want: Action{Kind: Fence, Member: "c-2", Token: "incident-1", Reason: v1alpha1.ReasonRecovery}, msg: "fencing c-2 before c-1 is forced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Plan(tc.state, name)
			if !strings.Contains(a.Message, tc.msg) {
				t.Errorf("message %q does not contain %q", a.Message, tc.msg)
			}
			a.Message = ""
			if !reflect.DeepEqual(a, tc.want) {
				t.Errorf("Plan =\n %+v\nwant\n %+v", a, tc.want)
			}
		})
	}
}

// A forced recovery is refused while a join has not completed: the external members vote in
// the same cluster, the operator cannot fence them, and they may still hold a quorum.
func TestNoRecoveryDuringAJoin(t *testing.T) {
	s := running(2, func(s *State) {
		s.EtcdReachable, s.LeaderID = false, 0
		s.Join = &Join{Started: true, External: []External{{Name: "vm-0", ID: 900}, {Name: "vm-1", ID: 901}, {Name: "vm-2", ID: 902}}}
		s.Recovery.Requested = "incident-1"
	}, member(0, func(m *Member) { m.Reachable, m.HasLeader = false, false }), member(1, func(m *Member) { m.HasLeader, m.Revision = false, 50 }))
	a := Plan(s, name)
	a.Message = ""
	if want := (Action{Kind: Halt, Reason: v1alpha1.ReasonRecovery, Attention: true}); !reflect.DeepEqual(a, want) {
		t.Fatalf("Plan = %+v, want %+v", a, want)
	}
}
