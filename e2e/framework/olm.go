package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	operatorDeployment = "quorate-controller-manager"
)

// operatorSelector selects the operator's Deployment, however it was installed.
var operatorSelector = labels.SelectorFromSet(labels.Set{"app.kubernetes.io/name": "quorate", "control-plane": "controller-manager"})

// OLMInstall is one installation of Quorate through OLM.
type OLMInstall struct {
	// Namespace holds the CatalogSource, the OperatorGroup, the Subscription and the operator.
	Namespace string
	// CSV is the ClusterServiceVersion the Subscription installed.
	CSV string
	// Image is the operator image of that CSV.
	Image string
}

// InstallWithOLM installs Quorate the way a customer does from OperatorHub: a CatalogSource
// serving catalogImage, an OperatorGroup targeting targets (none: AllNamespaces) and a
// Subscription to the package's channel with automatic approval, all in ns. It waits until the
// Subscription's CSV has Succeeded and the operator's Deployment is available with the target
// namespaces OLM gave it. It refuses to run beside another Quorate operator: two operators
// would both manage the same clusters.
func (r *Run) InstallWithOLM(ctx context.Context, ns, catalogImage string, targets []string) (*OLMInstall, error) {
	c := r.Suite.Client
	if err := r.requireOLM(ctx); err != nil {
		return nil, err
	}
	if err := r.refuseOtherOperator(ctx); err != nil {
		return nil, err
	}
	mode := "AllNamespaces"
	if len(targets) > 0 {
		mode = "OwnNamespace"
		if len(targets) > 1 || targets[0] != ns {
			mode = "MultiNamespace"
		}
	}
	r.Phase(fmt.Sprintf("installing Quorate through OLM (%s) from %s", mode, catalogImage))
	r.Event("olm", "install", fmt.Sprintf("CatalogSource %s/%s (%s), OperatorGroup %s, Subscription to %s/%s", ns, olmName, catalogImage, mode, OLMPackage, OLMChannel))
	objs := []client.Object{
		&olm.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: olmName, Namespace: ns}, Spec: olm.CatalogSourceSpec{
			SourceType: olm.SourceTypeGrpc, Image: catalogImage, DisplayName: "Quorate (conformance)", Publisher: "quorate-dev"}},
		&operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: olmName, Namespace: ns}, Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: targets}},
		&olm.Subscription{ObjectMeta: metav1.ObjectMeta{Name: olmName, Namespace: ns}, Spec: &olm.SubscriptionSpec{
			CatalogSource: olmName, CatalogSourceNamespace: ns, Package: OLMPackage, Channel: OLMChannel, InstallPlanApproval: olm.ApprovalAutomatic}},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	if err := r.waitCatalogReady(ctx, ns, catalogImage); err != nil {
		return nil, err
	}
	in := &OLMInstall{Namespace: ns}
	if err := r.waitSubscribed(ctx, in, ""); err != nil {
		return nil, err
	}
	want := strings.Join(targets, ",")
	if err := r.waitOperator(ctx, in, want); err != nil {
		return nil, err
	}
	r.T.Logf("OLM installed %s (%s, target namespaces %q), operator image %s", in.CSV, mode, want, in.Image)
	return in, nil
}

// PublishWithOLM publishes a new release: the CatalogSource is pointed at catalogImage, which
// holds a newer bundle in the channel, and OLM upgrades the operator on its own (automatic
// approval). It waits for the new CSV to succeed, the old one to be gone and the new operator
// to run, and checks that no etcd member pod was replaced or restarted unless the operator
// declared why (a MemberRestarting Event naming it).
func (r *Run) PublishWithOLM(ctx context.Context, in *OLMInstall, catalogImage string) error {
	c := r.Suite.Client
	before, err := r.memberPods(ctx)
	if err != nil {
		return err
	}
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
	old := *in
	if err := r.waitCatalogReady(ctx, in.Namespace, catalogImage); err != nil {
		return err
	}
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
	if err := r.waitFor(ctx, "the replaced CSV "+old.CSV+" to be removed", 5*time.Minute, func() error {
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
	r.Event("olm", "upgraded", fmt.Sprintf("%s -> %s, operator image %s", old.CSV, in.CSV, in.Image))
	r.T.Logf("OLM upgraded %s -> %s; operator image %s -> %s", old.CSV, in.CSV, old.Image, in.Image)
	return r.settledUntouched(ctx, before)
}

// memberPod is what says whether a member's pod was replaced or restarted.
type memberPod struct {
	UID      types.UID
	Restarts int32
}

func (r *Run) memberPods(ctx context.Context) (map[string]memberPod, error) {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]memberPod{}
	for _, m := range ec.Status.Members {
		p := &corev1.Pod{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: m.Name}, p); err != nil {
			return nil, fmt.Errorf("pod of member %s: %w", m.Name, err)
		}
		mp := memberPod{UID: p.UID}
		for _, cs := range p.Status.ContainerStatuses {
			mp.Restarts += cs.RestartCount
		}
		out[m.Name] = mp
	}
	return out, nil
}

// settledUntouched waits until the cluster settles after an operator upgrade, then compares
// the member pods with before: each must be the same pod with no new restart, unless the
// operator announced its replacement.
func (r *Run) settledUntouched(ctx context.Context, before map[string]memberPod) error {
	if err := r.WaitSettled(ctx, r.Scenario.Replicas, 5*time.Minute); err != nil {
		return err
	}
	problems, err := r.podProblems(ctx, before, func(m string, b, a memberPod, announced bool) string {
		switch {
		case a.UID != b.UID && !announced:
			return m + "'s pod was replaced without a MemberRestarting event"
		case a.Restarts != b.Restarts && !announced:
			return fmt.Sprintf("%s's containers restarted (%d -> %d restarts)", m, b.Restarts, a.Restarts)
		case a.UID != b.UID:
			r.T.Logf("%s was replaced, as the operator announced (MemberRestarting)", m)
		}
		return ""
	})
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("the operator upgrade disturbed etcd members: %s", strings.Join(problems, "; "))
	}
	r.T.Logf("all %d member pods kept their UIDs and restart counts through the operator upgrade", len(before))
	return nil
}

// podProblems judges each member's pod now against before, sorted: judge gets the member's
// pods before and now, and whether the operator announced its replacement (a MemberRestarting
// event), and returns what is wrong ("" for nothing). A member that is gone is a problem.
func (r *Run) podProblems(ctx context.Context, before map[string]memberPod, judge func(m string, b, a memberPod, announced bool) string) ([]string, error) {
	after, err := r.memberPods(ctx)
	if err != nil {
		return nil, err
	}
	announced, err := r.eventsFor(ctx, "MemberRestarting")
	if err != nil {
		return nil, err
	}
	var problems []string
	for m, b := range before {
		a, ok := after[m]
		if !ok {
			problems = append(problems, m+" is no longer a member")
		} else if p := judge(m, b, a, announced[m]); p != "" {
			problems = append(problems, p)
		}
	}
	sort.Strings(problems)
	return problems, nil
}

// eventsFor returns the members named by the operator's Events with this reason in the run's
// namespace (the operator's messages name the member as a word: "replacing the pod of NAME ...").
func (r *Run) eventsFor(ctx context.Context, reason string) (map[string]bool, error) {
	var events corev1.EventList
	if err := r.Suite.Client.List(ctx, &events, client.InNamespace(r.Namespace)); err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, e := range events.Items {
		if e.Reason != reason {
			continue
		}
		for _, w := range strings.Fields(e.Message) {
			named[w] = true
		}
	}
	return named, nil
}

// refuseOtherOperator fails when a Quorate operator already runs: the OLM scenarios install
// their own, and two operators would both manage the same clusters.
func (r *Run) refuseOtherOperator(ctx context.Context) error {
	var deps appsv1.DeploymentList
	if err := r.Suite.Client.List(ctx, &deps, client.MatchingLabelsSelector{Selector: operatorSelector}); err != nil {
		return err
	}
	for _, d := range deps.Items {
		return fmt.Errorf("a Quorate operator already runs (deployment %s/%s): the OLM scenarios install their own, so run them on a cluster without Quorate (not with --install-operator)", d.Namespace, d.Name)
	}
	return nil
}

// requireOLM fails with what to do when OLM's CRDs are not installed.
func (r *Run) requireOLM(ctx context.Context) error {
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
func (r *Run) waitCatalogReady(ctx context.Context, ns, image string) error {
	return r.waitFor(ctx, "CatalogSource "+ns+"/"+olmName+" to be READY with "+image, 5*time.Minute, func() error {
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
func (r *Run) waitSubscribed(ctx context.Context, in *OLMInstall, previous string) error {
	c := r.Suite.Client
	seen := map[string]bool{}
	err := r.waitFor(ctx, "the Subscription to install a new CSV that succeeds", 10*time.Minute, func() error {
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
func (r *Run) waitOperator(ctx context.Context, in *OLMInstall, targets string) error {
	return r.waitFor(ctx, "the operator deployment to run "+in.Image, 5*time.Minute, func() error {
		d := &appsv1.Deployment{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: operatorDeployment}, d); err != nil {
			return err
		}
		if got := d.Spec.Template.Annotations["olm.targetNamespaces"]; got != targets {
			return fmt.Errorf("olm.targetNamespaces is %q, want %q", got, targets)
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != *d.Spec.Replicas || d.Status.AvailableReplicas != *d.Spec.Replicas || d.Status.Replicas != *d.Spec.Replicas {
			return fmt.Errorf("rollout: %d updated, %d available, %d in all, of %d", d.Status.UpdatedReplicas, d.Status.AvailableReplicas, d.Status.Replicas, *d.Spec.Replicas)
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

// DeleteNamespace deletes a namespace and waits until it is gone.
func (r *Run) DeleteNamespace(ctx context.Context, ns string) error {
	err := r.Suite.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return r.waitFor(ctx, "namespace "+ns+" to be gone", 5*time.Minute, func() error {
		err := r.Suite.Client.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// CreateNamespace creates a namespace labelled as the run's.
func (r *Run) CreateNamespace(ctx context.Context, ns string) error {
	return r.Suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"quorate.dev/conformance": r.Scenario.Name}}})
}
