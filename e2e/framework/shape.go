package framework

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/envflag"
)

// Shape is how the suite shapes the EtcdClusters it creates for a cluster that is not its own
// (--storage-class, --member-node-selector, --member-tolerations, --member-resources): a
// customer's etcd pool may be tainted, labelled, and its StorageClass not the default.
type Shape struct {
	StorageClass string
	NodeSelector map[string]v1alpha1.LabelValue
	Tolerations  []corev1.Toleration
	Requests     corev1.ResourceList
}

// parseShape reads the shaping flags' values.
func parseShape(storageClass, nodeSelector, tolerations, resources string) (Shape, error) {
	sh := Shape{StorageClass: strings.TrimSpace(storageClass)}
	for _, kv := range envflag.List(nodeSelector) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return Shape{}, fmt.Errorf("--member-node-selector: %q is not KEY=VALUE", kv)
		}
		if sh.NodeSelector == nil {
			sh.NodeSelector = map[string]v1alpha1.LabelValue{}
		}
		sh.NodeSelector[k] = v1alpha1.LabelValue(v)
	}
	for _, t := range envflag.List(tolerations) {
		kv, effect, ok := strings.Cut(t, ":")
		eff := corev1.TaintEffect(effect)
		if !ok || kv == "" || (eff != corev1.TaintEffectNoSchedule && eff != corev1.TaintEffectPreferNoSchedule && eff != corev1.TaintEffectNoExecute) {
			return Shape{}, fmt.Errorf("--member-tolerations: %q is not KEY[=VALUE]:EFFECT with EFFECT NoSchedule, PreferNoSchedule or NoExecute", t)
		}
		tol := corev1.Toleration{Key: kv, Operator: corev1.TolerationOpExists, Effect: eff}
		if k, v, ok := strings.Cut(kv, "="); ok {
			tol.Key, tol.Operator, tol.Value = k, corev1.TolerationOpEqual, v
		}
		sh.Tolerations = append(sh.Tolerations, tol)
	}
	for _, kv := range envflag.List(resources) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || (k != "cpu" && k != "memory") {
			return Shape{}, fmt.Errorf("--member-resources: %q is not cpu=QUANTITY or memory=QUANTITY", kv)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return Shape{}, fmt.Errorf("--member-resources: %s: %w", kv, err)
		}
		if sh.Requests == nil {
			sh.Requests = corev1.ResourceList{}
		}
		sh.Requests[corev1.ResourceName(k)] = q
	}
	return sh, nil
}

// Apply shapes spec: the StorageClass, and the member pods' node selector, tolerations and
// requests, each only where given (a scenario's own Spec comes after and may override).
func (sh Shape) Apply(spec *v1alpha1.EtcdClusterSpec) {
	if sh.StorageClass != "" {
		sc := sh.StorageClass
		spec.Storage.StorageClassName = &sc
	}
	if len(sh.NodeSelector) == 0 && len(sh.Tolerations) == 0 && len(sh.Requests) == 0 {
		return
	}
	if spec.PodTemplate == nil {
		spec.PodTemplate = &v1alpha1.PodTemplate{}
	}
	pt := spec.PodTemplate
	for k, v := range sh.NodeSelector {
		if pt.NodeSelector == nil {
			pt.NodeSelector = map[string]v1alpha1.LabelValue{}
		}
		pt.NodeSelector[k] = v
	}
	pt.Tolerations = append(pt.Tolerations, sh.Tolerations...)
	if len(sh.Requests) > 0 {
		if pt.Resources == nil {
			pt.Resources = &corev1.ResourceRequirements{}
		}
		if pt.Resources.Requests == nil {
			pt.Resources.Requests = corev1.ResourceList{}
		}
		for k, q := range sh.Requests {
			pt.Resources.Requests[k] = q
		}
	}
}
