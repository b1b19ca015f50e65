package framework

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateNamespace creates a namespace labelled as the run's.
func (r *Run) CreateNamespace(ctx context.Context, ns string) error {
	return r.Suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"quorate.dev/conformance": r.Scenario.Name}}})
}

// DeleteNamespace deletes a namespace and waits until it is gone.
func (r *Run) DeleteNamespace(ctx context.Context, ns string) error {
	return r.DeleteAndWait(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
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
