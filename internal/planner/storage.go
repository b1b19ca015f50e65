package planner

import (
	"fmt"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// expandVolumes asks for larger volumes where spec.storage.size grew and the StorageClass
// expands volumes in place, one member at a time (the file system grows when the pod restarts,
// which rollPods does).
func expandVolumes(s State) (Action, bool) {
	for _, m := range s.sorted() {
		if m.InEtcd && m.HasPVC && !m.PVCTerminating && m.VolumeExpand {
			return Action{Kind: ExpandVolume, Member: m.Name, Reason: v1alpha1.ReasonMigratingStorage,
				Message: fmt.Sprintf("expanding the volume of %s to spec.storage.size", m.Name)}, true
		}
	}
	return Action{}, false
}
