package olm

import (
	"context"
	"fmt"
	"time"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/e2e/framework"
)

// MoveV0 moves the management of the clusters in ns from the install from (AllNamespaces, in
// a namespace of its own) to an OwnNamespace install in ns, through OLM v0, as docs/olm.md
// tells users to:
//
//  1. The new install is subscribed first, while the old one runs, as users often do. OLM v0
//     does not start a second operator: the old CSV's copy in ns (OLM copies a CSV into every
//     namespace its install targets) satisfies the new Subscription, whose InstallPlan
//     completes with nothing installed; no operator Deployment appears in ns (checked). That
//     Subscription is then deleted: once the copy goes with the old install, OLM may or may
//     not install the new operator by itself (both seen here), so it is created again below.
//  2. The old install is removed as OLM's docs say: its Subscription, then its CSV. OLM
//     removes the operator Deployment and the copied CSVs; the CRDs and every EtcdCluster
//     stay, and etcd keeps serving with no operator.
//  3. The new install is subscribed again, and OLM installs the operator in ns with rules in
//     ns alone (checked with SubjectAccessReviews).
//
// It returns the new install and when the old one was being removed: the new install's claims
// must come after it.
func MoveV0(ctx context.Context, run *framework.Run, from *V0, ns, catalogImage string) (*V0, time.Time, error) {
	r := installer{run}
	targets := []string{ns}
	if _, err := r.subscribe(ctx, ns, catalogImage, targets); err != nil {
		return nil, time.Time{}, err
	}
	if err := r.waitCopied(ctx, from, ns); err != nil {
		return nil, time.Time{}, err
	}
	r.Event("olm", "unsubscribe", fmt.Sprintf("Subscription %s/%s deleted until the install in %s is gone", ns, olmName, from.Namespace))
	if err := r.DeleteAndWait(ctx, subscription(ns)); err != nil {
		return nil, time.Time{}, err
	}
	removed := time.Now()
	if err := r.uninstall(ctx, from, ns); err != nil {
		return nil, time.Time{}, err
	}
	r.Phase("subscribing the namespaced install again: OLM installs its operator in " + ns)
	r.Event("olm", "subscribe", fmt.Sprintf("Subscription %s/%s created again", ns, olmName))
	if err := r.Suite.Client.Create(ctx, subscription(ns)); err != nil {
		return nil, time.Time{}, err
	}
	in := &V0{Namespace: ns}
	if err := r.waitSubscribed(ctx, in, ""); err != nil {
		return nil, time.Time{}, err
	}
	if err := r.waitOperator(ctx, in, ns); err != nil {
		return nil, time.Time{}, err
	}
	r.T.Logf("OLM installed %s in %s (OwnNamespace), operator image %s", in.CSV, ns, in.Image)
	if err := r.checkScope(ctx, ns, targets); err != nil {
		return nil, time.Time{}, err
	}
	return in, removed, nil
}

// waitCopied waits until the Subscription in ns counts as installed the copy of from's CSV
// that OLM keeps in every namespace from's install targets, and fails at once if an operator Deployment
// appears in ns: OLM would then run two operators on the same clusters.
func (r installer) waitCopied(ctx context.Context, from *V0, ns string) error {
	c := r.Suite.Client
	err := r.WaitFor(ctx, "the Subscription in "+ns+" to count the copy of "+from.CSV+" as its install", 5*time.Minute, func() error {
		if err := r.noOperatorIn(ctx, ns); err != nil {
			return fmt.Errorf("%w: %v", framework.ErrStop, err)
		}
		sub := &olm.Subscription{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: olmName}, sub); err != nil {
			return err
		}
		if sub.Status.InstalledCSV != from.CSV || sub.Status.InstallPlanRef == nil {
			return fmt.Errorf("subscription state %q, installed %q", sub.Status.State, sub.Status.InstalledCSV)
		}
		plan := &olm.InstallPlan{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: sub.Status.InstallPlanRef.Name}, plan); err != nil {
			return err
		}
		if plan.Status.Phase != olm.InstallPlanPhaseComplete {
			return fmt.Errorf("InstallPlan %s is %q", plan.Name, plan.Status.Phase)
		}
		csv := &olm.ClusterServiceVersion{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: from.CSV}, csv); err != nil {
			return err
		}
		if csv.Labels["olm.copiedFrom"] != from.Namespace || csv.Status.Reason != olm.CSVReasonCopied {
			return fmt.Errorf("CSV %s in %s: copied from %q, reason %q", from.CSV, ns, csv.Labels["olm.copiedFrom"], csv.Status.Reason)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Checked once more after OLM finished with the Subscription.
	if err := r.noOperatorIn(ctx, ns); err != nil {
		return err
	}
	msg := fmt.Sprintf("Subscription %s/%s installed %s, the copy of the running install in %s: no second operator", ns, olmName, from.CSV, from.Namespace)
	r.Event("olm", "copied", msg)
	r.T.Log(msg)
	return nil
}

// noOperatorIn fails when a Quorate operator Deployment exists in ns.
func (r installer) noOperatorIn(ctx context.Context, ns string) error {
	deps, err := r.operatorDeployments(ctx, client.InNamespace(ns))
	if err != nil {
		return err
	}
	if len(deps) > 0 {
		return fmt.Errorf("OLM created operator Deployment %s/%s while the install in another namespace manages %s", ns, deps[0].Name, ns)
	}
	return nil
}

// uninstall removes the install in, as OLM's documentation says: its Subscription, then its
// CSV. It waits until the operator's pods are gone and OLM removed the CSV's copy in ns.
func (r installer) uninstall(ctx context.Context, in *V0, ns string) error {
	c := r.Suite.Client
	r.Phase("removing the cluster-wide install in " + in.Namespace + ": Subscription, then CSV " + in.CSV)
	r.Event("olm", "uninstall", fmt.Sprintf("Subscription %s/%s and CSV %s deleted", in.Namespace, olmName, in.CSV))
	if err := r.DeleteAndWait(ctx, subscription(in.Namespace)); err != nil {
		return err
	}
	if err := r.DeleteAndWait(ctx, &olm.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: in.CSV}}); err != nil {
		return err
	}
	return r.WaitFor(ctx, "the operator in "+in.Namespace+" and the CSV's copy in "+ns+" to be gone", 5*time.Minute, func() error {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(in.Namespace), client.MatchingLabelsSelector{Selector: operatorSelector}); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("operator pod %s still there", pods.Items[0].Name)
		}
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: in.CSV}, &olm.ClusterServiceVersion{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("CSV %s in %s still there (%v)", in.CSV, ns, err)
		}
		return nil
	})
}
