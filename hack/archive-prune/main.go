// Command archive-prune measures the archive's retention (archive.Prune, as a backup Job runs
// it): it writes a backlog of small segments into a bucket (a directory, or a versitygw S3
// server started on loopback), keeps the newest of them with a snapshot's floor, and reports
// how long the pruning took and how many segments a second it deleted. A measurement, not a
// test: see docs/reports/pitr.md.
//
//	go run ./hack/archive-prune --segments 5000 --store s3
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/quorate-dev/quorate/hack/internal/loopback"
	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup/blobstore"
)

func main() {
	home, _ := os.UserHomeDir()
	gw := flag.String("versitygw", filepath.Join(home, ".cache/quorate/tools/versitygw/v1.8.0/versitygw"), "versitygw binary, for --store s3 (hack/build-tool.sh)")
	store := flag.String("store", "s3", "where the archive is: s3 (versitygw on loopback) or file (a directory)")
	segments := flag.Int("segments", 5000, "segments written before the pruning")
	kept := flag.Int("kept", 10, "the newest this many segments are at or above the oldest kept snapshot's revision")
	flag.Parse()
	if err := run(*gw, *store, *segments, *kept); err != nil {
		log.Fatal(err)
	}
}

func run(gw, kind string, segments, kept int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "archive-prune-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	url, w, err := loopback.Bucket(ctx, kind, dir, gw)
	if w != nil {
		defer func() { cancel(); w() }()
	}
	if err != nil {
		return err
	}
	s, err := blobstore.OpenArchive(ctx, url)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	const id, prefix, span = 0x1, "archive/prune", 100
	for i := range segments {
		first := int64(i*span + 1)
		data, err := archive.Encode(id, []archive.Record{{Revision: first}})
		if err != nil {
			return err
		}
		if err := s.Put(ctx, archive.SegmentName(prefix, id, first, first+span-1), data); err != nil {
			return err
		}
	}
	floor := int64((segments-kept)*span + 1)
	start := time.Now()
	pruned, err := archive.Prune(ctx, s, prefix, map[uint64]int64{id: floor}, id)
	took := time.Since(start)
	if err != nil {
		return err
	}
	deleted := 0
	for _, p := range pruned {
		deleted += len(p.Segments)
	}
	left, err := s.List(ctx, prefix+"/")
	if err != nil {
		return err
	}
	if deleted != segments-kept || len(left) != kept {
		return fmt.Errorf("deleted %d and left %d of %d segments, want %d and %d", deleted, len(left), segments, segments-kept, kept)
	}
	fmt.Printf("| %s | %d | %d | %s | %.0f |\n", kind, segments, deleted, took.Round(time.Millisecond), float64(deleted)/took.Seconds())
	return nil
}
