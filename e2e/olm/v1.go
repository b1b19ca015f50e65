package olm

import (
	"context"
	"fmt"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/e2e/framework"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OLM v1's API (operator-controller), used unstructured: its Go module pins another Kubernetes
// release than Quorate's.
var (
	clusterCatalogGVK   = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterCatalog"}
	clusterExtensionGVK = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterExtension"}
)

const etcdClusterCRD = "etcdclusters.etcd.quorate.dev"

// V1 is one installation of Quorate by OLM v1: a ClusterCatalog and a ClusterExtension.
type V1 struct {
	Catalog, Extension string
	// Namespace holds the operator and the installer's ServiceAccount.
	Namespace string
	// Bundle is the installed bundle (quorate.vX.Y.Z) and Image its operator image.
	Bundle, Image string
}

func newUnstructured(gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	return u
}

// InstallV1 installs Quorate the OLM v1 way: a ClusterCatalog serving catalogImage, a
// namespace ns with a ServiceAccount OLM v1 installs as (bound to cluster-admin: the bundle
// brings CRDs and cluster RBAC), and a ClusterExtension for the package at version. It waits
// until the catalog is Serving, the extension is Installed with that bundle and the operator's
// Deployment runs the bundle's image. Deleting what it made is registered with OnCleanup.
func InstallV1(ctx context.Context, run *framework.Run, ns, catalogImage, version string) (*V1, error) {
	r := installer{run}
	c := r.Suite.Client
	var l unstructured.UnstructuredList
	l.SetGroupVersionKind(clusterExtensionGVK.GroupVersion().WithKind("ClusterExtensionList"))
	if err := c.List(ctx, &l, client.Limit(1)); err != nil {
		if meta.IsNoMatchError(err) || strings.Contains(err.Error(), "no matches for kind") {
			return nil, fmt.Errorf("OLM v1 is not installed on this cluster: install it (make olmv1, or --install-olm with --olmv1)")
		}
		return nil, err
	}
	if err := r.refuseOtherOperator(ctx); err != nil {
		return nil, err
	}
	// OLM v1 owns what it installs and will not take over a CRD another installer left (OLM v0
	// keeps CRDs when a CSV goes): say so before the ClusterExtension fails on it.
	crd := newUnstructured(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, etcdClusterCRD)
	if err := c.Get(ctx, types.NamespacedName{Name: etcdClusterCRD}, crd); err == nil {
		return nil, fmt.Errorf("the CRD %s already exists (left by another installer, e.g. OLM v0 or make deploy): OLM v1 will not adopt it; delete it (and every EtcdCluster) or use a cluster without it", etcdClusterCRD)
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	in := &V1{Catalog: "quorate-" + r.Namespace, Extension: "quorate-" + r.Namespace, Namespace: ns}
	r.Phase(fmt.Sprintf("installing Quorate %s through OLM v1 from %s", version, catalogImage))
	r.Event("olm", "install", fmt.Sprintf("ClusterCatalog %s (%s), ClusterExtension %s for %s %s in %s", in.Catalog, catalogImage, in.Extension, OLMPackage, version, ns))

	// Undone newest first: the extension (OLM v1 uninstalls the operator and its CRD), then the
	// installer's binding and namespace, then the catalog.
	cat := newUnstructured(clusterCatalogGVK, in.Catalog)
	cat.Object["spec"] = map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": catalogImage}}}
	if err := c.Create(ctx, cat); err != nil {
		return nil, fmt.Errorf("creating ClusterCatalog %s: %w", in.Catalog, err)
	}
	r.OnCleanup(func(ctx context.Context) error {
		return r.DeleteAndWait(ctx, newUnstructured(clusterCatalogGVK, in.Catalog))
	})
	if err := r.CreateNamespace(ctx, ns); err != nil {
		return nil, err
	}
	r.OnCleanup(func(ctx context.Context) error { return r.DeleteNamespace(ctx, ns) })
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quorate-installer", Namespace: ns}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "quorate-installer-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: ns}}}
	for _, o := range []client.Object{sa, crb} {
		if err := c.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	r.OnCleanup(func(ctx context.Context) error { return r.DeleteAndWait(ctx, crb.DeepCopy()) })
	if err := r.waitCatalogServing(ctx, in.Catalog, catalogImage); err != nil {
		return nil, err
	}
	ext := newUnstructured(clusterExtensionGVK, in.Extension)
	ext.Object["spec"] = map[string]any{
		"namespace":      ns,
		"serviceAccount": map[string]any{"name": sa.Name},
		"source": map[string]any{"sourceType": "Catalog", "catalog": map[string]any{
			"packageName": OLMPackage, "version": version, "channels": []any{OLMChannel},
			"selector": map[string]any{"matchLabels": map[string]any{"olm.operatorframework.io/metadata.name": in.Catalog}},
		}},
	}
	if err := c.Create(ctx, ext); err != nil {
		return nil, fmt.Errorf("creating ClusterExtension %s: %w", in.Extension, err)
	}
	r.OnCleanup(func(ctx context.Context) error {
		return r.DeleteAndWait(ctx, newUnstructured(clusterExtensionGVK, in.Extension))
	})
	if err := r.waitExtensionInstalled(ctx, in, "quorate.v"+version); err != nil {
		return nil, err
	}
	if err := r.waitOperatorImage(ctx, in.Namespace, in.Image); err != nil {
		return nil, err
	}
	r.T.Logf("OLM v1 installed %s in %s, operator image %s", in.Bundle, ns, in.Image)
	return in, nil
}

// UpgradeV1 asks OLM v1 for another version of the installed package, the way a user
// upgrades a ClusterExtension, and waits until it is installed and the operator runs its
// image. Member pods must be untouched unless the operator declared why.
func UpgradeV1(ctx context.Context, run *framework.Run, in *V1, version string) error {
	r := installer{run}
	c := r.Suite.Client
	before, err := r.MemberPods(ctx)
	if err != nil {
		return err
	}
	r.recordUpgradeGate(ctx, in.Namespace)
	ext := newUnstructured(clusterExtensionGVK, in.Extension)
	if err := c.Get(ctx, types.NamespacedName{Name: in.Extension}, ext); err != nil {
		return err
	}
	patch := client.MergeFrom(ext.DeepCopy())
	if err := unstructured.SetNestedField(ext.Object, version, "spec", "source", "catalog", "version"); err != nil {
		return err
	}
	r.Phase("upgrading through OLM v1: ClusterExtension version " + version)
	r.Event("olm", "upgrade", fmt.Sprintf("ClusterExtension %s version %s", in.Extension, version))
	if err := c.Patch(ctx, ext, patch); err != nil {
		return err
	}
	old := *in
	if err := r.waitExtensionInstalled(ctx, in, "quorate.v"+version); err != nil {
		return err
	}
	if in.Image == old.Image {
		return fmt.Errorf("%s and %s run the same operator image %s: the upgrade replaced nothing", old.Bundle, in.Bundle, in.Image)
	}
	if err := r.waitOperatorImage(ctx, in.Namespace, in.Image); err != nil {
		return err
	}
	r.Event("olm", "upgraded", fmt.Sprintf("%s -> %s, operator image %s", old.Bundle, in.Bundle, in.Image))
	r.T.Logf("OLM v1 upgraded %s -> %s; operator image %s -> %s", old.Bundle, in.Bundle, old.Image, in.Image)
	return r.SettledUntouched(ctx, before)
}

// recordUpgradeGate records whether OLM v1 gives the operator an OperatorCondition to hold
// upgrades with (OLM v0 does): the OPERATOR_CONDITION_NAME variable in its Deployment, and
// OperatorConditions in its namespace.
func (r installer) recordUpgradeGate(ctx context.Context, ns string) {
	d := &appsv1.Deployment{}
	env := "unknown"
	if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: operatorDeployment}, d); err == nil {
		env = "unset"
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "OPERATOR_CONDITION_NAME" {
					env = e.Value
				}
			}
		}
	}
	n := "unknown (no OperatorCondition API)"
	var list operatorsv2.OperatorConditionList
	if err := r.Suite.Client.List(ctx, &list, client.InNamespace(ns)); err == nil {
		n = fmt.Sprint(len(list.Items))
	}
	msg := fmt.Sprintf("OLM v1 upgrade gate: OPERATOR_CONDITION_NAME %s, OperatorConditions in %s: %s", env, ns, n)
	r.Event("olm", "upgrade-gate", msg)
	r.T.Log(msg)
}

// waitCatalogServing waits until catalogd has unpacked image and serves it.
func (r installer) waitCatalogServing(ctx context.Context, name, image string) error {
	return r.WaitFor(ctx, "ClusterCatalog "+name+" to serve "+image, 5*time.Minute, func() error {
		u := newUnstructured(clusterCatalogGVK, name)
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Name: name}, u); err != nil {
			return err
		}
		if ok, msg := condition(u, "Serving"); !ok {
			p, _ := condition(u, "Progressing")
			return fmt.Errorf("not serving (%s; progressing %v)", msg, p)
		}
		ref, _, _ := unstructured.NestedString(u.Object, "status", "resolvedSource", "image", "ref")
		if ref == "" {
			return fmt.Errorf("no resolved image yet")
		}
		r.T.Logf("ClusterCatalog %s serves %s", name, ref)
		return nil
	})
}

// waitExtensionInstalled waits until the ClusterExtension reports bundle installed, recording
// the conditions it passes through on the timeline, and reads the operator image the bundle
// deployed.
func (r installer) waitExtensionInstalled(ctx context.Context, in *V1, bundle string) error {
	seen := map[string]bool{}
	return r.WaitFor(ctx, "ClusterExtension "+in.Extension+" to install "+bundle, 10*time.Minute, func() error {
		u := newUnstructured(clusterExtensionGVK, in.Extension)
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Name: in.Extension}, u); err != nil {
			return err
		}
		installed, msg := condition(u, "Installed")
		progressing, pmsg := condition(u, "Progressing")
		got, _, _ := unstructured.NestedString(u.Object, "status", "install", "bundle", "name")
		if k := fmt.Sprintf("bundle %q Installed=%v Progressing=%v %s", got, installed, progressing, pmsg); !seen[k] {
			seen[k] = true
			r.Event("olm", "extension", in.Extension+": "+k)
		}
		if !installed || got != bundle {
			return fmt.Errorf("installed %v (%s), bundle %q; progressing: %s", installed, msg, got, pmsg)
		}
		in.Bundle = got
		var deps appsv1.DeploymentList
		if err := r.Suite.Client.List(ctx, &deps, client.InNamespace(in.Namespace), client.MatchingLabelsSelector{Selector: operatorSelector}); err != nil {
			return err
		}
		if len(deps.Items) != 1 || len(deps.Items[0].Spec.Template.Spec.Containers) == 0 {
			return fmt.Errorf("%d operator deployments in %s", len(deps.Items), in.Namespace)
		}
		in.Image = deps.Items[0].Spec.Template.Spec.Containers[0].Image
		return nil
	})
}

// waitOperatorImage waits until the operator Deployment in ns has rolled out image.
func (r installer) waitOperatorImage(ctx context.Context, ns, image string) error {
	return r.WaitFor(ctx, "the operator deployment to run "+image, 5*time.Minute, func() error {
		d := &appsv1.Deployment{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: operatorDeployment}, d); err != nil {
			return err
		}
		if d.Spec.Template.Spec.Containers[0].Image != image {
			return fmt.Errorf("deployment runs %s", d.Spec.Template.Spec.Containers[0].Image)
		}
		if err := rolledOut(d); err != nil {
			return err
		}
		return nil
	})
}

// condition returns whether the object's status condition t is True, and its reason and message.
func condition(u *unstructured.Unstructured, t string) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == t {
			return m["status"] == "True", fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
	}
	return false, "no " + t + " condition yet"
}
