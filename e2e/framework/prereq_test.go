package framework

import (
	"context"
	"reflect"
	"testing"

	cm "github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quorate-dev/quorate/e2e/localcluster"
)

func poolNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{localcluster.PoolLabel: localcluster.PoolEtcd}}}
}

// TestMissingPrerequisites: on a cluster without any (a REST mapper without chaos-mesh.org, as
// discovery of an API server without Chaos Mesh), each prerequisite is named with what to do;
// on one with them all (PodChaos mapped, the S3 store's Secret, both StorageClasses, three pool
// nodes, node access) none is.
func TestMissingPrerequisites(t *testing.T) {
	sc := Scenario{Name: "x", Nodes: 3, Needs: []Prerequisite{ChaosMesh, ObjectStore, StorageClasses("local-path", "csi-b")}}
	bare := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(poolNode("n2"),
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path"}}).Build()
	r := &Run{Suite: &Suite{Opts: &Options{OperatorNS: "quorate-system"}, Client: bare}, Scenario: sc}
	got, err := r.missingPrerequisites(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"node access: it acts on the node's containers and volumes, which only a cluster the suite starts (--provider=local) lets it reach",
		"3 nodes for members: the cluster has 1 nodes labelled node.quorate.dev/pool=etcd and the scenario needs 3 besides node 1: start the local cluster with --nodes=4",
		"Chaos Mesh: Chaos Mesh is not installed (no chaos-mesh.org API): install it (make chaos-mesh, or --install-chaos-mesh on a cluster the suite starts)",
		"object store: the suite's S3 store is not installed (no Secret quorate-s3/s3-root): install it with --install-s3 (hack/s3.sh)",
		"StorageClasses local-path, csi-b: the cluster has no StorageClass csi-b: name two it has with --storage-classes=FROM,TO",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("missing:\n%q\nwant\n%q", got, want)
	}

	objs := []client.Object{poolNode("n2"), poolNode("n3"), poolNode("n4"),
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path"}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "csi-b"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: S3Namespace, Name: "s3-root"}}}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(cm.SchemeGroupVersion.WithKind("PodChaos"), meta.RESTScopeNamespace)
	full := fake.NewClientBuilder().WithScheme(Scheme).WithRESTMapper(mapper).WithObjects(objs...).Build()
	r = &Run{Suite: &Suite{Opts: &Options{OperatorNS: "quorate-system"}, Client: full, Node: &localcluster.Node{}}, Scenario: sc}
	if got, err := r.missingPrerequisites(context.Background()); err != nil || len(got) != 0 {
		t.Errorf("missing %q, %v; want none", got, err)
	}
}

// TestImpliedPrerequisites: NeedsNode and Nodes imply node access and the pool's nodes; a
// scenario with neither needs nothing it does not list.
func TestImpliedPrerequisites(t *testing.T) {
	names := func(sc Scenario) []string {
		var out []string
		for _, p := range sc.prerequisites() {
			out = append(out, p.Name)
		}
		return out
	}
	for _, c := range []struct {
		sc   Scenario
		want []string
	}{
		{Scenario{}, nil},
		{Scenario{NeedsNode: true}, []string{"node access"}},
		{Scenario{Nodes: 3, Needs: []Prerequisite{ChaosMesh}}, []string{"node access", "3 nodes for members", "Chaos Mesh"}},
	} {
		if got := names(c.sc); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v needs %q, want %q", c.sc, got, c.want)
		}
	}
}

func TestCheckMissingPrerequisites(t *testing.T) {
	for _, v := range []string{SkipMissing, FailMissing} {
		if err := (&Options{MissingPrerequisites: v}).checkMissingPrerequisites(); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	err := (&Options{MissingPrerequisites: "ignore"}).checkMissingPrerequisites()
	if err == nil || err.Error() != `--missing-prerequisites="ignore": give skip or fail` {
		t.Errorf("ignore: %v", err)
	}
}
