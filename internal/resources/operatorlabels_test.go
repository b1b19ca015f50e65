package resources

import (
	"bytes"
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/quorate-dev/quorate/internal/names"
)

// anotherOperator is the pod template of any other kubebuilder-made operator, which OLM may
// run in the same namespace as Quorate (AllNamespaces installs share one).
var anotherOperator = labels.Set{"control-plane": "controller-manager", "app.kubernetes.io/name": "another-operator"}

// objectOf reads the object of the given kind from a multi-document manifest of this tree.
func objectOf(t *testing.T, path, kind string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if meta.Kind == kind {
			if err := yaml.Unmarshal(doc, into); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return
		}
	}
	t.Fatalf("%s holds no %s", path, kind)
}

// The clusters' NetworkPolicy admits the operator's pods as config/manager deploys them, and
// not another operator's pods in a shared namespace.
func TestNetworkPolicyAdmitsOnlyThisOperator(t *testing.T) {
	var manager appsv1.Deployment
	objectOf(t, "../../config/manager/manager.yaml", "Deployment", &manager)
	op := Operator{Namespace: "operators", Labels: DefaultOperatorLabels()}
	c := cluster()
	// With clients named, the policy names the operator (without, it admits anyone).
	c.Spec.NetworkPolicy.Clients = []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}}
	var operatorPeer *metav1.LabelSelector
	for _, rule := range NetworkPolicy(c, op).Spec.Ingress {
		for _, from := range rule.From {
			if from.NamespaceSelector != nil && from.NamespaceSelector.MatchLabels[corev1.LabelMetadataName] == "operators" {
				operatorPeer = from.PodSelector
			}
		}
	}
	if operatorPeer == nil {
		t.Fatal("the NetworkPolicy has no rule for the operator's namespace")
	}
	sel, err := metav1.LabelSelectorAsSelector(operatorPeer)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(manager.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == names.OperatorContainer }) {
		t.Errorf("config/manager's pods have no container %q (names.OperatorContainer), which the suite and the plugin read", names.OperatorContainer)
	}
	if !sel.Matches(labels.Set(manager.Spec.Template.Labels)) {
		t.Errorf("the operator's rule (%s) does not admit the manager's pods (%v)", sel, manager.Spec.Template.Labels)
	}
	// OLM installs run the CSV's deployment, not config/manager's.
	var csv struct {
		Spec struct {
			Install struct {
				Spec struct {
					Deployments []struct {
						Spec appsv1.DeploymentSpec `json:"spec"`
					} `json:"deployments"`
				} `json:"spec"`
			} `json:"install"`
		} `json:"spec"`
	}
	objectOf(t, "../../bundle/manifests/quorate.clusterserviceversion.yaml", "ClusterServiceVersion", &csv)
	if len(csv.Spec.Install.Spec.Deployments) == 0 {
		t.Fatal("the CSV has no deployment")
	}
	for _, d := range csv.Spec.Install.Spec.Deployments {
		if !slices.ContainsFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == names.OperatorContainer }) {
			t.Errorf("the CSV's operator pods have no container %q (names.OperatorContainer), which the suite and the plugin read", names.OperatorContainer)
		}
		if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("the operator's rule (%s) does not admit the CSV's operator pods (%v)", sel, d.Spec.Template.Labels)
		}
	}
	if sel.Matches(anotherOperator) {
		t.Errorf("the operator's rule (%s) admits another kubebuilder operator's pods (%v)", sel, anotherOperator)
	}
}

// The metrics Service selects the manager's pods only.
func TestMetricsServiceSelectsOnlyThisOperator(t *testing.T) {
	var manager appsv1.Deployment
	objectOf(t, "../../config/manager/manager.yaml", "Deployment", &manager)
	var svc corev1.Service
	objectOf(t, "../../config/default/metrics_service.yaml", "Service", &svc)
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	if !slices.ContainsFunc(manager.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == names.OperatorContainer }) {
		t.Errorf("config/manager's pods have no container %q (names.OperatorContainer), which the suite and the plugin read", names.OperatorContainer)
	}
	if !sel.Matches(labels.Set(manager.Spec.Template.Labels)) {
		t.Errorf("the metrics Service (%s) does not select the manager's pods (%v)", sel, manager.Spec.Template.Labels)
	}
	if sel.Matches(anotherOperator) {
		t.Errorf("the metrics Service (%s) selects another kubebuilder operator's pods (%v)", sel, anotherOperator)
	}
}
