package planner

import (
	"fmt"
	"strings"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/mutant"
)

// checkIdentity halts every change while a member belongs to another cluster, or etcd lists a
// member the operator did not create: acting on either could split the cluster.
func checkIdentity(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if s.ClusterID != 0 && m.Reachable && m.ClusterID != s.ClusterID && !mutant.On("skip-cluster-id-check") {
			return Action{Kind: Halt, Member: m.Name, Reason: v1alpha1.ReasonClusterIDMismatch, Attention: true,
				Message: fmt.Sprintf("member %s reports cluster ID %x but this cluster is %x: membership changes are stopped; find out where the member's data came from, then delete its Pod and PVC so it is replaced", m.Name, m.ClusterID, s.ClusterID)}, true
		}
		// Once its PVC is being deleted (what the message asks for), the member's data is lost
		// to it: replaceGone removes it (it serves nothing) and a new member takes its place.
		// Halting on would wedge: the PVC goes only with the pod, which a halt never deletes.
		if m.ForeignData && m.HasPVC && !m.PVCTerminating {
			return Action{Kind: Halt, Member: m.Name, Reason: v1alpha1.ReasonClusterIDMismatch, Attention: true,
				Message: ForeignDataMessage(m.Name)}, true
		}
	}
	if len(s.UnknownMembers) > 0 {
		return Action{Kind: Halt, Reason: v1alpha1.ReasonUnknownMember, Attention: true,
			Message: fmt.Sprintf("etcd has members the operator did not create (%v): membership changes are stopped; remove them with etcdctl member remove", s.UnknownMembers)}, true
	}
	return Action{}, false
}

// ForeignDataMessage is the ClusterIDMismatch message for a member whose launcher refused the
// data on its volume as another cluster's or another member's.
func ForeignDataMessage(member string) string {
	return fmt.Sprintf("member %s refused to start: its volume holds data of another etcd cluster or member; membership changes are stopped; delete its PVC if that data is not needed, and the member is replaced", member)
}

// checkVolumes stops at volumes an earlier EtcdCluster of the same name left behind: they are
// adopted only when the spec asks for it, and never overwritten.
func checkVolumes(s State) (Action, bool) {
	if len(s.RetainedVolumes) == 0 {
		return Action{}, false
	}
	names := strings.Join(s.RetainedVolumes, ", ")
	if s.AdoptVolumes {
		return Action{Kind: AdoptVolumes, Reason: v1alpha1.ReasonAdoptingVolumes,
			Message: fmt.Sprintf("adopting the retained volumes %s: the cluster they hold restarts with its own cluster ID", names)}, true
	}
	return Action{Kind: Halt, Reason: v1alpha1.ReasonRetainedVolumes, Attention: true,
		Message: fmt.Sprintf("the volumes %s were retained from an earlier EtcdCluster named %s: set spec.adoptRetainedVolumes to true to restart that cluster from them, or delete them to start an empty cluster", names, s.Cluster)}, true
}
