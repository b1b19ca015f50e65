package framework

import (
	"context"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// ScenarioRoleBinding is the name of the RoleBinding --scenario-role creates in each scenario
// namespace.
const ScenarioRoleBinding = "quorate-conformance"

// CreateNamespace creates a namespace labelled as the run's and, with --scenario-role, binds
// the suite to that ClusterRole in it (the Job's only rights inside a namespace). A namespace
// or binding left by an earlier attempt is kept.
func (r *Run) CreateNamespace(ctx context.Context, ns string) error {
	if err := r.Suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"quorate.dev/conformance": r.Scenario.Name}}}); err != nil {
		return err
	}
	r.Suite.track(ns)
	if r.Suite.Opts.ScenarioRole == "" {
		return nil
	}
	return r.bindScenarioRole(ctx, ns)
}

// bindScenarioRole binds the suite's own identity to --scenario-role in ns and waits until
// the API server grants what it needs there (RBAC applies a new binding within moments).
func (r *Run) bindScenarioRole(ctx context.Context, ns string) error {
	role := r.Suite.Opts.ScenarioRole
	review, err := r.Suite.Clientset.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("asking the API server who the suite is, to bind it to ClusterRole %s in %s: %w", role, ns, err)
	}
	rb := ScenarioBinding(ns, role, review.Status.UserInfo.Username)
	if err := r.Suite.Client.Create(ctx, rb); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding %s to ClusterRole %s in %s (the Job's ClusterRole quorate-conformance must allow creating it and binding that role: config/conformance/rbac.yaml): %w", review.Status.UserInfo.Username, role, ns, err)
	}
	return r.WaitFor(ctx, fmt.Sprintf("the rights of ClusterRole %s in %s", role, ns), time.Minute, func() error {
		sar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "create", Group: v1alpha1.GroupVersion.Group, Resource: "etcdclusters"}}}
		if err := r.Suite.Client.Create(ctx, sar); err != nil {
			return err
		}
		if !sar.Status.Allowed {
			return fmt.Errorf("not yet allowed to create EtcdClusters there (does ClusterRole %s exist and allow it? %s)", role, sar.Status.Reason)
		}
		return nil
	})
}

// ScenarioBinding is the RoleBinding of ns that grants the identity user the ClusterRole role:
// a ServiceAccount subject for a service account's user name, a User otherwise.
func ScenarioBinding(ns, role, user string) *rbacv1.RoleBinding {
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}
	if rest, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		if sans, name, ok := strings.Cut(rest, ":"); ok {
			subject = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: sans, Name: name}
		}
	}
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ScenarioRoleBinding, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
}

// DeleteNamespace deletes a namespace and waits until it is gone.
func (r *Run) DeleteNamespace(ctx context.Context, ns string) error {
	if err := r.DeleteAndWait(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	r.Suite.forget(ns)
	return nil
}

// DeleteAndWait deletes o (cluster-scoped or namespaced) and waits until it is gone.
func (r *Run) DeleteAndWait(ctx context.Context, o client.Object) error {
	if err := r.Suite.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return r.WaitFor(ctx, fmt.Sprintf("%T %s to be gone", o, o.GetName()), 5*time.Minute, func() error {
		err := r.Suite.Client.Get(ctx, client.ObjectKeyFromObject(o), o)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// policyProbe is a namespace outside the scenarios' qc-* the suite asks, with a server-side dry
// run, to create: as the conformance Job, it must be refused.
const policyProbe = "quorate-conformance-policy-probe"

// CheckHeldToScenarios, with the suite's client c, refuses to run as the conformance Job (--scenario-role) where the Job
// could create a namespace other than its scenarios': its ClusterRole lets it create and delete
// any namespace and bind its scenario role anywhere, and only the admission policy
// (config/conformance/policy.yaml) holds it to qc-*. A policy that is missing, not yet in force,
// or that names another identity than the suite's leaves those rights open; a refusal by RBAC
// is as good. A refusal by anything else (another admission policy of the cluster) says
// nothing of this one, and is not taken for it.
func CheckHeldToScenarios(ctx context.Context, c client.Client, within time.Duration) error {
	// A policy applied with the Job takes effect moments after it was created: ask again,
	// once a second, until within has passed.
	deadline := time.Now().Add(within)
	var err error
	for {
		err = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policyProbe}}, client.DryRunAll)
		if heldBack(err) || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	switch {
	case heldBack(err):
		return nil
	case err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsForbidden(err): // admission comes before the store
		answered := ""
		if err != nil {
			answered = fmt.Sprintf(" (the API server answered: %v)", err)
		}
		return fmt.Errorf("the suite runs with --scenario-role (as the conformance Job) but may create namespace %s, outside its scenarios' qc-*: "+
			"the ValidatingAdmissionPolicy quorate-conformance (config/conformance/policy.yaml) is not in force, so the Job could create and delete any namespace; "+
			"apply it (Kubernetes 1.30 or later), and if the Job runs as another ServiceAccount than quorate-conformance/quorate-conformance, change the user name in its matchConditions%s", policyProbe, answered)
	default:
		return fmt.Errorf("checking that the admission policy holds the suite to its scenarios' namespaces (a dry-run create of namespace %s): %w", policyProbe, err)
	}
}

// heldBack: err is the Job's admission policy refusing the probe, or RBAC refusing it.
func heldBack(err error) bool {
	if !apierrors.IsForbidden(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "ValidatingAdmissionPolicy 'quorate-conformance'") || strings.Contains(msg, `cannot create resource "namespaces"`)
}
