package planner

import (
	"fmt"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// expandVolumes asks for larger volumes where spec.storage.size grew and the StorageClass
// expands volumes in place, one member at a time (the file system grows while the volume is in
// use, or when the pod restarts, which rollPods does). It comes before every gate, quorum and
// health included: expanding a volume stops nothing, and is how members whose disks filled
// come back. With etcd unreachable the members are known by their volumes.
func expandVolumes(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if (m.InEtcd || !s.EtcdReachable && m.PVCHasData) && m.HasPVC && !m.PVCTerminating && m.VolumeExpand {
			return Action{Kind: ExpandVolume, Member: m.Name, Reason: v1alpha1.ReasonMigratingStorage,
				Message: fmt.Sprintf("expanding the volume of %s to spec.storage.size", m.Name)}, true
		}
	}
	return Action{}, false
}

// DiskFullMessage is the DiskFull message for a member whose launcher refused to start etcd on
// a full volume (refusal is the launcher's message).
func DiskFullMessage(member, refusal string) string {
	return fmt.Sprintf("member %s cannot start: %s. The member comes back by itself once its volume has room; do not force a new cluster for this", member, refusal)
}

// waitDiskFull is the Wait for the first member whose volume is full, if any.
func waitDiskFull(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if m.DiskFull != "" && !m.Healthy(s.ClusterID) {
			return Action{Kind: Wait, Member: m.Name, Reason: v1alpha1.ReasonDiskFull, Attention: true, Message: DiskFullMessage(m.Name, m.DiskFull)}, true
		}
	}
	return Action{}, false
}
