package olm

import (
	"context"
	"fmt"
	"strings"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/upgradegate"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The OLM names of Quorate: package, channel, and the objects an install creates.
const (
	OLMPackage = "quorate"
	OLMChannel = "candidate"
	// olmName names the CatalogSource, OperatorGroup and Subscription of an install.
	olmName = "quorate"
	// operatorDeployment is the Deployment of the CSV's install strategy.
	operatorDeployment = label.OperatorDeployment
	// operatorServiceAccount is the service account of the CSV's install strategy.
	operatorServiceAccount = "quorate-controller-manager"
)

// operatorSelector selects the operator's Deployment, however it was installed.
var operatorSelector = labels.SelectorFromSet(labels.Set{"app.kubernetes.io/name": "quorate", label.ControlPlane: label.ControlPlaneOperator})

// V0 is one installation of Quorate through OLM.
type V0 struct {
	// Namespace holds the CatalogSource, the OperatorGroup, the Subscription and the operator.
	Namespace string
	// CSV is the ClusterServiceVersion the Subscription installed.
	CSV string
	// Image is the operator image of that CSV.
	Image string
}

// InstallV0 installs Quorate the way a customer does from OperatorHub: a CatalogSource
// serving catalogImage, an OperatorGroup targeting targets (none: AllNamespaces) and a
// Subscription to the package's channel with automatic approval, all in ns. It waits until the
// Subscription's CSV has Succeeded and the operator's Deployment is available with the target
// namespaces OLM gave it. It refuses to run beside another Quorate operator: two operators
// would both manage the same clusters.
func InstallV0(ctx context.Context, run *framework.Run, ns, catalogImage string, targets []string) (*V0, error) {
	r := installer{run}
	if err := r.requireOLM(ctx); err != nil {
		return nil, err
	}
	if err := r.refuseOtherOperator(ctx); err != nil {
		return nil, err
	}
	mode, err := r.subscribe(ctx, ns, catalogImage, targets)
	if err != nil {
		return nil, err
	}
	in := &V0{Namespace: ns}
	if err := r.waitSubscribed(ctx, in, ""); err != nil {
		return nil, err
	}
	want := strings.Join(targets, ",")
	if err := r.waitOperator(ctx, in, want); err != nil {
		return nil, err
	}
	r.T.Logf("OLM installed %s (%s, target namespaces %q), operator image %s", in.CSV, mode, want, in.Image)
	if err := r.checkScope(ctx, ns, targets); err != nil {
		return nil, err
	}
	return in, nil
}

// installMode names the OLM install mode of an OperatorGroup in ns targeting targets.
func installMode(ns string, targets []string) string {
	switch {
	case len(targets) == 0:
		return "AllNamespaces"
	case len(targets) == 1 && targets[0] == ns:
		return "OwnNamespace"
	default:
		return "MultiNamespace"
	}
}

// subscribe creates what a customer creates to install from OperatorHub, in ns: a
// CatalogSource serving catalogImage, an OperatorGroup targeting targets (none:
// AllNamespaces) and a Subscription to the package's channel with automatic approval. It waits
// until the catalog serves, and returns the install mode.
func (r installer) subscribe(ctx context.Context, ns, catalogImage string, targets []string) (string, error) {
	mode := installMode(ns, targets)
	r.Phase(fmt.Sprintf("installing Quorate through OLM (%s) from %s", mode, catalogImage))
	r.Event("olm", "install", fmt.Sprintf("CatalogSource %s/%s (%s), OperatorGroup %s, Subscription to %s/%s", ns, olmName, catalogImage, mode, OLMPackage, OLMChannel))
	objs := []client.Object{
		&olm.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: olmName, Namespace: ns}, Spec: olm.CatalogSourceSpec{
			SourceType: olm.SourceTypeGrpc, Image: catalogImage, DisplayName: "Quorate (conformance)", Publisher: "quorate-dev"}},
		&operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: olmName, Namespace: ns}, Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: targets}},
		subscription(ns),
	}
	for _, o := range objs {
		if err := r.Suite.Client.Create(ctx, o); err != nil {
			return "", fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return mode, r.waitCatalogReady(ctx, ns, catalogImage)
}

// subscription is the Subscription of an install in ns, to the package's channel of the
// install's own CatalogSource, approved automatically.
func subscription(ns string) *olm.Subscription {
	return &olm.Subscription{ObjectMeta: metav1.ObjectMeta{Name: olmName, Namespace: ns}, Spec: &olm.SubscriptionSpec{
		CatalogSource: olmName, CatalogSourceNamespace: ns, Package: OLMPackage, Channel: OLMChannel, InstallPlanApproval: olm.ApprovalAutomatic}}
}

// checkScope asks the API server what the operator's service account may do, as
// `kubectl auth can-i --as` does: read Secrets and create Pods in a target namespace, and
// outside the targets only when the install is AllNamespaces.
func (r installer) checkScope(ctx context.Context, ns string, targets []string) error {
	sa := "system:serviceaccount:" + ns + ":" + operatorServiceAccount
	var results []string
	// OLM grants an AllNamespaces install its rules cluster-wide shortly after the CSV succeeds.
	err := r.WaitFor(ctx, "the operator's permissions to match its install mode", time.Minute, func() error {
		var err error
		results, err = r.canI(ctx, sa, ns, targets)
		return err
	})
	if err != nil {
		return err
	}
	msg := "can-i as " + sa + ": " + strings.Join(results, "; ")
	r.Event("olm", "rbac", msg)
	r.T.Log(msg)
	return nil
}

func (r installer) canI(ctx context.Context, sa, ns string, targets []string) ([]string, error) {
	outside := "default"
	var results []string
	for _, q := range []struct {
		verb, resource, namespace string
		want                      bool
	}{
		{"get", "secrets", ns, true},
		{"create", "pods", ns, true},
		{"get", "secrets", outside, len(targets) == 0},
		{"create", "pods", outside, len(targets) == 0},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: sa,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: q.namespace, Verb: q.verb, Resource: q.resource}}}
		if err := r.Suite.Client.Create(ctx, sar); err != nil {
			return nil, fmt.Errorf("asking whether %s may %s %s in %s: %w", sa, q.verb, q.resource, q.namespace, err)
		}
		results = append(results, fmt.Sprintf("%s %s in %s: %v", q.verb, q.resource, q.namespace, sar.Status.Allowed))
		if sar.Status.Allowed != q.want {
			return nil, fmt.Errorf("the operator's service account may %s %s in %s: %v, want %v (%s)", q.verb, q.resource, q.namespace, sar.Status.Allowed, q.want, sar.Status.Reason)
		}
	}
	return results, nil
}

// PublishV0 publishes a new release: the CatalogSource is pointed at catalogImage, which
// holds a newer bundle in the channel, and OLM upgrades the operator on its own (automatic
// approval). It waits for the new CSV to succeed, the old one to be gone and the new operator
// to run, and checks that no etcd member pod was replaced or restarted unless the operator
// declared why (a MemberRestarting Event naming it).
func PublishV0(ctx context.Context, run *framework.Run, in *V0, catalogImage string) error {
	r := installer{run}
	before, err := r.MemberPods(ctx)
	if err != nil {
		return err
	}
	// The installed operator tells OLM it may be upgraded: its clusters are settled.
	if err := r.waitUpgradeable(ctx, in); err != nil {
		return err
	}
	old := *in
	if err := r.publish(ctx, in, catalogImage); err != nil {
		return err
	}
	if err := r.awaitUpgrade(ctx, in, old); err != nil {
		return err
	}
	return r.SettledUntouched(ctx, before)
}

// publish points the CatalogSource at catalogImage and waits until it serves it.
func (r installer) publish(ctx context.Context, in *V0, catalogImage string) error {
	c := r.Suite.Client
	cs := &olm.CatalogSource{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: olmName}, cs); err != nil {
		return err
	}
	patch := client.MergeFrom(cs.DeepCopy())
	cs.Spec.Image = catalogImage
	r.Phase("publishing the new release: CatalogSource image " + catalogImage)
	r.Event("olm", "publish", "CatalogSource now serves "+catalogImage)
	if err := c.Patch(ctx, cs, patch); err != nil {
		return err
	}
	return r.waitCatalogReady(ctx, in.Namespace, catalogImage)
}

// awaitUpgrade waits until OLM has replaced old's CSV by a new one that succeeded, removed
// the old CSV, and the new operator runs and says Upgradeable.
func (r installer) awaitUpgrade(ctx context.Context, in *V0, old V0) error {
	c := r.Suite.Client
	if err := r.waitSubscribed(ctx, in, old.CSV); err != nil {
		return err
	}
	csv := &olm.ClusterServiceVersion{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: in.CSV}, csv); err != nil {
		return err
	}
	if csv.Spec.Replaces != old.CSV {
		return fmt.Errorf("OLM installed %s, which replaces %q, not the installed %s", in.CSV, csv.Spec.Replaces, old.CSV)
	}
	if err := r.WaitFor(ctx, "the replaced CSV "+old.CSV+" to be removed", 5*time.Minute, func() error {
		err := c.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: old.CSV}, &olm.ClusterServiceVersion{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	}); err != nil {
		return err
	}
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: operatorDeployment}, dep); err != nil {
		return err
	}
	if err := r.waitOperator(ctx, in, dep.Spec.Template.Annotations["olm.targetNamespaces"]); err != nil {
		return err
	}
	if in.Image == old.Image {
		return fmt.Errorf("%s and %s run the same operator image %s: the upgrade replaced nothing", old.CSV, in.CSV, in.Image)
	}
	if err := r.waitUpgradeable(ctx, in); err != nil {
		return err
	}
	r.Event("olm", "upgraded", fmt.Sprintf("%s -> %s, operator image %s", old.CSV, in.CSV, in.Image))
	r.T.Logf("OLM upgraded %s -> %s; operator image %s -> %s", old.CSV, in.CSV, old.Image, in.Image)
	return nil
}

// PublishV0Gated publishes the new release while busy keeps a cluster of the installed
// operator changing (a membership change it cannot finish yet). The operator's
// OperatorCondition says Upgradeable=False meanwhile, and OLM must hold the upgrade: for the
// whole hold the old CSV stays installed and no new CSV succeeds. Then release lets the change
// finish; once the cluster has settled, OLM upgrades. The OperatorCondition, the CSVs' phases
// and the InstallPlans are recorded on the timeline as they change, and the upgrade must
// succeed only after the cluster settled.
func PublishV0Gated(ctx context.Context, run *framework.Run, in *V0, catalogImage string, hold time.Duration, busy, release func(context.Context) error, settled func(context.Context) error) error {
	r := installer{run}
	if err := busy(ctx); err != nil {
		return err
	}
	if err := r.waitCondition(ctx, in, metav1.ConditionFalse, upgradegate.ReasonChanging); err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	watched := make(chan map[string]time.Time, 1)
	go func() { watched <- r.watchOLM(wctx, in.Namespace) }()
	defer stop()
	old := *in
	if err := r.publish(ctx, in, catalogImage); err != nil {
		return err
	}
	r.Phase(fmt.Sprintf("holding the membership change for %s: OLM must not upgrade", hold))
	deadline := time.Now().Add(hold)
	for time.Now().Before(deadline) {
		// OLM v0 resolves the upgrade and creates the new CSV at once (the old one shows
		// Replacing, the Subscription names the new one); Upgradeable=False keeps the new CSV
		// Pending, so its Deployment is not rolled out: the operator keeps its old image.
		dep := &appsv1.Deployment{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: operatorDeployment}, dep); err != nil {
			return err
		}
		if img := dep.Spec.Template.Spec.Containers[0].Image; img != old.Image {
			return fmt.Errorf("OLM rolled the operator to %s while the cluster was changing (Upgradeable=False)", img)
		}
		var csvs olm.ClusterServiceVersionList
		if err := r.Suite.Client.List(ctx, &csvs, client.InNamespace(in.Namespace)); err != nil {
			return err
		}
		for _, c := range csvs.Items {
			if c.Name != old.CSV && c.Status.Phase == olm.CSVPhaseSucceeded {
				return fmt.Errorf("CSV %s succeeded while the cluster was changing (Upgradeable=False)", c.Name)
			}
		}
		time.Sleep(time.Second) // a hold window, observed every second
	}
	r.Event("olm", "held", fmt.Sprintf("for %s after the publish, %s kept running its image and no other CSV succeeded", hold, old.CSV))
	if err := release(ctx); err != nil {
		return err
	}
	if err := settled(ctx); err != nil {
		return err
	}
	settledAt := time.Now()
	r.Event("olm", "cluster-settled", "the membership change finished")
	if err := r.awaitUpgrade(ctx, in, old); err != nil {
		return err
	}
	stop()
	seen := <-watched
	if at, ok := seen[in.CSV+" "+string(olm.CSVPhaseSucceeded)]; !ok || at.Before(settledAt) {
		return fmt.Errorf("%s succeeded at %v, before the cluster settled at %v", in.CSV, at, settledAt)
	}
	return nil
}

// waitCondition waits until the installed operator's OperatorCondition has Upgradeable with
// the given status and reason.
func (r installer) waitCondition(ctx context.Context, in *V0, status metav1.ConditionStatus, reason string) error {
	return r.WaitFor(ctx, fmt.Sprintf("OperatorCondition %s to say Upgradeable=%s (%s)", in.CSV, status, reason), 2*time.Minute, func() error {
		oc := &operatorsv2.OperatorCondition{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: in.CSV}, oc); err != nil {
			return err
		}
		got := meta.FindStatusCondition(oc.Spec.Conditions, operatorsv2.Upgradeable)
		if got == nil || got.Status != status || got.Reason != reason {
			return fmt.Errorf("condition Upgradeable is %+v", got)
		}
		r.Event("olm", "upgradeable", fmt.Sprintf("OperatorCondition %s: Upgradeable=%s (%s): %s", in.CSV, got.Status, got.Reason, got.Message))
		return nil
	})
}

// watchOLM records, until ctx ends, every change of the CSVs' phases, the InstallPlans'
// phases and the OperatorConditions' Upgradeable in ns, as timeline events, and returns when
// each "<CSV> <phase>" was first seen.
func (r installer) watchOLM(ctx context.Context, ns string) map[string]time.Time {
	seen := map[string]time.Time{}
	note := func(key, kind, text string) {
		if _, ok := seen[key]; !ok {
			seen[key] = time.Now()
			r.Event("olm", kind, text)
		}
	}
	poll := func(ctx context.Context) {
		var csvs olm.ClusterServiceVersionList
		if err := r.Suite.Client.List(ctx, &csvs, client.InNamespace(ns)); err == nil {
			for _, c := range csvs.Items {
				note(c.Name+" "+string(c.Status.Phase), "csv-phase", fmt.Sprintf("%s %s: %s %s", c.Name, c.Status.Phase, c.Status.Reason, c.Status.Message))
			}
		}
		var plans olm.InstallPlanList
		if err := r.Suite.Client.List(ctx, &plans, client.InNamespace(ns)); err == nil {
			for _, p := range plans.Items {
				note("plan "+p.Name+" "+string(p.Status.Phase), "installplan-phase", fmt.Sprintf("InstallPlan %s (%s) %s", p.Name, strings.Join(p.Spec.ClusterServiceVersionNames, ","), p.Status.Phase))
			}
		}
		var ocs operatorsv2.OperatorConditionList
		if err := r.Suite.Client.List(ctx, &ocs, client.InNamespace(ns)); err == nil {
			for _, oc := range ocs.Items {
				if c := meta.FindStatusCondition(oc.Spec.Conditions, operatorsv2.Upgradeable); c != nil {
					note("oc "+oc.Name+" "+string(c.Status)+" "+c.Reason, "upgradeable", fmt.Sprintf("OperatorCondition %s: Upgradeable=%s (%s): %s", oc.Name, c.Status, c.Reason, c.Message))
				}
			}
		}
	}
	for ctx.Err() == nil {
		poll(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	// One last look once stopped: what the caller waited for (the new CSV's Succeeded) may have
	// come after the last poll. Anything earlier was seen by a poll, a second apart at most.
	last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	poll(last)
	return seen
}

// waitUpgradeable waits until the operator of in's CSV has set Upgradeable on the
// OperatorCondition OLM made for it (named like the CSV), to the whole condition of settled
// clusters.
func (r installer) waitUpgradeable(ctx context.Context, in *V0) error {
	want := metav1.Condition{Type: operatorsv2.Upgradeable, Status: metav1.ConditionTrue, Reason: upgradegate.ReasonSettled, Message: upgradegate.SettledMessage}
	return r.WaitFor(ctx, "OperatorCondition "+in.CSV+" to say Upgradeable", 2*time.Minute, func() error {
		oc := &operatorsv2.OperatorCondition{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: in.CSV}, oc); err != nil {
			return err
		}
		got := meta.FindStatusCondition(oc.Spec.Conditions, operatorsv2.Upgradeable)
		if got == nil {
			return fmt.Errorf("spec.conditions has no Upgradeable: %+v", oc.Spec.Conditions)
		}
		if got.Status != want.Status || got.Reason != want.Reason || got.Message != want.Message {
			return fmt.Errorf("condition Upgradeable is %s/%s %q, want %s/%s %q", got.Status, got.Reason, got.Message, want.Status, want.Reason, want.Message)
		}
		r.Event("olm", "upgradeable", fmt.Sprintf("OperatorCondition %s: Upgradeable=%s (%s)", in.CSV, got.Status, got.Reason))
		return nil
	})
}

// refuseOtherOperator fails when a Quorate operator already runs: the OLM scenarios install
// their own, and two operators would both manage the same clusters.
func (r installer) refuseOtherOperator(ctx context.Context) error {
	deps, err := r.operatorDeployments(ctx)
	if err != nil {
		return err
	}
	for _, d := range deps {
		return fmt.Errorf("a Quorate operator already runs (deployment %s/%s): the OLM scenarios install their own, so run them on a cluster without Quorate (not with --install-operator)", d.Namespace, d.Name)
	}
	return nil
}

// operatorDeployments lists the Quorate operator Deployments (all namespaces, or as opts narrow).
func (r installer) operatorDeployments(ctx context.Context, opts ...client.ListOption) ([]appsv1.Deployment, error) {
	var deps appsv1.DeploymentList
	err := r.Suite.Client.List(ctx, &deps, append(opts, client.MatchingLabelsSelector{Selector: operatorSelector})...)
	return deps.Items, err
}

// requireOLM fails with what to do when OLM's CRDs are not installed.
func (r installer) requireOLM(ctx context.Context) error {
	var l olm.CatalogSourceList
	if err := r.Suite.Client.List(ctx, &l, client.Limit(1)); err != nil {
		if strings.Contains(err.Error(), "no matches for kind") {
			return fmt.Errorf("OLM is not installed on this cluster: install it (make olm, or --install-olm)")
		}
		return err
	}
	return nil
}

// waitCatalogReady waits until the CatalogSource's registry serves image and OLM's connection
// to it is READY.
func (r installer) waitCatalogReady(ctx context.Context, ns, image string) error {
	return r.WaitFor(ctx, "CatalogSource "+ns+"/"+olmName+" to be READY with "+image, 5*time.Minute, func() error {
		cs := &olm.CatalogSource{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: olmName}, cs); err != nil {
			return err
		}
		var pods corev1.PodList
		if err := r.Suite.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"olm.catalogSource": olmName}); err != nil {
			return err
		}
		serving := false
		for _, p := range pods.Items {
			for _, c := range p.Spec.Containers {
				serving = serving || c.Image == image && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero()
			}
		}
		if !serving {
			return fmt.Errorf("no running registry pod with the image yet")
		}
		if s := cs.Status.GRPCConnectionState; s == nil || s.LastObservedState != "READY" {
			return fmt.Errorf("connection state %+v", s)
		}
		return nil
	})
}

// waitSubscribed waits until the Subscription has installed a CSV other than previous and that
// CSV has Succeeded; it records the CSV's phases on the timeline.
func (r installer) waitSubscribed(ctx context.Context, in *V0, previous string) error {
	c := r.Suite.Client
	seen := map[string]bool{}
	err := r.WaitFor(ctx, "the Subscription to install a new CSV that succeeds", 10*time.Minute, func() error {
		sub := &olm.Subscription{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: olmName}, sub); err != nil {
			return err
		}
		name := sub.Status.InstalledCSV
		if name == "" || name == previous {
			name = sub.Status.CurrentCSV
		}
		if name == "" || name == previous {
			return fmt.Errorf("subscription state %q, installed %q, current %q", sub.Status.State, sub.Status.InstalledCSV, sub.Status.CurrentCSV)
		}
		csv := &olm.ClusterServiceVersion{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: name}, csv); err != nil {
			return fmt.Errorf("CSV %s: %w", name, err)
		}
		if p := string(csv.Status.Phase); p != "" && !seen[p] {
			seen[p] = true
			r.Event("olm", "csv-phase", fmt.Sprintf("%s %s: %s", name, p, csv.Status.Message))
		}
		if csv.Status.Phase == olm.CSVPhaseFailed {
			return fmt.Errorf("CSV %s Failed: %s (%s)", name, csv.Status.Message, csv.Status.Reason)
		}
		if csv.Status.Phase != olm.CSVPhaseSucceeded || sub.Status.InstalledCSV != name {
			return fmt.Errorf("CSV %s is %s (%s), subscription installed %q", name, csv.Status.Phase, csv.Status.Message, sub.Status.InstalledCSV)
		}
		var phases []string
		for _, cond := range csv.Status.Conditions {
			phases = append(phases, string(cond.Phase))
		}
		r.T.Logf("CSV %s phases: %s", name, strings.Join(phases, " -> "))
		in.CSV = name
		for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
			if d.Name == operatorDeployment && len(d.Spec.Template.Spec.Containers) > 0 {
				in.Image = d.Spec.Template.Spec.Containers[0].Image
			}
		}
		if in.Image == "" {
			return fmt.Errorf("CSV %s has no deployment %s", name, operatorDeployment)
		}
		return nil
	})
	return err
}

// waitOperator waits until the operator Deployment runs in.Image on every replica, with the
// target namespaces OLM passes to it (empty: all namespaces).
func (r installer) waitOperator(ctx context.Context, in *V0, targets string) error {
	return r.WaitFor(ctx, "the operator deployment to run "+in.Image, 5*time.Minute, func() error {
		d := &appsv1.Deployment{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: operatorDeployment}, d); err != nil {
			return err
		}
		if got := d.Spec.Template.Annotations["olm.targetNamespaces"]; got != targets {
			return fmt.Errorf("olm.targetNamespaces is %q, want %q", got, targets)
		}
		if err := rolledOut(d); err != nil {
			return err
		}
		var pods corev1.PodList
		if err := r.Suite.Client.List(ctx, &pods, client.InNamespace(in.Namespace), client.MatchingLabelsSelector{Selector: operatorSelector}); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if len(p.Spec.Containers) == 0 || p.Spec.Containers[0].Image != in.Image {
				return fmt.Errorf("operator pod %s still runs another image", p.Name)
			}
		}
		return nil
	})
}
