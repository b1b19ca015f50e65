package workload

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/checker/watch"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/internal/testsupport"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// realEtcd starts the etcd that `make test` builds from source and returns its client URL.
func realEtcd(t *testing.T) string { return testsupport.StartEtcd(t, "test", false).ClientURL }

// Start returns only when every client has completed a read; the warm-up read stays out of the
// history, and what the history holds is a ready client's load.
func TestStartWarmsUpClients(t *testing.T) {
	r := New(Config{Endpoints: []string{realEtcd(t)}, Clients: 3, Rate: 60, Prefix: "wl/", Seed: 1})
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if ok, _, _ := r.Counts(); ok >= 30 {
			break
		}
		if time.Now().After(deadline) {
			ok, fail, unknown := r.Counts()
			t.Fatalf("load did not reach 30 successes in a minute: ok=%d fail=%d unknown=%d", ok, fail, unknown)
		}
	}
	r.Stop()
	h := r.History()
	first := map[int]history.Op{}
	for _, o := range h.Ops {
		if strings.HasSuffix(o.Key, "warm-up") {
			t.Fatalf("the warm-up read is in the history: %+v", o)
		}
		if !strings.HasPrefix(o.Key, "wl/k") {
			t.Errorf("operation on a key outside the workload's: %+v", o)
		}
		if _, ok := first[o.Client]; !ok {
			first[o.Client] = o
		}
	}
	if len(first) != 3 {
		t.Fatalf("want operations from 3 clients, got %d", len(first))
	}
	for id, o := range first {
		if o.Status != history.OK {
			t.Errorf("client %d's first operation did not succeed on a healthy cluster: %+v", id, o)
		}
	}
}

// A cluster that cannot serve a read makes Start fail with an error that says what to check,
// and leaves the runner stopped with an empty history.
func TestStartFailsWhenNothingAnswers(t *testing.T) {
	r := New(Config{Endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", testsupport.FreePort(t))}, Clients: 2,
		OpTimeout: 300 * time.Millisecond, WarmUpTimeout: 2 * time.Second})
	err := r.Start()
	if err == nil {
		r.Stop()
		t.Fatal("Start succeeded with no etcd listening")
	}
	if !strings.Contains(err.Error(), "could not complete a read within 2s") || !strings.Contains(err.Error(), "client Service") {
		t.Errorf("error does not say what happened and what to check: %v", err)
	}
	if h := r.History(); len(h.Ops) != 0 {
		t.Errorf("history has %d operations after a failed start", len(h.Ops))
	}
	r.Stop() // a no-op on a runner that never started
}

// The watchers see every write of the load, in order, across restarts of their watches.
func TestWatchersSeeEveryWrite(t *testing.T) {
	r := New(Config{Endpoints: []string{realEtcd(t)}, Clients: 3, Rate: 100, Prefix: "wl/", Seed: 2, Watchers: 2, WatchRestart: 300 * time.Millisecond})
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // a measurement window: the load runs
	r.Stop()
	h := r.History()
	h.Final = r.Final(context.Background())
	starts := 0
	for _, m := range h.WatchMarks {
		if m.Kind == history.WatchStart {
			starts++
		}
	}
	if starts < 6 {
		t.Errorf("%d watch starts: the watches were not restarted", starts)
	}
	if len(h.WatchEvents) == 0 {
		t.Fatal("no watch event recorded")
	}
	if v := watch.Check(&h); !v.Passed() {
		t.Fatalf("watch verdict on a healthy etcd: %v %v", v, v.Details)
	}
}

// A write is failed only when the error proves it never reached the log; anything else (a
// timeout, a closed connection, a server stopping after it took the write) is unknown.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want history.Status
	}{
		{nil, history.OK},
		{rpctypes.ErrGRPCNoLeader, history.Fail},
		{rpctypes.ErrGRPCNoSpace, history.Unknown},
		{status.Error(codes.Unknown, "raft proposal dropped"), history.Fail},
		{status.Error(codes.Unknown, "raft: stopped"), history.Fail},
		{rpctypes.ErrGRPCStopped, history.Unknown},
		{rpctypes.ErrGRPCTimeout, history.Unknown},
		{context.DeadlineExceeded, history.Unknown},
		{status.Error(codes.Unavailable, "error reading from server: EOF"), history.Unknown},
	} {
		if got := Classify(history.Put, tc.err); got != tc.want {
			t.Errorf("put with %v: %s, want %s", tc.err, got, tc.want)
		}
	}
	if got := Classify(history.Get, context.DeadlineExceeded); got != history.Fail {
		t.Errorf("a failed read is %s, want fail", got)
	}
}

// Lease puts keys outside the workload's on a lease it keeps alive past its TTL; Revoke
// deletes them.
func TestLeaseKeepsKeysAliveUntilRevoked(t *testing.T) {
	ep := realEtcd(t)
	r := New(Config{Endpoints: []string{ep}, Prefix: "wl/", Seed: 1})
	defer func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	ctx := context.Background()
	kept, gone := r.Lease(ctx, 1, 3), r.Lease(ctx, 1, 2)
	if kept.Error != "" || kept.Keys != 3 || gone.Error != "" || gone.Keys != 2 || kept.ID == gone.ID {
		t.Fatalf("Lease: %+v and %+v", kept, gone)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rev := r.Revoke(ctx, gone.ID)
	if rev.Error != "" || rev.Revision <= gone.Revision {
		t.Fatalf("Revoke: %+v after %+v", rev, gone)
	}
	// Two granted TTLs later (etcd raises 1 s to its minimum), the kept lease's keys are
	// there, on it; the revoked lease's are not.
	ttl, err := c.TimeToLive(ctx, clientv3.LeaseID(kept.ID))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Duration(ttl.GrantedTTL) * time.Second)
	resp, err := c.Get(ctx, "wl/leased/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range resp.Kvs {
		got = append(got, fmt.Sprintf("%s@%x", kv.Key, kv.Lease))
	}
	want := []string{}
	for i := range 3 {
		want = append(want, fmt.Sprintf("wl/leased/%x/%d@%x", kept.ID, i, kept.ID))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("keys on leases: %v, want %v", got, want)
	}
}
