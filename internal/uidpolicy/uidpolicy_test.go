package uidpolicy

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/internal/resources"
)

func TestChoice(t *testing.T) {
	openshift := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift",
		Annotations: map[string]string{AnnotationUIDRange: "1000650000/10000", AnnotationSupplementalGroup: "1000650000/10000"}}}
	groupsOnly := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "groups-only",
		Annotations: map[string]string{AnnotationSupplementalGroup: "1000650000/10000"}}}
	plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	reader := fake.NewClientBuilder().WithObjects(openshift, groupsOnly, plain).Build()
	forbidden := interceptor.NewClient(reader, interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "openshift", errors.New("no RBAC"))
	}})
	for _, tc := range []struct {
		name      string
		policy    *Policy
		namespace string
		want      resources.UIDChoice
	}{
		{"nil policy", nil, "openshift", resources.UIDFixed},
		{"fixed ignores the annotation", &Policy{Mode: Fixed, Reader: reader}, "openshift", resources.UIDFixed},
		{"platform without reading", &Policy{Mode: Platform, Reader: forbidden}, "plain", resources.UIDPlatform},
		{"auto, annotated", &Policy{Mode: Auto, Reader: reader}, "openshift", resources.UIDPlatform},
		{"auto, supplemental groups only", &Policy{Mode: Auto, Reader: reader}, "groups-only", resources.UIDPlatform},
		{"auto, plain", &Policy{Mode: Auto, Reader: reader}, "plain", resources.UIDFixed},
		{"auto, namespace gone", &Policy{Mode: Auto, Reader: reader}, "gone", resources.UIDFixed},
		{"auto, forbidden", &Policy{Mode: Auto, Reader: forbidden}, "openshift", resources.UIDFixed},
	} {
		got, err := tc.policy.Choice(context.Background(), tc.namespace)
		if err != nil || got != tc.want {
			t.Errorf("%s: Choice = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// A failure other than a missing permission is returned: the pod is built on the next pass,
// not with a user the platform may reject.
func TestChoiceReturnsTransientErrors(t *testing.T) {
	failing := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return apierrors.NewServiceUnavailable("etcd leader changed")
	}})
	got, err := (&Policy{Mode: Auto, Reader: failing}).Choice(context.Background(), "openshift")
	if err == nil || !apierrors.IsServiceUnavailable(err) || got != "" {
		t.Errorf("Choice = %q, %v; want the ServiceUnavailable error", got, err)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		if got, err := ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	if _, err := ParseMode("openshift"); err == nil {
		t.Error("ParseMode accepted an unknown mode")
	}
}
