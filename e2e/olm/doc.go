// Package olm installs and upgrades Quorate through real OLM, as customers do: OLM v0 with a
// CatalogSource, an OperatorGroup and a Subscription (InstallV0, PublishV0), and OLM v1 with a
// ClusterCatalog and a ClusterExtension (InstallV1, UpgradeV1). Each records what OLM did on the
// run's timeline and checks that the etcd members were left alone.
package olm

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/quorate-dev/quorate/e2e/framework"
)

// installer gives the install steps the run they act in.
type installer struct{ *framework.Run }

// rolledOut says what a Deployment's rollout still waits for, or nil once every replica runs
// the current template.
func rolledOut(d *appsv1.Deployment) error {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != want || d.Status.AvailableReplicas != want || d.Status.Replicas != want {
		return fmt.Errorf("rollout: %d updated, %d available, %d in all, of %d", d.Status.UpdatedReplicas, d.Status.AvailableReplicas, d.Status.Replicas, want)
	}
	return nil
}
