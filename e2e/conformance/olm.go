package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/e2e/olm"
)

// OLMScenarios install Quorate through OLM, as customers do from OperatorHub, and run the
// workload on a cluster the OLM-installed operator manages. They need OLM and two catalogs
// (--olm-catalogs, or --install-olm builds them), and a cluster without another Quorate.
func OLMScenarios(opts *framework.Options) []framework.Scenario {
	catalogs := func() (previous, current string, err error) {
		p := strings.Split(opts.OLMCatalogs, ",")
		if len(p) != 2 || p[0] == "" || p[1] == "" {
			return "", "", fmt.Errorf("the OLM scenarios need --olm-catalogs=PREVIOUS,CURRENT (catalog images) or --install-olm, got %q", opts.OLMCatalogs)
		}
		return p[0], p[1], nil
	}
	labels := func(mode string) map[string]string {
		return map[string]string{label.Suite: label.SuiteOLM, label.InstallMode: mode}
	}
	scenarios := []framework.Scenario{
		// A Subscription in a namespace of its own with a global OperatorGroup: the operator
		// watches every namespace, including the one of the EtcdCluster.
		{Name: "olm-install-all-namespaces", Labels: labels("AllNamespaces"), Replicas: 3, Class: framework.Planned,
			Install: installCurrentAllNamespaces(catalogs, new(*olm.V0))},
		olmScopeMigration(catalogs),
		// The previous release installed in the EtcdCluster's namespace (OwnNamespace); the new
		// release is published in the channel while the workload runs, and OLM upgrades the
		// operator. Clients must not notice: the steady-state budget applies.
		olmUpgrade(catalogs),
		olmUpgradeGated(catalogs),
	}
	if opts.OLMv1 {
		// First: OLM v1 removes Quorate's CRD when its ClusterExtension goes, OLM v0 leaves it
		// behind, and OLM v1 will not adopt a CRD it did not make.
		scenarios = append([]framework.Scenario{olmv1Upgrade(opts, catalogs)}, scenarios...)
	}
	return scenarios
}

// olmScopeMigration moves, under load, the management of the cluster from an AllNamespaces
// install in a namespace of its own to an OwnNamespace install in the cluster's namespace, as
// a team narrowing an operator's scope does through OLM (olm.MoveV0 says how). OLM v0 never
// runs the two at once; the cluster's claim moves to the new install once the old one's
// expires, the new install scales the cluster, and the Events prove that every change was
// made by the claim's holder.
func olmScopeMigration(catalogs func() (string, string, error)) framework.Scenario {
	var wide *olm.V0
	var current, wideID, narrowID string
	var removed time.Time
	return framework.Scenario{Name: "olm-scope-migration", Labels: map[string]string{label.Suite: label.SuiteOLM, label.InstallMode: "AllNamespaces", label.Migration: "scope"}, Replicas: 3, Class: framework.Planned,
		Install: installCurrentAllNamespaces(catalogs, &wide),
		Steps: []framework.Step{
			{Name: "wait for the AllNamespaces install to own the cluster", Do: func(ctx context.Context, r *framework.Run) (err error) {
				if _, current, err = catalogs(); err != nil {
					return err
				}
				wideID, narrowID = framework.Identity(wide.Namespace), framework.Identity(r.Namespace)
				return r.WaitOwner(ctx, wideID)
			}},
			{Name: "move the install to the cluster's namespace through OLM", Do: func(ctx context.Context, r *framework.Run) (err error) {
				// Registered last, so run first: the EtcdCluster goes while the operator in its
				// namespace still runs.
				r.OnCleanup(func(ctx context.Context) error { return r.DeleteNamespace(ctx, r.Namespace) })
				_, removed, err = olm.MoveV0(ctx, r, wide, r.Namespace, current)
				return err
			}},
			{Name: "wait for the OwnNamespace install to own the cluster", Do: func(ctx context.Context, r *framework.Run) error {
				return r.WaitOwner(ctx, narrowID)
			}},
			scaleStep(5),
			{Name: "check: every change made by the claim's holder", Do: func(ctx context.Context, r *framework.Run) error {
				counts, claims, err := r.CheckOwnership(ctx)
				if err != nil {
					return err
				}
				if err := framework.ClaimsInOrder(claims, []framework.Claim{{Holder: wideID}, {At: removed, Holder: narrowID}}); err != nil {
					return err
				}
				if counts[narrowID] == 0 {
					return fmt.Errorf("changes by install: %v; want the namespaced install to have scaled the cluster", counts)
				}
				r.T.Logf("changes by install: %v, each while it held the cluster's claim", counts)
				return nil
			}},
		}}
}

// olmv1Upgrade: OLM v1 installs the previous release from a ClusterCatalog holding both
// (ClusterExtension pinned to the previous version), then the ClusterExtension is moved to the
// current version while the workload runs. OLM v1 installs AllNamespaces bundles only.
func olmv1Upgrade(opts *framework.Options, catalogs func() (string, string, error)) framework.Scenario {
	var in *olm.V1
	versions := func() (string, string, error) {
		p := strings.Split(opts.OLMVersions, ",")
		if len(p) != 2 || p[0] == "" || p[1] == "" {
			return "", "", fmt.Errorf("--olm-versions wants PREVIOUS,CURRENT, got %q", opts.OLMVersions)
		}
		return p[0], p[1], nil
	}
	return framework.Scenario{Name: "olmv1-upgrade", Labels: map[string]string{label.Suite: label.SuiteOLM, label.OLM: "v1", label.InstallMode: "AllNamespaces"}, Replicas: 3, Class: framework.Planned,
		Install: func(ctx context.Context, r *framework.Run) error {
			_, current, err := catalogs()
			if err != nil {
				return err
			}
			previous, _, err := versions()
			if err != nil {
				return err
			}
			in, err = olm.InstallV1(ctx, r, r.Namespace+"-operator", current, previous)
			if err != nil {
				return err
			}
			// Registered last, so run first: the EtcdCluster goes while its operator still runs.
			r.OnCleanup(func(ctx context.Context) error { return r.DeleteNamespace(ctx, r.Namespace) })
			return nil
		},
		Steps: []framework.Step{{Name: "move the ClusterExtension to the current version", Do: func(ctx context.Context, r *framework.Run) error {
			_, next, err := versions()
			if err != nil {
				return err
			}
			return olm.UpgradeV1(ctx, r, in, next)
		}}}}
}

// installCurrentAllNamespaces installs the current release through OLM v0 for all namespaces,
// in a namespace of its own (the scenario's namespace with "-operator"), and records the
// install in *in.
func installCurrentAllNamespaces(catalogs func() (string, string, error), in **olm.V0) func(context.Context, *framework.Run) error {
	return func(ctx context.Context, r *framework.Run) error {
		_, current, err := catalogs()
		if err != nil {
			return err
		}
		ns := r.Namespace + "-operator"
		if err := r.CreateNamespace(ctx, ns); err != nil {
			return err
		}
		r.OnCleanup(func(ctx context.Context) error { return r.DeleteNamespace(ctx, ns) })
		*in, err = olm.InstallV0(ctx, r, ns, current, nil)
		return err
	}
}

// installPreviousOwnNamespace installs the previous release through OLM v0 for the scenario's
// namespace alone (OwnNamespace) and records the install in *in.
func installPreviousOwnNamespace(catalogs func() (string, string, error), in **olm.V0) func(context.Context, *framework.Run) error {
	return func(ctx context.Context, r *framework.Run) error {
		previous, _, err := catalogs()
		if err != nil {
			return err
		}
		// The namespace holds the operator: wait until it is gone, so that the next
		// scenario does not meet this operator still terminating.
		r.OnCleanup(func(ctx context.Context) error { return r.DeleteNamespace(ctx, r.Namespace) })
		*in, err = olm.InstallV0(ctx, r, r.Namespace, previous, []string{r.Namespace})
		return err
	}
}

func olmUpgrade(catalogs func() (string, string, error)) framework.Scenario {
	var in *olm.V0
	return framework.Scenario{Name: "olm-upgrade", Labels: map[string]string{label.Suite: label.SuiteOLM, label.InstallMode: "OwnNamespace"}, Replicas: 3, Class: framework.Planned,
		Install: installPreviousOwnNamespace(catalogs, &in),
		Steps: []framework.Step{{Name: "publish the current release and wait for OLM to upgrade", Do: func(ctx context.Context, r *framework.Run) error {
			_, current, err := catalogs()
			if err != nil {
				return err
			}
			return olm.PublishV0(ctx, r, in, current)
		}}}}
}

// olmUpgradeGated: as olm-upgrade, but the new release is published while the cluster scales
// 3 -> 5 and cannot finish: a ResourceQuota allows 3 PersistentVolumeClaims in the namespace, as
// a cloud's volume quota would, so the new member's volume waits. The operator's
// OperatorCondition says Upgradeable=False, and OLM must hold the upgrade for the whole minute
// the quota stays; once it is lifted, the scale completes, then OLM upgrades.
func olmUpgradeGated(catalogs func() (string, string, error)) framework.Scenario {
	var in *olm.V0
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "volumes"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: resource.MustParse("3")}}}
	return framework.Scenario{Name: "olm-upgrade-gated", Labels: map[string]string{label.Suite: label.SuiteOLM, label.InstallMode: "OwnNamespace"}, Replicas: 3, Class: framework.Planned,
		Install: installPreviousOwnNamespace(catalogs, &in),
		Steps: []framework.Step{{Name: "publish the current release while a volume quota holds a scale to 5", Do: func(ctx context.Context, r *framework.Run) error {
			_, current, err := catalogs()
			if err != nil {
				return err
			}
			busy := func(ctx context.Context) error {
				q := quota.DeepCopy()
				q.Namespace = r.Namespace
				if err := r.Suite.Client.Create(ctx, q); err != nil {
					return err
				}
				r.Event("action", "quota", "ResourceQuota volumes: at most 3 PersistentVolumeClaims")
				return r.SetReplicas(ctx, 5)
			}
			release := func(ctx context.Context) error {
				r.Event("action", "quota", "ResourceQuota volumes deleted")
				return r.Suite.Client.Delete(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: quota.Name, Namespace: r.Namespace}})
			}
			settled := func(ctx context.Context) error { return r.WaitSettled(ctx, 5, 5*time.Minute) }
			return olm.PublishV0Gated(ctx, r, in, current, time.Minute, busy, release, settled)
		}}}}
}
