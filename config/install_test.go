// Package config holds the kustomize configuration; its test asks a real API server what each
// install from this repository grants the operator.
package config

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// can is one question to the authorizer: may the operator's service account do verb on
// resource (of group) in namespace ("" cluster-wide)?
type can struct {
	verb, group, resource, namespace string
	want                             bool
}

// The rights of the two installs from this repository, as kubectl auth can-i would answer them
// for the operator's service account: config/default binds the manager's ClusterRole with a
// ClusterRoleBinding (Secrets read and written, Pods and Jobs created in every namespace: the
// user guide says so), config/namespaced with a RoleBinding in its own namespace (nothing
// elsewhere, nothing cluster-scoped). Both bind config/rbac/role.yaml as the API server reads it.
func TestInstallRights(t *testing.T) {
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
	ctx := context.Background()
	role := &rbacv1.ClusterRole{}
	read(t, filepath.Join("rbac", "role.yaml"), role)
	role.Name = "quorate-manager-role" // kustomize's namePrefix
	cluster := &rbacv1.ClusterRoleBinding{}
	read(t, filepath.Join("rbac", "role_binding.yaml"), cluster)
	cluster.Name, cluster.RoleRef.Name = "quorate-manager-rolebinding", role.Name
	cluster.Subjects[0].Name, cluster.Subjects[0].Namespace = "quorate-controller-manager", "quorate-system"
	ns := &rbacv1.RoleBinding{}
	read(t, filepath.Join("namespaced", "role_binding.yaml"), ns)
	ns.Name, ns.Namespace = "quorate-manager-rolebinding", "apps"
	ns.Subjects[0].Name, ns.Subjects[0].Namespace = "quorate-controller-manager", "apps"
	for _, name := range []string{"quorate-system", "apps", "other"} {
		create(ctx, t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	create(ctx, t, c, role)
	create(ctx, t, c, cluster)
	create(ctx, t, c, ns)

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
		"config/namespaced": {"apps", []can{
			{"get", "", "secrets", "apps", true}, {"create", "", "pods", "apps", true}, {"create", "batch", "jobs", "apps", true},
			{"get", "", "secrets", "other", false}, {"list", "", "secrets", "other", false}, {"create", "", "pods", "other", false},
			{"create", "batch", "jobs", "other", false}, {"get", "", "secrets", "quorate-system", false},
			{"get", "", "namespaces", "", false}, {"list", "etcd.quorate.dev", "etcdclusters", "", false},
			{"create", "", "pods/exec", "apps", false}, {"create", "rbac.authorization.k8s.io", "rolebindings", "apps", false},
		}},
	} {
		user := "system:serviceaccount:" + tc.namespace + ":quorate-controller-manager"
		for _, q := range tc.questions {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + tc.namespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: q.verb, Group: q.group, Resource: q.resource, Namespace: q.namespace}}}
			if err := c.Create(ctx, sar); err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed != q.want {
				t.Errorf("%s: can the operator %s %s in %q? %v, want %v (%s)", install, q.verb, q.resource, q.namespace, sar.Status.Allowed, q.want, sar.Status.Reason)
			}
		}
	}
}

func read(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path) //nolint:gosec // the repository's own manifests
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func create(ctx context.Context, t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}
