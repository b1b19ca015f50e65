package etcdcluster

import (
	"context"
	"testing"

	"github.com/quorate-dev/quorate/internal/etcd"
)

// TestKeepsQuorum: a voter is removed only while a quorum of the voters that stay reach a
// leader with a quorum at that moment; a learner is removed whatever the others' state.
func TestKeepsQuorum(t *testing.T) {
	ctx := context.Background()
	members := []string{"e-0", "e-1", "e-2", "e-3", "e-4"}
	setup := func(t *testing.T) (*etcd.Fake, *observation) {
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
		return f, o
	}
	id := func(o *observation, name string) uint64 {
		for _, m := range o.members {
			if m.Name == name {
				return m.ID
			}
		}
		t.Fatalf("no member %s", name)
		return 0
	}

	t.Run("every voter that stays reaches the leader", func(t *testing.T) {
		_, o := setup(t)
		if err := o.keepsQuorum(ctx, id(o, "e-4"), "e-4"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("one of four cut off: three still make a quorum", func(t *testing.T) {
		f, o := setup(t)
		f.Unreach("e-1", "e-0", true)
		if err := o.keepsQuorum(ctx, id(o, "e-4"), "e-4"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("two of four cut off: the removal waits", func(t *testing.T) {
		f, o := setup(t)
		f.Unreach("e-1", "e-0", true)
		f.Unreach("e-0", "e-2", true)
		err := o.keepsQuorum(ctx, id(o, "e-4"), "e-4")
		want := "not removing member e-4 yet: 2 of the 4 voting members that would stay reach a leader with a quorum now, and removing it needs 3; " +
			"without: e-1 (a linearizable read through e-1: context deadline exceeded (fake)); e-2 (a linearizable read through e-2: context deadline exceeded (fake)). " +
			"The operator probes again, in 2s at first, then less often, up to every 30s; a partition, a member down or a member too slow to follow its leader is the likely cause"
		if err == nil || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	})
	t.Run("a learner is removed without a probe", func(t *testing.T) {
		f, o := setup(t)
		f.Unreach("e-1", "e-0", true)
		f.Unreach("e-0", "e-2", true)
		f.Unreach("e-0", "e-3", true)
		o.members[4].IsLearner = true
		if err := o.keepsQuorum(ctx, id(o, "e-4"), "e-4"); err != nil {
			t.Fatal(err)
		}
	})
}
