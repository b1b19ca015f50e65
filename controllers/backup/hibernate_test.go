package backup

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/statuscond"
)

// A hibernated cluster is no failure of its backups: they wait, saying why, even while the
// status (written before the pods stopped) still says Available.
func TestBackupTargetOfAHibernatedCluster(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"},
		Spec: v1alpha1.EtcdClusterSpec{Hibernate: true}, Status: v1alpha1.EtcdClusterStatus{ClusterID: "c1"}}
	meta.SetStatusCondition(&ec.Status.Conditions, statuscond.New(v1alpha1.ConditionAvailable, true, v1alpha1.ReasonQuorumHealthy, "3 of 3", 1))
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ec).Build()
	_, why, err := backupTarget(context.Background(), cl, cl, nil, "ns", "demo")
	if err != nil {
		t.Fatal(err)
	}
	const want = "EtcdCluster demo is hibernated (spec.hibernate): no member runs to take a snapshot from; the backup waits until the cluster is woken and Available"
	if why != want {
		t.Errorf("why = %q, want %q", why, want)
	}
}
