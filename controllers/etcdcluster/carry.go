package etcdcluster

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// carried keeps, per cluster, the maintenance records of a pass that stopped for its claim's
// term before it could write the status (a defragmentation longer than what was left of the
// term, say). The status may not be written then: the claim may already have ended, and
// another install may hold it. The next pass that holds the claim again (renewed, so nobody
// took it over) folds them in before it plans, so that the member is not defragmented again
// and the round goes on; it writes them with its status. A record stays until a status read
// shows it (a pass that ends before its status write, or whose write is refused, folds it
// again next time), or until the spec asks for something newer. They are lost with the
// operator's process: the member is then defragmented once more, which is harmless. Should
// another install take the cluster over meanwhile and this one take it back, the records fold
// in only for the requests the spec still makes, and merge with what status says.
type carried struct {
	mu sync.Mutex
	m  map[types.NamespacedName]carriedRecord
}

type carriedRecord struct {
	uid         types.UID
	maintenance *v1alpha1.MaintenanceStatus
}

// keep records c's maintenance status for the next pass.
func (k *carried) keep(c *v1alpha1.EtcdCluster) {
	if c.Status.Maintenance == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[types.NamespacedName]carriedRecord{}
	}
	k.m[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = carriedRecord{uid: c.UID, maintenance: c.Status.Maintenance.DeepCopy()}
}

// share is what was kept for c merged with its status, for the pass to fold (fold.go). Only
// records of the requests the spec still makes are merged: a new token starts afresh. A record
// the status as read already holds whole, or that no longer applies, is forgotten.
func (k *carried) share(c *v1alpha1.EtcdCluster) statusShare {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	k.mu.Lock()
	defer k.mu.Unlock()
	rec, ok := k.m[key]
	if !ok {
		return statusShare{}
	}
	merged := mergeMaintenance(c.Status.Maintenance, rec.maintenance, c.Spec.Maintenance)
	if rec.uid != c.UID || equality.Semantic.DeepEqual(merged, c.Status.Maintenance) {
		delete(k.m, key)
		return statusShare{}
	}
	return statusShare{maintenance: merged}
}

// forget drops what was kept for a cluster that is gone.
func (k *carried) forget(key types.NamespacedName) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, key)
}

// mergeMaintenance is status, with what kept recorded for the requests spec still makes.
func mergeMaintenance(status, kept *v1alpha1.MaintenanceStatus, spec v1alpha1.MaintenanceSpec) *v1alpha1.MaintenanceStatus {
	out := status.DeepCopy()
	if out == nil {
		out = &v1alpha1.MaintenanceStatus{}
	}
	if d := kept.Defrag; d != nil && d.Token != "" && d.Token == spec.DefragNow {
		if out.Defrag == nil || out.Defrag.Token != d.Token {
			out.Defrag = d.DeepCopy()
		} else {
			for _, m := range d.Defragmented {
				if !slices.Contains(out.Defrag.Defragmented, m) {
					out.Defrag.Defragmented = append(out.Defrag.Defragmented, m)
				}
			}
			if out.Defrag.CompletionTime == nil {
				out.Defrag.CompletionTime = d.CompletionTime
			}
		}
	}
	if ml := kept.MoveLeader; ml != nil && spec.MoveLeader != nil && ml.Token == spec.MoveLeader.Token &&
		(out.MoveLeader == nil || out.MoveLeader.Token != ml.Token) {
		out.MoveLeader = ml.DeepCopy()
	}
	if out.Defrag == nil && out.MoveLeader == nil {
		return status
	}
	return out
}
