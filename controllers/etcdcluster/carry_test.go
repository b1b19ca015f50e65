package etcdcluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

func TestMergeMaintenance(t *testing.T) {
	t0 := metav1.Unix(100, 0)
	spec := v1alpha1.MaintenanceSpec{DefragNow: "d2", MoveLeader: &v1alpha1.MoveLeaderSpec{Token: "m2", To: "demo-1"}}
	kept := &v1alpha1.MaintenanceStatus{
		Defrag:     &v1alpha1.DefragRoundStatus{Token: "d2", StartTime: &t0, Defragmented: []string{"demo-2", "demo-0"}},
		MoveLeader: &v1alpha1.MoveLeaderStatus{Token: "m2", Result: v1alpha1.LeaderMoveMoved, From: "demo-0", To: "demo-1", Time: &t0},
	}
	for _, c := range []struct {
		name         string
		status, want *v1alpha1.MaintenanceStatus
		spec         v1alpha1.MaintenanceSpec
	}{
		{"nothing recorded yet: the kept records", nil, kept, spec},
		{"the same round: the members of both",
			&v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d2", StartTime: &t0, Defragmented: []string{"demo-2"}}},
			&v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d2", StartTime: &t0, Defragmented: []string{"demo-2", "demo-0"}}, MoveLeader: kept.MoveLeader}, spec},
		{"an older round and answer in status: replaced",
			&v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d1", Defragmented: []string{"demo-0", "demo-1", "demo-2"}, CompletionTime: &t0},
				MoveLeader: &v1alpha1.MoveLeaderStatus{Token: "m1", Result: v1alpha1.LeaderMoveMoved}},
			kept, spec},
		{"the spec asks for something newer: the kept records are dropped", nil, nil,
			v1alpha1.MaintenanceSpec{DefragNow: "d3", MoveLeader: &v1alpha1.MoveLeaderSpec{Token: "m3"}}},
		{"the transfer already answered in status: kept as it is",
			&v1alpha1.MaintenanceStatus{MoveLeader: &v1alpha1.MoveLeaderStatus{Token: "m2", Result: v1alpha1.LeaderMoveFailed}},
			&v1alpha1.MaintenanceStatus{Defrag: kept.Defrag, MoveLeader: &v1alpha1.MoveLeaderStatus{Token: "m2", Result: v1alpha1.LeaderMoveFailed}}, spec},
	} {
		got := mergeMaintenance(c.status, kept, c.spec)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestCarriedOnlyForTheSameCluster: a record kept for a cluster is folded until a status read
// holds it, and not into a cluster of the same name created since.
func TestCarriedOnlyForTheSameCluster(t *testing.T) {
	var k carried
	c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo", UID: "u1"},
		Spec:   v1alpha1.EtcdClusterSpec{Maintenance: v1alpha1.MaintenanceSpec{DefragNow: "d"}},
		Status: v1alpha1.EtcdClusterStatus{Maintenance: &v1alpha1.MaintenanceStatus{Defrag: &v1alpha1.DefragRoundStatus{Token: "d", Defragmented: []string{"demo-1"}}}}}
	k.keep(c)
	again := c.DeepCopy()
	again.UID, again.Status.Maintenance = "u2", nil
	foldCarried(&k, again)
	if again.Status.Maintenance != nil {
		t.Fatalf("folded into a new cluster of the same name: %+v", again.Status.Maintenance)
	}
	k.keep(c)
	same := c.DeepCopy()
	same.Status.Maintenance = nil
	foldCarried(&k, same)
	if d := same.Status.Maintenance; d == nil || d.Defrag == nil || !cmp.Equal(d.Defrag.Defragmented, []string{"demo-1"}) {
		t.Fatalf("not folded: %+v", d)
	}
	// A pass that ended before its status write: folded again.
	same.Status.Maintenance = nil
	foldCarried(&k, same)
	if same.Status.Maintenance == nil {
		t.Fatal("a record no status holds yet was forgotten")
	}
	// A status read that holds it: forgotten.
	foldCarried(&k, same)
	same.Status.Maintenance = nil
	foldCarried(&k, same)
	if same.Status.Maintenance != nil {
		t.Fatal("folded again after a status held it")
	}
	k.keep(c)
	k.forget(types.NamespacedName{Namespace: "ns", Name: "demo"})
	foldCarried(&k, same)
	if same.Status.Maintenance != nil {
		t.Fatal("folded after the cluster was forgotten")
	}
}

// foldCarried folds what k kept for c, as a pass does.
func foldCarried(k *carried, c *v1alpha1.EtcdCluster) { fold(c, k.share(c)) }
