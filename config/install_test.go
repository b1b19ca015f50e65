// Package config holds the kustomize configuration; its test asks a real API server what each
// install from this repository grants the operator.
package config

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/quorate-dev/quorate/e2e/framework"
)

// can is one question to the authorizer: may a service account do verb on resource (of group)
// in namespace ("" cluster-wide)? resource may name a subresource (pods/exec) and one object
// (clusterroles@cluster-admin).
type can struct {
	verb, group, resource, namespace string
	want                             bool
}

// The rights of the two installs from this repository, as kubectl auth can-i would answer them
// for the operator's service account: config/default binds the manager's ClusterRole with a
// ClusterRoleBinding (Secrets read and written, Pods and Jobs created in every namespace: the
// user guide says so), config/namespaced with a RoleBinding in its own namespace (nothing
// elsewhere, nothing cluster-scoped). Each install's RBAC is what `kustomize build` makes of
// it (names, namespaces and bindings as a user applies them), created in a real API server.
func TestInstallRights(t *testing.T) {
	c, _ := apiServer(t)
	ctx := context.Background()
	create(ctx, t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	for _, install := range []string{"default", "namespaced"} {
		for _, obj := range kustomizeBuild(t, install) {
			switch obj.GetKind() {
			case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			default:
				continue
			}
			if ns := obj.GetNamespace(); ns != "" {
				if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatal(err)
				}
			}
			if err := c.Create(ctx, obj); err != nil && (!apierrors.IsAlreadyExists(err) || obj.GetKind() != "Namespace") {
				t.Fatalf("config/%s: creating %s %s: %v", install, obj.GetKind(), obj.GetName(), err)
			}
		}
	}

	for install, tc := range map[string]struct {
		namespace string
		questions []can
	}{
		"config/default": {"quorate-system", []can{
			{"get", "", "secrets", "other", true}, {"create", "", "secrets", "other", true}, {"list", "", "secrets", "other", true},
			{"create", "", "pods", "other", true}, {"create", "batch", "jobs", "other", true},
			{"delete", "", "persistentvolumeclaims", "other", true},
			{"get", "", "namespaces", "", true}, {"delete", "", "namespaces", "", false}, {"create", "", "namespaces", "", false},
			{"create", "", "pods/exec", "other", false}, {"create", "rbac.authorization.k8s.io", "rolebindings", "other", false},
			{"escalate", "rbac.authorization.k8s.io", "clusterroles", "", false}, {"update", "", "nodes", "", false},
		}},
		"config/namespaced": {"quorate-namespaced", []can{
			{"get", "", "secrets", "quorate-namespaced", true}, {"create", "", "pods", "quorate-namespaced", true}, {"create", "batch", "jobs", "quorate-namespaced", true},
			{"get", "", "secrets", "other", false}, {"list", "", "secrets", "other", false}, {"create", "", "pods", "other", false},
			{"create", "batch", "jobs", "other", false}, {"get", "", "secrets", "quorate-system", false},
			{"get", "", "namespaces", "", false}, {"list", "etcd.quorate.dev", "etcdclusters", "", false},
			{"create", "", "pods/exec", "quorate-namespaced", false}, {"create", "rbac.authorization.k8s.io", "rolebindings", "quorate-namespaced", false},
		}},
	} {
		ask(ctx, t, c, install, tc.namespace, "quorate-controller-manager", tc.questions)
	}
}

// ask puts each question to the authorizer for service account namespace/name. The RBAC
// authorizer reads roles and bindings from its own informers, which see objects just created
// a moment later: a right that should be given is asked until it is (a minute at most), and
// the rights that should not be are asked once every given one is seen, when the authorizer
// has caught up.
func ask(ctx context.Context, t *testing.T, c client.Client, what, namespace, name string, questions []can) {
	t.Helper()
	allowed := func(q can) (bool, string) {
		res, object, _ := strings.Cut(q.resource, "@")
		res, sub, _ := strings.Cut(res, "/")
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "system:serviceaccount:" + namespace + ":" + name,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: q.verb, Group: q.group, Resource: res, Subresource: sub,
				Namespace: q.namespace, Name: object}}}
		if err := c.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed, sar.Status.Reason
	}
	for _, wantAllowed := range []bool{true, false} {
		for _, q := range questions {
			if q.want != wantAllowed {
				continue
			}
			got, reason := allowed(q)
			for deadline := time.Now().Add(time.Minute); q.want && !got && time.Now().Before(deadline); {
				time.Sleep(100 * time.Millisecond)
				got, reason = allowed(q)
			}
			if got != q.want {
				t.Errorf("%s: may %s %s %s in %q? %v, want %v (%s)", what, name, q.verb, q.resource, q.namespace, got, q.want, reason)
			}
		}
	}
}

// apiServer starts a kube-apiserver and etcd (envtest: RBAC and admission policies on) for
// the test, and returns an administrator's client and its configuration.
func apiServer(t *testing.T) (client.Client, *rest.Config) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run these tests with `make test`, which builds the API server from source")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, cfg
}

func create(ctx context.Context, t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// The conformance Job's rights (config/conformance: rbac.yaml, policy.yaml and
// operator-namespace.yaml, as kustomize places them with Quorate in quorate-system), asked of a
// real API server as kubectl auth can-i would, and its admission policy tried by the Job's own
// identity (server-side dry runs; the suite refuses to run as the Job until it is in force): namespaces and RoleBindings only for its qc-* scenarios, the
// scenario role bound only to itself, no Secret anywhere, only reads where Quorate runs.
func TestConformanceJobRights(t *testing.T) {
	c, cfg := apiServer(t)
	ctx := context.Background()
	for _, name := range []string{"quorate-conformance", "quorate-system", "kube-system-like"} {
		create(ctx, t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	for _, f := range []string{"rbac.yaml", "operator-namespace.yaml"} {
		for _, obj := range objects(t, filepath.Join("conformance", f)) {
			switch obj.GetNamespace() {
			case "OPERATOR_NAMESPACE":
				obj.SetNamespace("quorate-system")
			case "":
				if obj.GetKind() == "ServiceAccount" || obj.GetKind() == "Role" || obj.GetKind() == "RoleBinding" {
					obj.SetNamespace("quorate-conformance")
				}
			}
			create(ctx, t, c, obj)
		}
	}
	ask(ctx, t, c, "config/conformance", "quorate-conformance", "quorate-conformance", []can{
		{"get", "", "secrets", "quorate-conformance", false}, {"list", "", "secrets", "", false}, {"get", "", "secrets", "quorate-system", false},
		{"create", "", "pods", "quorate-conformance", false}, {"create", "", "pods", "kube-system-like", false},
		{"create", "", "pods/proxy", "kube-system-like", false}, {"delete", "", "persistentvolumeclaims", "kube-system-like", false},
		{"list", "", "pods", "quorate-system", true}, {"get", "", "pods/log", "quorate-system", true}, {"list", "apps", "deployments", "quorate-system", true},
		{"delete", "", "pods", "quorate-system", false},
		{"list", "", "nodes", "", true}, {"update", "", "nodes", "", false}, {"list", "storage.k8s.io", "storageclasses", "", true},
		{"create", "", "namespaces", "", true},
		{"bind", "rbac.authorization.k8s.io", "clusterroles@quorate-conformance-scenario", "", true},
		{"bind", "rbac.authorization.k8s.io", "clusterroles@cluster-admin", "", false},
	})

	// What RBAC allows everywhere, the policy holds to qc-*.
	job := rest.CopyConfig(cfg)
	job.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:quorate-conformance:quorate-conformance",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:quorate-conformance", "system:authenticated"}}
	as, err := client.New(job, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	dry := client.DryRunAll
	ns := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	self := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "quorate-conformance", Namespace: "quorate-conformance"}}
	binding := func(namespace, role string, subjects []rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scenario", Namespace: namespace},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role}, Subjects: subjects}
	}
	create(ctx, t, c, ns("qc-proof-0001"))
	// Before the policy is in force the suite, as the Job, refuses to run.
	const noPolicy = "the suite runs with --scenario-role (as the conformance Job) but may create namespace quorate-conformance-policy-probe, outside its scenarios' qc-*: " +
		"the ValidatingAdmissionPolicy quorate-conformance (config/conformance/policy.yaml) is not in force, so the Job could create and delete any namespace; " +
		"apply it (Kubernetes 1.30 or later), and if the Job runs as another ServiceAccount than quorate-conformance/quorate-conformance, change the user name in its matchConditions"
	if err := framework.CheckHeldToScenarios(ctx, as, 0); err == nil || err.Error() != noPolicy {
		t.Errorf("the suite's check before the policy: %v, want %q", err, noPolicy)
	}
	for _, obj := range objects(t, filepath.Join("conformance", "policy.yaml")) {
		create(ctx, t, c, obj)
	}
	// The policy takes effect a moment after it is created: the check waits until it refuses.
	if err := framework.CheckHeldToScenarios(ctx, as, time.Minute); err != nil {
		t.Fatalf("the suite's check with the policy in force: %v", err)
	}
	for what, tc := range map[string]struct {
		do   func() error
		want string // "" allowed; else the whole message of the refusal
	}{
		"create namespace kube-foo": {func() error { return as.Create(ctx, ns("kube-foo"), dry) },
			`namespaces "kube-foo" is forbidden: ValidatingAdmissionPolicy 'quorate-conformance' with binding 'quorate-conformance' denied request: quorate-conformance acts only on the namespaces of its scenarios (qc-*), not on kube-foo`},
		"create namespace qc-proof-0002": {func() error { return as.Create(ctx, ns("qc-proof-0002"), dry) }, ""},
		"delete namespace quorate-system": {func() error { return as.Delete(ctx, ns("quorate-system"), client.DryRunAll) },
			`namespaces "quorate-system" is forbidden: ValidatingAdmissionPolicy 'quorate-conformance' with binding 'quorate-conformance' denied request: quorate-conformance acts only on the namespaces of its scenarios (qc-*), not on quorate-system`},
		"bind the scenario role to itself in qc-proof-0001": {func() error {
			return as.Create(ctx, binding("qc-proof-0001", "quorate-conformance-scenario", self), dry)
		}, ""},
		"bind the scenario role to itself in kube-system-like": {func() error {
			return as.Create(ctx, binding("kube-system-like", "quorate-conformance-scenario", self), dry)
		}, `rolebindings.rbac.authorization.k8s.io "scenario" is forbidden: ValidatingAdmissionPolicy 'quorate-conformance' with binding 'quorate-conformance' denied request: quorate-conformance acts only on the namespaces of its scenarios (qc-*), not on kube-system-like`},
		"bind the scenario role to another in qc-proof-0001": {func() error {
			return as.Create(ctx, binding("qc-proof-0001", "quorate-conformance-scenario", []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "qc-proof-0001"}}), dry)
		}, `rolebindings.rbac.authorization.k8s.io "scenario" is forbidden: ValidatingAdmissionPolicy 'quorate-conformance' with binding 'quorate-conformance' denied request: quorate-conformance may bind only ClusterRole quorate-conformance-scenario, and only to itself`},
	} {
		got := ""
		if err := tc.do(); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("the Job may %s: got %q, want %q", what, got, tc.want)
		}
	}
}

// kustomizeBuild is what `kustomize build config/<dir>` makes (KUSTOMIZE: the binary, which
// make test builds).
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	bin := os.Getenv("KUSTOMIZE")
	if bin == "" {
		t.Fatal("KUSTOMIZE is not set: run these tests with `make test`, which builds kustomize")
	}
	out, err := exec.Command(bin, "build", dir).Output()
	if err != nil {
		t.Fatalf("kustomize build config/%s: %v", dir, err)
	}
	return documents(t, "config/"+dir, out)
}

// objects are the documents of a multi-document YAML file.
func objects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return documents(t, path, raw)
}

// documents are the objects of multi-document YAML.
func documents(t *testing.T, path string, raw []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(raw), "\n---") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
	return out
}
