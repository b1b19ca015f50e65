package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
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
		{Kind: ResultKeyspace, Info: &Info{Keyspace: Keyspace{Revision: 42, Keys: 7, Hash: "ab"}}, Leases: 2},
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

// Grandfather-father-son: hourly, daily and weekly keep the newest backup of each of their
// last periods (UTC, ISO weeks), together with maxCount; maxAge deletes past all of them.
func TestRetentionGenerations(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC) // a Tuesday
	objs := map[string]time.Time{}
	for h := range 40*24 + 1 { // every hour for 40 days
		at := now.Add(-time.Duration(h) * time.Hour)
		objs["s-"+at.Format(ScheduleTimeFormat)+".db"] = at
	}
	name := func(day, hour int) string {
		return "s-" + time.Date(2026, 11, day, hour, 0, 0, 0, time.UTC).Format(ScheduleTimeFormat) + ".db"
	}
	var lastDay []string // the last 24 hours: 23 Nov 13:00 to 24 Nov 12:00
	for h := range 24 {
		lastDay = append(lastDay, "s-"+now.Add(-time.Duration(h)*time.Hour).Format(ScheduleTimeFormat)+".db")
	}
	// Days: 24 Nov 12:00 and 23 Nov 23:00 are in the last day already; then 22 to 18 Nov.
	days := []string{name(22, 23), name(21, 23), name(20, 23), name(19, 23), name(18, 23)}
	// Weeks (Monday to Sunday): 24 Nov 12:00, 22 Nov 23:00 (kept already), 15 and 8 Nov.
	weeks := []string{name(15, 23), name(8, 23)}
	for _, tc := range []struct {
		name string
		r    Retention
		kept []string
	}{
		{"hourly 24", Retention{Hourly: 24}, lastDay},
		{"hourly 24, daily 7, weekly 4", Retention{Hourly: 24, Daily: 7, Weekly: 4}, slices.Concat(lastDay, days, weeks)},
		{"maxCount 2, weekly 2", Retention{Count: 2, Weekly: 2}, []string{lastDay[0], lastDay[1], name(22, 23)}},
		{"daily 7, weekly 4, maxAge 5 days", Retention{Daily: 7, Weekly: 4, MaxAge: 5 * 24 * time.Hour}, []string{lastDay[0], name(23, 23), name(22, 23), name(21, 23), name(20, 23), name(19, 23)}},
		{"maxAge alone: no count limit", Retention{MaxAge: 2 * time.Hour}, lastDay[:3]},
	} {
		// Periods are UTC whatever the times' zone: the same backups are kept.
		inZone := map[string]time.Time{}
		for n, at := range objs {
			inZone[n] = at.In(time.FixedZone("UTC+5:30", 5*3600+1800))
		}
		if a, b := tc.r.Expired(objs, now), tc.r.Expired(inZone, now); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: expired %v in UTC, %v in another zone", tc.name, a, b)
		}
		expired := tc.r.Expired(objs, now)
		var kept []string
		for n := range objs {
			if !slices.Contains(expired, n) {
				kept = append(kept, n)
			}
		}
		slices.Sort(kept)
		want := slices.Clone(tc.kept)
		slices.Sort(want)
		if !reflect.DeepEqual(kept, want) {
			t.Errorf("%s (%v): kept %v, want %v", tc.name, tc.r, kept, want)
		}
		if !sort.SliceIsSorted(expired, func(i, j int) bool { return objs[expired[i]].Before(objs[expired[j]]) }) {
			t.Errorf("%s: expired not oldest first", tc.name)
		}
	}
}

// ScheduledTime reads the time a schedule's backup is named by, from its name or its key.
func TestScheduledTime(t *testing.T) {
	want := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	for _, n := range []string{"nightly-20261124-020000", "ns/c/nightly-20261124-020000.db", "a-b-20261124-020000"} {
		if got, ok := ScheduledTime(n); !ok || !got.Equal(want) {
			t.Errorf("ScheduledTime(%q) = %v, %v; want %v", n, got, ok, want)
		}
	}
	for _, n := range []string{"manual", "20261124-020000", "x20261124-020000", "nightly-20261124-0200", "nightly-20261324-020000.db"} {
		if got, ok := ScheduledTime(n); ok {
			t.Errorf("ScheduledTime(%q) = %v, want none", n, got)
		}
	}
}
