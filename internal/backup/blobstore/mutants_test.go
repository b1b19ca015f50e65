//go:build mutants

package blobstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// restore-skip-hash: a snapshot whose SHA-256 is not the one the restore asks for is fetched
// for restoring anyway.
func TestRestoreSkipHashMutant(t *testing.T) {
	ctx := context.Background()
	c := testsupport.StartEtcd(t, "mutant", false).Client(t)
	if _, err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "snap.db")
	saved, err := backup.Save(ctx, c, path)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := backup.Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	loc := backup.Location{Bucket: "file://" + t.TempDir(), Key: "b1.db"}
	if err := Store(ctx, loc, path, backup.Info{Keyspace: ks, SHA256: saved.SHA256, Size: saved.Size}); err != nil {
		t.Fatal(err)
	}
	other := strings.Repeat("0", 64)
	if _, err := Fetch(ctx, loc, filepath.Join(t.TempDir(), "a.db"), other); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("without the mutant: Fetch with another hash = %v, want ErrHashMismatch", err)
	}
	defer mutant.Set("restore-skip-hash")()
	if _, err := Fetch(ctx, loc, filepath.Join(t.TempDir(), "b.db"), other); err != nil {
		t.Fatalf("with restore-skip-hash: Fetch with another hash = %v, want the snapshot", err)
	}
}

// retain-by-prefix: a schedule's retention deletes the snapshots of a schedule whose name
// extends its own.
func TestRetainByPrefixMutant(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bucket := "file://" + dir
	const p = "etcd/ns/demo/"
	older, newer := p+"nightly-20261128-010000.db", p+"nightly-20261128-020000.db"
	weekly := p + "nightly-weekly-20261128-000000.db"
	b, err := blob.OpenBucket(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	base := time.Now().Add(-time.Hour)
	for i, o := range []struct{ key, schedule string }{{weekly, "nightly-weekly"}, {older, "nightly"}, {newer, "nightly"}} {
		if err := b.WriteAll(ctx, o.key, []byte("x"), &blob.WriterOptions{Metadata: map[string]string{backup.MetaSchedule: o.schedule}}); err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(o.key)), at, at); err != nil {
			t.Fatal(err)
		}
	}
	retain := func() []string {
		deleted, err := Retain(ctx, bucket, p+"nightly-", "nightly", backup.Retention{Count: 2}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return deleted
	}
	if got := retain(); len(got) != 0 {
		t.Fatalf("without the mutant: deleted %v, want nothing (two of nightly's own)", got)
	}
	defer mutant.Set("retain-by-prefix")()
	if got, want := retain(), []string{weekly}; !slices.Equal(got, want) {
		t.Fatalf("with retain-by-prefix: deleted %v, want %v", got, want)
	}
}
