package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// TestShapeApplied: the flags' values, parsed, shape an EtcdCluster's spec whole; a scenario's
// own node selector is kept beside them.
func TestShapeApplied(t *testing.T) {
	o := &Options{StorageClass: "csi-hostpath", MemberNodeSelector: "pool=etcd, zone=a", MemberTolerations: "dedicated=etcd:NoSchedule,spot:NoExecute",
		MemberResources: "cpu=250m,memory=512Mi", NamespacePrefix: "qc-"}
	if err := o.checkShape(); err != nil {
		t.Fatal(err)
	}
	spec := v1alpha1.EtcdClusterSpec{Replicas: 3, PodTemplate: &v1alpha1.PodTemplate{NodeSelector: map[string]v1alpha1.LabelValue{"disk": "ssd"}}}
	o.Shape.Apply(&spec)
	sc := "csi-hostpath"
	want := v1alpha1.EtcdClusterSpec{Replicas: 3, Storage: v1alpha1.StorageSpec{StorageClassName: &sc},
		PodTemplate: &v1alpha1.PodTemplate{
			NodeSelector: map[string]v1alpha1.LabelValue{"disk": "ssd", "pool": "etcd", "zone": "a"},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "etcd", Effect: corev1.TaintEffectNoSchedule},
				{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")}}}}
	if diff := cmp.Diff(want, spec); diff != "" {
		t.Errorf("shaped spec (-want +got):\n%s", diff)
	}

	// No flag: the spec is untouched.
	plain := v1alpha1.EtcdClusterSpec{Replicas: 1}
	Shape{}.Apply(&plain)
	if diff := cmp.Diff(v1alpha1.EtcdClusterSpec{Replicas: 1}, plain); diff != "" {
		t.Errorf("unshaped spec changed (-want +got):\n%s", diff)
	}
}

func TestShapeRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{MemberNodeSelector: "pool", NamespacePrefix: "qc-"}, `--member-node-selector: "pool" is not KEY=VALUE`},
		{Options{MemberTolerations: "dedicated=etcd", NamespacePrefix: "qc-"}, `--member-tolerations: "dedicated=etcd" is not KEY[=VALUE]:EFFECT with EFFECT NoSchedule, PreferNoSchedule or NoExecute`},
		{Options{MemberTolerations: "dedicated:Sometimes", NamespacePrefix: "qc-"}, `--member-tolerations: "dedicated:Sometimes" is not KEY[=VALUE]:EFFECT with EFFECT NoSchedule, PreferNoSchedule or NoExecute`},
		{Options{MemberResources: "gpu=1", NamespacePrefix: "qc-"}, `--member-resources: "gpu=1" is not cpu=QUANTITY or memory=QUANTITY`},
		{Options{MemberResources: "cpu=lots", NamespacePrefix: "qc-"}, `--member-resources: cpu=lots: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`},
		{Options{NamespacePrefix: "QC_"}, `--namespace-prefix="QC_" cannot start a namespace's name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
	} {
		err := c.o.checkShape()
		if err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v\nwant %s", c.o, err, c.want)
		}
	}
}
