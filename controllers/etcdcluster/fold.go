package etcdcluster

import (
	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/certificates"
)

// statusShare is one part's share of the status a pass writes: the fields it sets, each left
// as it is when unset. The parts (the claim, the identity, a join, a recovery, the
// certificates and users) return their shares; fold alone writes them into the cluster's
// status, which computeStatus then completes (TestStatusIsWrittenOnlyByTheFold).
type statusShare struct {
	operator  *string                  // status.operator
	clusterID string                   // status.clusterID, unless ""
	join      *v1alpha1.JoinStatus     // status.join, unless nil
	recovery  *v1alpha1.RecoveryStatus // status.recovery, unless nil
	certs     []certificates.Share     // the certificates' shares, in order
	// status.maintenance, unless nil: what a step did for the maintenance asked for on demand,
	// recorded by the step itself (an error later in the pass does not lose it).
	maintenance *v1alpha1.MaintenanceStatus
}

// fold writes the shares into c's status, in order. A pass folds each share as soon as its
// part returns it, so the parts after it see the status as it will be written.
func fold(c *v1alpha1.EtcdCluster, shares ...statusShare) {
	for _, s := range shares {
		if s.operator != nil {
			c.Status.Operator = *s.operator
		}
		if s.clusterID != "" {
			c.Status.ClusterID = s.clusterID
		}
		if s.join != nil {
			c.Status.Join = s.join
		}
		if s.recovery != nil {
			c.Status.Recovery = s.recovery
		}
		for _, cs := range s.certs {
			cs.Fold(&c.Status)
		}
		if s.maintenance != nil {
			c.Status.Maintenance = s.maintenance
		}
	}
}
