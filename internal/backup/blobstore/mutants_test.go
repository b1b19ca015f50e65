//go:build mutants

package blobstore

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

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
