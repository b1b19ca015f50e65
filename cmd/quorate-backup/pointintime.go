package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/backup/blobstore"
	"github.com/quorate-dev/quorate/internal/names"
)

// pointInTime are fetch's flags for a restore to a point (spec.bootstrap.fromBackup.pointInTime):
// besides the snapshot, the fetch prepares the archive's segments up to the target and the
// plan the restore container rebases the snapshot by (archive.Plan).
type pointInTime struct {
	prefix   *string
	revision *int64
	at       *string
}

func addPointInTime(fs *flag.FlagSet) pointInTime {
	return pointInTime{
		prefix:   fs.String("archive-prefix", "", "the archive's prefix in the bucket: restore to a point (with --to-revision or --to-time)"),
		revision: fs.Int64("to-revision", 0, "restore to this revision"),
		at:       fs.String("to-time", "", "restore to the newest revision the archive had received at this time (RFC 3339)"),
	}
}

// dir is where the plan and the segments go: beside the snapshot.
func (p pointInTime) dir(snapshot string) string {
	return filepath.Join(filepath.Dir(snapshot), "archive")
}

// done says whether nothing is left to prepare: no restore to a point, or its plan is written
// for this archive and target (a plan for another is made again).
func (p pointInTime) done(snapshot string) bool {
	if *p.prefix == "" {
		return true
	}
	plan, err := archive.ReadPlan(p.dir(snapshot))
	if err != nil || plan == nil || plan.Prefix != *p.prefix {
		return false
	}
	target, err := p.target()
	return err == nil && plan.Asked == target.String()
}

// target is the flags' target.
func (p pointInTime) target() (archive.Target, error) {
	switch {
	case *p.revision > 0 && *p.at == "":
		return archive.Target{Revision: *p.revision}, nil
	case *p.revision == 0 && *p.at != "":
		t, err := time.Parse(time.RFC3339Nano, *p.at)
		if err != nil {
			return archive.Target{}, fmt.Errorf("--to-time %q is not an RFC 3339 time: %w", *p.at, err)
		}
		return archive.Target{Time: t}, nil
	}
	return archive.Target{}, fmt.Errorf("a restore to a point takes one target: --to-revision or --to-time")
}

// prepare writes the plan and fetches the segments for the fetched snapshot, and says what the
// restore will do ("" without a restore to a point).
func (p pointInTime) prepare(ctx context.Context, bucket, snapshot string, info backup.Info) (string, error) {
	if *p.prefix == "" {
		return "", nil
	}
	target, err := p.target()
	if err != nil {
		return "", err
	}
	id, err := names.ParseID(info.ClusterID)
	if err != nil || id == 0 {
		return "", fmt.Errorf("the snapshot's object records no cluster ID (metadata %s), so its archive cannot be told: restore it without pointInTime", backup.MetaClusterID)
	}
	ks, err := backup.Inspect(snapshot)
	if err != nil {
		return "", fmt.Errorf("reading the snapshot's revision: %w", err)
	}
	store, err := blobstore.OpenArchive(ctx, bucket)
	if err != nil {
		return "", err
	}
	defer func() { _ = store.Close() }()
	dir := p.dir(snapshot)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	plan, err := archive.Prepare(ctx, store, *p.prefix, id, ks.Revision, target, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("restoring to %s from the snapshot at revision %d with the archive %s: %w", target, ks.Revision, archive.Dir(*p.prefix, id), err)
	}
	msg := fmt.Sprintf("restoring to revision %d (%s): the snapshot at revision %d and %d revisions of the archive %s", plan.To, plan.Asked, plan.From, plan.To-plan.From, archive.Dir(*p.prefix, id))
	log.Print(msg)
	return msg, nil
}
