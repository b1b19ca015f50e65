package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/quorate-dev/quorate/internal/testsupport"
)

// A snapshot of a real etcd holds the keyspace at its revision: Inspect reads from the file
// exactly what KeyspaceAt reads from the cluster at that revision, and writes after the
// snapshot change neither.
func TestSnapshotKeyspace(t *testing.T) {
	ctx := context.Background()
	c := testsupport.StartEtcd(t, "backup", false).Client(t)
	for i := range 300 {
		if _, err := c.Put(ctx, fmt.Sprintf("k%03d", i%120), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	lease, err := c.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "leased", "x", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, "k01", clientv3.WithPrefix()); err != nil { // k010..k019
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "snap.db")
	saved, err := Save(ctx, c, path)
	if err != nil {
		t.Fatal(err)
	}
	// Writes after the snapshot.
	if _, err := c.Put(ctx, "k000", "after"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "new", "after"); err != nil {
		t.Fatal(err)
	}

	sum, err := Verify(path)
	if err != nil || sum != saved.SHA256 {
		t.Fatalf("Verify = %s, %v; Save recorded %s", sum, err, saved.SHA256)
	}
	got, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	// 300 puts, a grant is no revision, 1 put, 1 delete of 10 keys: revision 1 + 300 + 1 + 1.
	if got.Revision != 303 || got.Keys != 120-10+1 {
		t.Fatalf("snapshot keyspace %+v, want revision 303 and 111 keys", got)
	}
	at, err := KeyspaceAt(ctx, c, got.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if at != got {
		t.Fatalf("the cluster at revision %d: %+v; the snapshot: %+v", got.Revision, at, got)
	}
	now, err := KeyspaceAt(ctx, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if now.Revision != 305 || now.Keys != 112 || now.Hash == got.Hash {
		t.Fatalf("the cluster now: %+v (the snapshot's %+v)", now, got)
	}
}

// A snapshot whose bytes changed, or that was cut short, fails etcd's integrity check.
func TestVerifyRefusesDamagedSnapshots(t *testing.T) {
	ctx := context.Background()
	c := testsupport.StartEtcd(t, "damaged", false).Client(t)
	if _, err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "snap.db")
	if _, err := Save(ctx, c, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"a flipped byte":      append(append(append([]byte{}, b[:4096]...), b[4096]^0xff), b[4097:]...),
		"the hash cut off":    b[:len(b)-32],
		"half the database":   b[:len(b)/2],
		"the hash of another": append(append([]byte{}, b[:len(b)-32]...), make([]byte, 32)...),
	} {
		p := filepath.Join(t.TempDir(), "bad.db")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Verify(p); !errors.Is(err, ErrIntegrity) {
			t.Errorf("%s: Verify = %v, want ErrIntegrity", name, err)
		}
	}
}

// Retention keeps the newest objects by count, and none older than the age, but never the
// newest one.
func TestRetentionExpired(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	objs := map[string]time.Time{}
	for i := range 6 {
		objs[fmt.Sprintf("b%d.db", i)] = now.Add(-time.Duration(i) * 24 * time.Hour) // b0 newest
	}
	for _, tc := range []struct {
		name string
		r    Retention
		want []string
	}{
		{"no limit", Retention{}, nil},
		{"count 3", Retention{Count: 3}, []string{"b5.db", "b4.db", "b3.db"}},
		{"age 2 days", Retention{MaxAge: 48 * time.Hour}, []string{"b5.db", "b4.db", "b3.db"}},
		{"age 36 hours or count 5", Retention{Count: 5, MaxAge: 36 * time.Hour}, []string{"b5.db", "b4.db", "b3.db", "b2.db"}},
		{"everything too old but the newest stays", Retention{MaxAge: time.Minute}, []string{"b5.db", "b4.db", "b3.db", "b2.db", "b1.db"}},
	} {
		if got := tc.r.Expired(objs, now); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: expired %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A result survives the trip through a termination message whole; one too long for the
// kubelet is shortened, the list of expired keys first; other messages are no result.
func TestResultRoundTrip(t *testing.T) {
	for _, r := range []Result{
		{Kind: ResultStored, Member: "demo-1", Location: "s3://b/ns/demo/x.db", Key: "ns/demo/x.db",
			Info:    &Info{Keyspace: Keyspace{Revision: 42, Keys: 7, Hash: "ab"}, SHA256: "cd", Size: 4128, Version: "3.6.16", ClusterID: "f00"},
			Expired: []string{"ns/demo/old.db"}},
		{Kind: ResultVerified, Matches: true, Message: "7 keys at revision 42, keyspace hash ab"},
		{Kind: ResultFailed, Error: "writing s3://b/x.db: the storage refused the credentials", Reason: "StoreCredentialsRefused"},
	} {
		got, err := ParseResult(r.Encode())
		if err != nil || !reflect.DeepEqual(*got, r) {
			t.Fatalf("round trip of %+v: %+v, %v", r, got, err)
		}
	}
	long := Result{Kind: ResultStored, Key: "k"}
	for i := range 500 {
		long.Expired = append(long.Expired, fmt.Sprintf("ns/demo/sched-%04d.db", i))
	}
	msg := long.Encode()
	got, err := ParseResult(msg)
	if err != nil || len(msg) > 4096 || len(got.Expired) == 0 || len(got.Expired) >= 500 || got.Key != "k" {
		t.Fatalf("a long result: %d bytes, %d expired kept, %v", len(msg), len(got.Expired), err)
	}
	for _, m := range []string{"", "etcd exited", `quorate-backup-result: {"kind":"Nope"}`, "quorate-backup-result: {"} {
		if _, err := ParseResult(m); !errors.Is(err, ErrNoResult) {
			t.Errorf("ParseResult(%q) = %v, want ErrNoResult", m, err)
		}
	}
}
