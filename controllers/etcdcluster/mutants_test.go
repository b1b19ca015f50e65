//go:build mutants

package etcdcluster

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
)

// The mutants of this package's tests set the process's one active mutant: none of these
// tests is parallel, so no other test's manager runs while one is set.

// remove-without-quorum-probe: a voter is removed though two of the four that would stay are
// cut off from the leader.
func TestRemoveWithoutQuorumProbeMutant(t *testing.T) {
	ctx := context.Background()
	members := []string{"e-0", "e-1", "e-2", "e-3", "e-4"}
	f := etcd.NewFake("3.6.16")
	urls := make([]string, len(members))
	eps := make([]etcd.Endpoint, len(members))
	o := &observation{endpoints: map[string]etcd.Endpoint{}}
	for i, m := range members {
		urls[i] = "https://" + m + ":2380"
		eps[i] = etcd.Endpoint{Member: m, Address: m + ":2379"}
		o.endpoints[m] = eps[i]
	}
	f.Bootstrap(0xc1, members, urls)
	var err error
	if o.client, err = f.Factory()(ctx, etcd.Config{Endpoints: eps}); err != nil {
		t.Fatal(err)
	}
	if _, o.members, err = o.client.MemberList(ctx); err != nil {
		t.Fatal(err)
	}
	f.Unreach("e-1", "e-0", true)
	f.Unreach("e-0", "e-2", true)
	victim := o.members[4]
	if victim.Name != "e-4" {
		t.Fatalf("member list order: %+v", o.members)
	}
	if err := o.keepsQuorum(ctx, victim.ID, victim.Name); err == nil {
		t.Fatal("without the mutant: the removal keeps quorum with two of four cut off")
	}
	defer mutant.Set("remove-without-quorum-probe")()
	if err := o.keepsQuorum(ctx, victim.ID, victim.Name); err != nil {
		t.Fatalf("with remove-without-quorum-probe: %v", err)
	}
}

// renew-wrong-ca: the server certificate, signed by the cluster CA, is renewed from the peer
// CA (and the peer certificate from the cluster CA).
func TestRenewWrongCAMutant(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	defer mutant.Set("renew-wrong-ca")()
	const lifetime = 9 * time.Second
	startWith(t, ns, etcd.NewFake("3.6.16"), "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) { r.CertLifetime = lifetime })
	if err := k8s.Create(ctx, newCluster(ns, "rot", 1)); err != nil {
		t.Fatal(err)
	}
	// The Event of the renewal names the CA it was signed by (without the mutant, its own:
	// TestCertificatesAreRenewed). What the Secret holds afterwards is not asserted: the next
	// pass renews it again from the other CA.
	assertEvent(t, ns, v1alpha1.EventCertificateRenewed, "renewed "+names.ServerSecret("rot")+" from "+names.CASecretsOf("rot").Peer+", valid until ")
	assertEvent(t, ns, v1alpha1.EventCertificateRenewed, "renewed "+names.PeerSecret("rot")+" from "+names.CASecretsOf("rot").Cluster+", valid until ")
}

// no-join-finalizer: a cluster mid-join is not held by the join finalizer.
func TestNoJoinFinalizerMutant(t *testing.T) {
	c := &v1alpha1.EtcdCluster{Spec: v1alpha1.EtcdClusterSpec{Bootstrap: &v1alpha1.BootstrapSpec{Join: &v1alpha1.JoinSpec{}}},
		Status: v1alpha1.EtcdClusterStatus{Join: &v1alpha1.JoinStatus{Phase: v1alpha1.JoinWaitingForGoAhead}}}
	if !holdsJoin(c) {
		t.Fatal("without the mutant: a cluster mid-join is not held")
	}
	defer mutant.Set("no-join-finalizer")()
	if holdsJoin(c) {
		t.Fatal("with no-join-finalizer: a cluster mid-join is held")
	}
}

// quota-ignores-volume: a cluster on 256 MiB volumes without a quota of its own gets etcd's
// 2 GiB default, not one its volumes hold.
func TestQuotaIgnoresVolumeMutant(t *testing.T) {
	newCluster := func() *v1alpha1.EtcdCluster {
		return &v1alpha1.EtcdCluster{Spec: v1alpha1.EtcdClusterSpec{Storage: v1alpha1.StorageSpec{Size: resource.MustParse("256Mi")}}}
	}
	c := newCluster()
	withDefaults(c)
	if got, want := c.Spec.Etcd.QuotaBackendBytes, int64(64<<20); got != want {
		t.Fatalf("without the mutant: quota %d, want %d", got, want)
	}
	defer mutant.Set("quota-ignores-volume")()
	c = newCluster()
	withDefaults(c)
	if got, want := c.Spec.Etcd.QuotaBackendBytes, int64(v1alpha1.DefaultQuotaBackendBytes); got != want {
		t.Fatalf("with quota-ignores-volume: quota %d, want %d", got, want)
	}
}
