package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/backup/blobstore"
	"github.com/quorate-dev/quorate/internal/names"
)

// retentionFlags are a schedule's retention, which a backup applies after storing.
type retentionFlags struct {
	prefix, schedule, archive, keep *string
	count, hourly, daily            *int
	weekly                          *int
	maxAge                          *time.Duration
}

func addRetention(fs *flag.FlagSet) retentionFlags {
	return retentionFlags{
		prefix:   fs.String("retain-prefix", "", "apply the retention to the snapshots under this prefix (.../<namespace>/<cluster>/<schedule>-) after storing"),
		schedule: fs.String("schedule", "", "the EtcdBackupSchedule the backup belongs to: recorded in the object's metadata, and the only schedule whose objects the retention deletes"),
		archive:  fs.String("retain-archive", "", "the schedule's archive prefix: after the retention, delete the segments no snapshot of the cluster left in the bucket needs"),
		keep:     fs.String("retain-archive-keep", "", "comma-separated <cluster ID>:<revision>: the oldest revision of each cluster ID that the cluster's backups made by hand (under any prefix of the bucket) need the archive from; 0 keeps all of that cluster ID"),
		count:    fs.Int("retain-count", 0, "keep the newest this many snapshots under --retain-prefix"),
		hourly:   fs.Int("retain-hourly", 0, "keep the newest snapshot of each of the last this many hours that have one"),
		daily:    fs.Int("retain-daily", 0, "keep the newest snapshot of each of the last this many days (UTC) that have one"),
		weekly:   fs.Int("retain-weekly", 0, "keep the newest snapshot of each of the last this many ISO weeks (UTC) that have one"),
		maxAge:   fs.Duration("retain-max-age", 0, "delete snapshots under --retain-prefix older than this"),
	}
}

// pruneBudget bounds the archive's pruning in one backup, well inside the Job's deadline: a
// backlog (the first backup after retention is set on a busy archive) is deleted over several
// backups, oldest first; stopping early deletes nothing a kept snapshot needs.
const pruneBudget = 10 * time.Minute

// apply deletes the schedule's expired snapshots, then the archive's segments that no
// snapshot of the cluster still needs. Its errors go in the result (retentionError): the
// backup itself is stored and verified, and the next one tries again.
func (f retentionFlags) apply(ctx context.Context, bucket string, clusterID uint64, res *backup.Result) {
	if *f.prefix == "" {
		return
	}
	fail := func(what string, err error) {
		log.Printf("%s: %v", what, err)
		res.RetentionError = strings.TrimPrefix(res.RetentionError+"; ", "; ") + what + ": " + err.Error()
	}
	r := backup.Retention{Count: *f.count, Hourly: *f.hourly, Daily: *f.daily, Weekly: *f.weekly, MaxAge: *f.maxAge}
	expired, err := blobstore.Retain(ctx, bucket, *f.prefix, *f.schedule, r, time.Now())
	res.Expired, res.ExpiredCount = expired, len(expired)
	if err != nil {
		fail("retention", err)
	}
	if *f.archive == "" {
		return
	}
	kept, err := f.kept(ctx, bucket)
	if err != nil {
		fail("archive retention (nothing pruned)", err)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, pruneBudget)
	defer cancel()
	store, err := blobstore.OpenArchive(pctx, bucket)
	if err != nil {
		fail("archive retention", err)
		return
	}
	defer func() { _ = store.Close() }()
	done, err := archive.Prune(pctx, store, *f.archive, kept, clusterID)
	for _, p := range done {
		res.PrunedSegments += len(p.Segments)
		archive.SortSpans(p.Segments)
		log.Printf("archive retention: deleted %d segments of cluster %s (revisions %s): no snapshot left needs them", len(p.Segments), names.FormatID(p.ClusterID),
			archive.FormatRanges(archive.Ranges(p.Segments)))
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		// A backlog: the older segments went, the rest go with the next backups.
		log.Printf("archive retention: stopped after %s with %d segments deleted; the next backup goes on", pruneBudget, res.PrunedSegments)
	case err != nil:
		fail("archive retention", err)
	}
}

// kept is, per cluster ID, the oldest revision a snapshot still needs the archive from: the
// snapshots directly under the cluster's directory that the schedule's archive serves (its
// own and those made by hand), and the other backups the operator named
// (--retain-archive-keep).
func (f retentionFlags) kept(ctx context.Context, bucket string) (map[uint64]int64, error) {
	clusterPrefix := (*f.prefix)[:strings.LastIndex(*f.prefix, "/")+1]
	kept, err := blobstore.OldestSnapshots(ctx, bucket, clusterPrefix, *f.schedule)
	if err != nil {
		return nil, err
	}
	if *f.keep == "" {
		return kept, nil
	}
	for _, pair := range strings.Split(*f.keep, ",") {
		idText, revText, _ := strings.Cut(pair, ":")
		id, err := names.ParseID(idText)
		rev, rerr := strconv.ParseInt(revText, 10, 64)
		if err != nil || rerr != nil {
			return nil, fmt.Errorf("--retain-archive-keep: %q is not <cluster ID>:<revision>", pair)
		}
		if old, ok := kept[id]; !ok || rev < old {
			kept[id] = rev
		}
	}
	return kept, nil
}
