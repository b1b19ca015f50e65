package etcdcluster

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/testsupport"
	"github.com/quorate-dev/quorate/internal/version"
)

// TestConsistencyCheckFindsCorruptedMember corrupts one member of a real three-member cluster
// on disk (a key's value at its revision, rewritten in the member's bbolt file while it is
// stopped) and shows the comparison of the voters' HashKV names exactly that member, while it
// found nothing before the corruption.
func TestConsistencyCheckFindsCorruptedMember(t *testing.T) {
	ctx := context.Background()
	members := testsupport.StartCluster(t, "hk", 3, version.CorruptCheckTimeFlag(version.Version{Major: 3, Minor: 6}))
	kv := members[0].Client(t)
	put := func(key, value string) int64 {
		t.Helper()
		resp, err := kv.Put(ctx, key, value)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	for i := range 20 {
		put(fmt.Sprintf("k/%d", i), "v")
	}
	victimRev := put("k/victim", "acknowledged")
	for i := range 20 {
		put(fmt.Sprintf("k/%d", i), "w")
	}
	compare := func(ms []*testsupport.Etcd) (planner.Verdict, *planner.Consistency) {
		t.Helper()
		eps := make([]etcd.Endpoint, len(ms))
		for i, m := range ms {
			eps[i] = etcd.Endpoint{Member: m.Name, Address: strings.TrimPrefix(m.ClientURL, "http://")}
		}
		cl, err := etcd.NewClient(ctx, etcd.Config{Endpoints: eps})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cl.Close() }()
		voters := make([]planner.Member, len(ms))
		for i, ep := range eps {
			st, err := cl.Status(ctx, ep)
			if err != nil {
				t.Fatal(err)
			}
			voters[i] = planner.Member{Name: ep.Member, ID: st.MemberID, Revision: st.Revision}
		}
		c, err := compareVoters(ctx, cl, eps, voters, planner.State{Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return planner.Judge(*c), c
	}
	v, c := compare(members)
	if want := (planner.Verdict{Outcome: planner.Consistent, Message: fmt.Sprintf("the 3 voters have the same data at revision %d (hash %08x)", c.Revision, c.Hashes[0].Hash)}); !reflect.DeepEqual(v, want) {
		t.Fatalf("before any corruption: %#v\nwant %#v", v, want)
	}

	// Corrupt hk-2: the value of k/victim at its revision becomes another one, on disk only.
	members[2].Stop()
	corruptValue(t, members[2].DataDir+"/member/snap/db", victimRev, "silently-changed")
	restarted := members[2].Restart(t)
	for i := range 10 {
		put(fmt.Sprintf("k/after/%d", i), "x") // the cluster keeps taking writes
	}

	cl := members[0].Client(t)
	got, err := cl.Get(ctx, "k/victim")
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "acknowledged" {
		t.Fatalf("the acknowledged write as the majority serves it: %v %v", got, err)
	}
	v, c = compare([]*testsupport.Etcd{members[0], members[1], restarted})
	good, bad := c.Hashes[0], c.Hashes[2]
	want := planner.Verdict{Outcome: planner.Divergent, Divergent: []planner.MemberHash{bad},
		Message: fmt.Sprintf("the data of hk-2 differ from the majority's at revision %d: hk-2 has hash %08x, where hk-0 and hk-1 have hash %08x", c.Revision, bad.Hash, good.Hash)}
	if bad.Member != "hk-2" || bad.Hash == good.Hash || !reflect.DeepEqual(v, want) {
		t.Fatalf("after corrupting hk-2: %#v\nwant %#v", v, want)
	}
}

// A member whose data diverge from the majority's (its HashKV differs), with the CORRUPT alarm
// etcd raised for it: Degraded says MemberCorrupt with the hashes, a Warning Event, the member
// is replaced add-first (its replacement is promoted before it is removed), and the alarm is
// disarmed only after a comparison of the new voters agrees.
func TestDivergentMemberIsReplaced(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	startWith(t, ns, fake, "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) { r.ConsistencyInterval = 2 * time.Second })
	bootstrap(t, ns, "demo", 3, fake)
	bad := memberID(t, fake, "demo-1")
	if leader := getCluster(t, ns, "demo").Status.Leader; leader == "demo-1" {
		fake.SetLeader("demo-0")
	}
	fake.Diverge("demo-1", 0xbad)
	fake.RaiseAlarm("demo-1", planner.AlarmCorrupt)
	wantMsg := fmt.Sprintf("the data of demo-1 differ from the majority's at revision 1: demo-1 has hash 00000bad, where demo-0 and demo-2 have hash %08x", etcd.FakeHash)
	assertEvent(t, ns, v1alpha1.ReasonMemberCorrupt, "Degraded is True: adding a member to replace demo-1, because "+wantMsg+"; it keeps serving until its replacement votes")
	waitFor(t, ns, "demo", "the divergent member replaced and the alarm disarmed", func(c *v1alpha1.EtcdCluster) error {
		if err := settled(3)(c); err != nil {
			return err
		}
		if len(fake.Alarms()) > 0 {
			return fmt.Errorf("alarms still raised: %v", fake.Alarms())
		}
		return nil
	})
	var changes []string
	for _, c := range fake.Calls() {
		for _, p := range []string{"AddLearner", "Promote", "Remove", "Disarm"} {
			if strings.HasPrefix(c, p+" ") {
				changes = append(changes, c)
			}
		}
	}
	// The alarm is disarmed after its member was removed: the fake names it by ID no more.
	want := []string{"AddLearner https://demo-3.demo-peer." + ns + ".svc:2380", "Promote demo-3", "Remove demo-1", "Disarm  " + planner.AlarmCorrupt}
	if !reflect.DeepEqual(changes, want) {
		t.Fatalf("membership changes %v, want %v", changes, want)
	}
	for _, m := range fake.Members() {
		if m.ID == bad {
			t.Fatalf("the divergent member %x is still a member", bad)
		}
	}
}

// corruptValue rewrites, in a stopped member's bbolt file, the value of the key revision
// written at rev (its first sub-revision), keeping everything else.
func corruptValue(t *testing.T, path string, rev int64, value string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		if b == nil {
			return fmt.Errorf("no key bucket in %s", path)
		}
		// A key revision is 8 bytes of main revision, '_', 8 bytes of sub revision.
		k := make([]byte, 17)
		for i := range 8 {
			k[i] = byte(rev >> (56 - 8*i))
		}
		k[8] = '_'
		raw := b.Get(k)
		if raw == nil {
			return fmt.Errorf("no key revision %d in %s", rev, path)
		}
		var kv mvccpb.KeyValue
		if err := kv.Unmarshal(raw); err != nil {
			return err
		}
		kv.Value = []byte(value)
		out, err := kv.Marshal()
		if err != nil {
			return err
		}
		return b.Put(k, out)
	})
	if err != nil {
		t.Fatal(err)
	}
}
