// Package uidpolicy decides, per namespace, whether the operator's pods ask for a user and
// groups (65532) or leave them to the platform (OpenShift's SCC admission assigns them from
// the namespace's range and rejects pods that ask for another).
package uidpolicy

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/internal/resources"
)

// Mode is the operator's --pod-security-context setting.
type Mode string

const (
	// Auto leaves the user to the platform in namespaces that carry OpenShift's UID range
	// annotation, and asks for 65532 elsewhere and wherever it cannot read the namespace.
	Auto Mode = "auto"
	// Fixed always asks for 65532.
	Fixed Mode = "fixed"
	// Platform never asks for a user or groups.
	Platform Mode = "platform"
)

// Modes are the values --pod-security-context accepts.
var Modes = []Mode{Auto, Fixed, Platform}

// Annotations OpenShift sets on every namespace: the range SCC admission assigns users
// from, and the range of supplemental groups and fsGroups.
const (
	AnnotationUIDRange          = "openshift.io/sa.scc.uid-range"
	AnnotationSupplementalGroup = "openshift.io/sa.scc.supplemental-groups"
)

// ParseMode reads a --pod-security-context value.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("--pod-security-context %q: want one of %v", s, Modes)
}

// Policy chooses the pods' user per namespace. A nil Policy chooses UIDFixed.
type Policy struct {
	Mode Mode
	// Reader reads namespaces (Auto); the operator passes its uncached API reader, so that it
	// neither watches nor caches every namespace. It needs get on namespaces.
	Reader client.Reader

	// told holds the namespaces whose fallback to 65532 was logged: once each per process.
	told sync.Map
}

// Choice is the UIDChoice for pods in namespace. Auto returns an error only when reading the
// namespace failed for a reason other than being forbidden or the namespace being gone (the
// caller retries); forbidden means the operator was installed without the namespaces
// permission, and the pods ask for 65532 as before.
func (p *Policy) Choice(ctx context.Context, namespace string) (resources.UIDChoice, error) {
	if p == nil {
		return resources.UIDFixed, nil
	}
	switch p.Mode {
	case Platform:
		return resources.UIDPlatform, nil
	case Auto:
	default:
		return resources.UIDFixed, nil
	}
	ns := &corev1.Namespace{}
	err := p.Reader.Get(ctx, types.NamespacedName{Name: namespace}, ns)
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
		if _, told := p.told.LoadOrStore(namespace, true); !told {
			logf.FromContext(ctx).Info("cannot read the namespace, so its pods ask for user 65532; where the platform assigns users (OpenShift), grant the operator get on namespaces or set --pod-security-context=platform", "namespace", namespace, "error", err.Error())
		}
		return resources.UIDFixed, nil
	case err != nil:
		return "", fmt.Errorf("reading namespace %s to choose its pods' user (--pod-security-context=auto): %w", namespace, err)
	}
	return ForNamespace(ns), nil
}

// ForNamespace is Auto's choice for a namespace: the platform's where OpenShift's range
// annotations are set.
func ForNamespace(ns *corev1.Namespace) resources.UIDChoice {
	if _, ok := ns.Annotations[AnnotationUIDRange]; ok {
		return resources.UIDPlatform
	}
	if _, ok := ns.Annotations[AnnotationSupplementalGroup]; ok {
		return resources.UIDPlatform
	}
	return resources.UIDFixed
}
