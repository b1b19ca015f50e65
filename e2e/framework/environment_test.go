package framework

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	fakeclientset "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/e2e/report"
)

func fakeDiscovery(gitVersion string, groups ...string) *fakediscovery.FakeDiscovery {
	d := fakeclientset.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
	d.FakedServerVersion = &version.Info{GitVersion: gitVersion, Platform: "linux/amd64"}
	for _, g := range groups {
		d.Resources = append(d.Resources, &metav1.APIResourceList{GroupVersion: g + "/v1"})
	}
	return d
}

// TestEnvironment: a customer's cluster as the report records it, whole.
func TestEnvironment(t *testing.T) {
	expand := true
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	objs := []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}, Spec: corev1.NodeSpec{ProviderID: "aws:///eu-west-1a/i-0abc"}, Status: corev1.NodeStatus{
			NodeInfo:   corev1.NodeSystemInfo{KernelVersion: "6.1.0-28-amd64", OSImage: "Debian GNU/Linux 12", ContainerRuntimeVersion: "containerd://1.7.24", KubeletVersion: "v1.34.2-eks-1"},
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
			Provisioner: "ebs.csi.aws.com", AllowVolumeExpansion: &expand, VolumeBindingMode: &wait},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "aws-node"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "quorate-system", Name: "quorate-controller-manager-abc", Labels: label.OperatorLabels()},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Args: []string{"--leader-elect", "--ownership-term=1m"}}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", Image: "registry.example.com/quorate/operator:0.2.0", ImageID: "registry.example.com/quorate/operator@sha256:0123"}}}},
		// Another operator in the same namespace (openshift-operators holds them all).
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "quorate-system", Name: "other-operator", Labels: map[string]string{label.ControlPlane: label.ControlPlaneOperator}},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Args: []string{"--other"}}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", Image: "other:1"}}}},
	}
	c := fake.NewClientBuilder().WithScheme(Scheme).WithObjects(objs...).Build()
	s := &Suite{Opts: &Options{Provider: "existing", OperatorNS: "quorate-system", EtcdVersion: "3.6.16"}, Client: c}
	got, err := s.environment(context.Background(), fakeDiscovery("v1.34.2", "apps"))
	if err != nil {
		t.Fatal(err)
	}
	want := &report.Environment{Kubernetes: "v1.34.2", Platform: "linux/amd64", Distribution: "AWS (EKS or another) (node providerID aws://...)", Provider: "existing",
		Nodes:   []report.EnvNode{{Name: "worker-1", Kernel: "6.1.0-28-amd64", OS: "Debian GNU/Linux 12", ContainerRuntime: "containerd://1.7.24", Kubelet: "v1.34.2-eks-1", CPU: "4", Memory: "16Gi", Ready: true}},
		CNI:     "Amazon VPC CNI",
		Storage: []report.EnvClass{{Name: "gp3", Provisioner: "ebs.csi.aws.com", Default: true, Expansion: true, Binding: "WaitForFirstConsumer"}},
		Operator: &report.EnvOperator{Namespace: "quorate-system", Images: []string{"registry.example.com/quorate/operator:0.2.0@sha256:0123"},
			Args: []string{"--leader-elect", "--ownership-term=1m"}},
		Etcd: "3.6.16"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
}

// TestEnvironmentWithoutRights: what the suite may not read (the Job lists no DaemonSets in
// kube-system), and an operator not found, are named; the rest is recorded.
func TestEnvironmentWithoutRights(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(Scheme).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			if _, ok := l.(*appsv1.DaemonSetList); ok {
				// Neither cluster-wide nor in kube-system, as for the Job.
				return apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, "", nil)
			}
			return c.List(ctx, l, opts...)
		}}).Build()
	s := &Suite{Opts: &Options{Provider: "existing", OperatorNS: "quorate-system", EtcdVersion: "3.6.16", EtcdImage: "mirror.example.com/etcd:v3.6.16"}, Client: c}
	got, err := s.environment(context.Background(), fakeDiscovery("v1.33.4", "apps", "config.openshift.io"))
	if err != nil {
		t.Fatal(err)
	}
	want := &report.Environment{Kubernetes: "v1.33.4", Platform: "linux/amd64", Distribution: "OpenShift (config.openshift.io served)", Provider: "existing",
		Etcd: "3.6.16 (image mirror.example.com/etcd:v3.6.16)",
		Problems: []string{"DaemonSets (to name the CNI): the suite may not read them",
			"the operator in quorate-system: no pod labelled map[app.kubernetes.io/name:quorate control-plane:controller-manager] in namespace quorate-system (--operator-namespace)"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
}

func TestDistribution(t *testing.T) {
	for _, c := range []struct {
		provider, version string
		groups, ids       []string
		want              string
	}{
		{"local", "v1.35.4", nil, nil, "Quorate's local cluster (built from source, --provider=local)"},
		{"kind", "v1.35.4", nil, nil, "kind (--provider=kind)"},
		{"existing", "v1.33.4", []string{"apps", "config.openshift.io"}, nil, "OpenShift (config.openshift.io served)"},
		{"existing", "v1.34.2-gke.1000", nil, []string{"gce://p/z/n"}, "GKE (-gke. in the version)"},
		{"existing", "v1.33.5+k3s1", nil, []string{"k3s://n"}, "k3s (+k3s in the version)"},
		{"existing", "v1.34.3", nil, []string{"", "azure:///subscriptions/x/vm"}, "Azure (AKS or another) (node providerID azure://...)"},
		{"existing", "v1.35.0", nil, []string{"kind://docker/x/n"}, "not recognised (an upstream version string, no known node provider)"},
	} {
		if got := distribution(c.provider, c.version, c.groups, c.ids); got != c.want {
			t.Errorf("%s %s %v %v: %q, want %q", c.provider, c.version, c.groups, c.ids, got, c.want)
		}
	}
}
