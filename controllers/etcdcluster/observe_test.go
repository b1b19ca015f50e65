package etcdcluster

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
)

// twoClusters answers for the endpoints of two etcd clusters: the recorded one (ID 0xc1) and a
// foreign one (0xf0) that a changed spec.bootstrap.join endpoint leads to. Its member list is
// the foreign cluster's when it goes through a foreign endpoint.
type twoClusters struct {
	etcd.Client
	eps []etcd.Endpoint
}

func (c twoClusters) Status(_ context.Context, ep etcd.Endpoint) (etcd.Status, error) {
	if ep.Member == externalPrefix+"10.9.0.1:2379" {
		return etcd.Status{ClusterID: 0xf0, MemberID: 0xf1, Leader: 0xf1, RaftTerm: 9}, nil
	}
	return etcd.Status{ClusterID: 0xc1, MemberID: 0xa1, Leader: 0xa1, RaftTerm: 2}, nil
}

func (c twoClusters) MemberList(context.Context) (uint64, []etcd.Member, error) {
	for _, ep := range c.eps {
		if ep.Member == externalPrefix+"10.9.0.1:2379" {
			return 0xf0, []etcd.Member{{ID: 0xf1, Name: "elsewhere"}}, nil
		}
	}
	return 0xc1, []etcd.Member{{ID: 0xa1, Name: "mig-0", PeerURLs: []string{"http://mig-0.mig-peer.ns.svc:2380"}}}, nil
}

func (c twoClusters) Alarms(context.Context) ([]etcd.Alarm, error) { return nil, nil }
func (c twoClusters) ActivePeers(context.Context, etcd.Endpoint) (map[uint64]bool, error) {
	return nil, etcd.ErrNoMetrics
}
func (c twoClusters) Close() error { return nil }

// A member list is read only through members that answer as the recorded cluster, and one
// that names another cluster is not used: this cluster's members would look removed.
func TestObserveReadsOnlyTheRecordedCluster(t *testing.T) {
	c := joinCluster("ns", false)
	c.Spec.Bootstrap.Join.Endpoints = []string{"http://10.9.0.1:2379"}
	c.Status.ClusterID = "c1"
	c.Status.Join = &v1alpha1.JoinStatus{Phase: v1alpha1.JoinAddingMembers}
	c.Spec.TLS.Enabled = ptr.To(false)
	r := &Reconciler{EtcdFactory: func(_ context.Context, cfg etcd.Config) (etcd.Client, error) {
		return twoClusters{eps: cfg.Endpoints}, nil
	}}
	o := &observation{cluster: "mig", namespace: "ns", endpoints: map[string]etcd.Endpoint{"mig-0": {Member: "mig-0", Address: "10.244.0.7:2379"}},
		statuses: map[string]etcd.Status{}, statusErrs: map[string]error{}}
	r.observeEtcd(context.Background(), c, o)
	if o.listedClusterID != 0xc1 || len(o.members) != 1 || o.members[0].Name != "mig-0" {
		t.Fatalf("member list from cluster %x: %+v (error %v); want the recorded cluster's", o.listedClusterID, o.members, o.etcdErr)
	}

	// Were the foreign endpoint the only voter, no member list is taken from it.
	o = &observation{cluster: "mig", namespace: "ns", endpoints: map[string]etcd.Endpoint{}, statuses: map[string]etcd.Status{}, statusErrs: map[string]error{}}
	r.EtcdFactory = func(_ context.Context, cfg etcd.Config) (etcd.Client, error) {
		return twoClusters{eps: []etcd.Endpoint{{Member: externalPrefix + "10.9.0.1:2379"}}}, nil
	}
	c.Status.ClusterID = "c1"
	r.observeEtcd(context.Background(), c, o)
	if o.members != nil {
		t.Fatalf("took the member list %+v of another cluster", o.members)
	}
	// And a member list that names another cluster is refused outright.
	c.Status.ClusterID = "f0"
	o = &observation{cluster: "mig", namespace: "ns", endpoints: map[string]etcd.Endpoint{}, statuses: map[string]etcd.Status{}, statusErrs: map[string]error{}}
	r.EtcdFactory = func(_ context.Context, cfg etcd.Config) (etcd.Client, error) { return twoClusters{eps: nil}, nil }
	r.observeEtcd(context.Background(), c, o)
	want := fmt.Sprintf("the member list came from etcd cluster %s, but this cluster is %s", "c1", "f0")
	if o.members != nil || o.etcdErr == nil || o.etcdErr.Error() != want {
		t.Fatalf("members %+v, error %v; want none and %q", o.members, o.etcdErr, want)
	}
}
