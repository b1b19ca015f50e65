package main

import (
	"context"
	"flag"
	"log"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/backup/blobstore"
	"github.com/quorate-dev/quorate/internal/names"
)

// retentionFlags are a schedule's retention, which a backup applies after storing.
type retentionFlags struct {
	prefix, schedule, archive *string
	count, hourly, daily      *int
	weekly                    *int
	maxAge                    *time.Duration
}

func addRetention(fs *flag.FlagSet) retentionFlags {
	return retentionFlags{
		prefix:   fs.String("retain-prefix", "", "apply the retention to the snapshots under this prefix (.../<namespace>/<cluster>/<schedule>-) after storing"),
		schedule: fs.String("schedule", "", "the EtcdBackupSchedule the backup belongs to: recorded in the object's metadata, and the only schedule whose objects the retention deletes"),
		archive:  fs.String("retain-archive", "", "the schedule's archive prefix: after the retention, delete the segments no snapshot of the cluster left in the bucket needs"),
		count:    fs.Int("retain-count", 0, "keep the newest this many snapshots under --retain-prefix"),
		hourly:   fs.Int("retain-hourly", 0, "keep the newest snapshot of each of the last this many hours that have one"),
		daily:    fs.Int("retain-daily", 0, "keep the newest snapshot of each of the last this many days (UTC) that have one"),
		weekly:   fs.Int("retain-weekly", 0, "keep the newest snapshot of each of the last this many ISO weeks (UTC) that have one"),
		maxAge:   fs.Duration("retain-max-age", 0, "delete snapshots under --retain-prefix older than this"),
	}
}

// apply deletes the schedule's expired snapshots, then the archive's segments that no
// snapshot of the cluster still needs. Errors are logged: the backup itself is stored and
// verified, and the next one tries again.
func (f retentionFlags) apply(ctx context.Context, bucket string, clusterID uint64) (expired []string, pruned int) {
	if *f.prefix == "" {
		return nil, 0
	}
	r := backup.Retention{Count: *f.count, Hourly: *f.hourly, Daily: *f.daily, Weekly: *f.weekly, MaxAge: *f.maxAge}
	expired, err := blobstore.Retain(ctx, bucket, *f.prefix, *f.schedule, r, time.Now())
	if err != nil {
		log.Printf("retention: %v", err)
	}
	if *f.archive == "" {
		return expired, 0
	}
	// Every snapshot of the cluster counts, whichever schedule took it, or none: a backup
	// made by hand restores to a point through the schedule's archive too.
	clusterPrefix := (*f.prefix)[:strings.LastIndex(*f.prefix, "/")+1]
	kept, err := blobstore.OldestSnapshots(ctx, bucket, clusterPrefix)
	if err != nil {
		log.Printf("archive retention: %v", err)
		return expired, 0
	}
	store, err := blobstore.OpenArchive(ctx, bucket)
	if err != nil {
		log.Printf("archive retention: %v", err)
		return expired, 0
	}
	defer func() { _ = store.Close() }()
	done, err := archive.Prune(ctx, store, *f.archive, kept, clusterID)
	for _, p := range done {
		pruned += len(p.Segments)
		r := archive.Ranges(p.Segments)
		log.Printf("archive retention: deleted %d segments of cluster %s (revisions %s): no snapshot left needs them", len(p.Segments), names.FormatID(p.ClusterID), archive.FormatRanges(r))
	}
	if err != nil {
		log.Printf("archive retention: %v", err)
	}
	return expired, pruned
}
