package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup/blobstore"
	"github.com/quorate-dev/quorate/internal/names"
)

// archiveMain is `quorate-backup archive`: the archiver's process (an EtcdBackupSchedule's
// archiver Deployment). It runs until it is stopped, archiving the cluster's changes from the
// archive's newest revision, and serves its archive.Report and metrics. Every error is
// retried; the report carries the last one.
func archiveMain(args []string) int {
	// The environment as the pod gave it, before trustRoots changes it (GODEBUG,
	// AWS_CA_BUNDLE): what the process starts again with.
	env := os.Environ()
	code, again := archiveProcess(args)
	if again {
		// In place (the same process, the container does not restart): the new image of the
		// process trusts the bundle as it is now.
		log.Printf("%v: starting again, trusting it", errCABundleChanged)
		err := syscall.Exec("/proc/self/exe", os.Args, env) //nolint:gosec // this very binary, with its own arguments
		log.Printf("starting again in place: %v; stopping instead (the container starts again)", err)
		return 1
	}
	return code
}

// archiveProcess is the archiver's process until it stops: its exit code, and whether it
// stopped to start again, trusting a CA bundle that changed.
func archiveProcess(args []string) (int, bool) {
	fs := flag.NewFlagSet("archive", flag.ExitOnError)
	t := addTLS(fs)
	endpoints := fs.String("endpoints", "", "comma-separated member=URL pairs of the cluster's members")
	clusterID := fs.String("cluster-id", "", "the cluster ID (hex) whose changes are archived")
	bucket := fs.String("bucket", "", "bucket URL (gocloud.dev/blob)")
	prefix := fs.String("prefix", "", "the archive's prefix in the bucket")
	maxLag := fs.Duration("max-lag", 500*time.Millisecond, "the longest a change waits before its segment is written")
	listen := fs.String("listen", fmt.Sprintf(":%d", archive.ReportPort), "where the report ("+archive.ReportPath+") and /metrics are served")
	caBundle := fs.String("ca-bundle", "", "PEM file of the authorities of the store's certificate (storage.caBundle)")
	_ = fs.Parse(args)
	stopped, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, restart := context.WithCancelCause(stopped)
	defer restart(nil)
	if *caBundle != "" {
		// Read before the roots are trusted: a change in between restarts the archiver.
		was, err := os.ReadFile(*caBundle)
		if err == nil {
			go followCABundle(ctx, *caBundle, was, caBundlePoll, func() { restart(errCABundleChanged) })
		}
	}
	if err := trustRoots(*caBundle); err != nil {
		log.Print(err)
		return 1, false
	}
	id, err := names.ParseID(*clusterID)
	if err != nil || id == 0 {
		log.Printf("--cluster-id %q is not a cluster ID", *clusterID)
		return 64, false
	}
	var urls []string
	for _, pair := range strings.Split(*endpoints, ",") {
		_, url, ok := strings.Cut(pair, "=")
		if !ok {
			log.Printf("--endpoints: %q is not member=URL", pair)
			return 64, false
		}
		urls = append(urls, url)
	}
	c, err := t.clients(urls)
	if err != nil {
		log.Print(err)
		return 1, false
	}
	defer c.Close()
	// The store is opened once the report answers: a store that cannot be reached (refused
	// credentials, an untrusted certificate) is retried, and the report says why.
	a := &archiveRun{client: c, prefix: *prefix, clusterID: id, maxLag: *maxLag,
		open: func(ctx context.Context) (archive.Store, error) { return blobstore.OpenArchive(ctx, *bucket) }}
	defer func() {
		if closer, ok := a.store.(io.Closer); ok {
			_ = closer.Close()
		}
	}()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Print(err)
		return 1, false
	}
	if err := a.run(ctx, ln); err != nil && !errors.Is(err, context.Canceled) {
		log.Print(err)
		return 1, false
	}
	// What was archived is stored; the process starts again and goes on from it, unless it was
	// also asked to stop (a SIGTERM while it stopped for the bundle: its pod is going).
	return 0, errors.Is(context.Cause(ctx), errCABundleChanged) && stopped.Err() == nil
}

// firstReadingTimeout bounds each attempt to open the store and list the archive at start
// (a listing of a long archive reads a page of a thousand names per request).
const firstReadingTimeout = 2 * time.Minute

// errFirstReading is why the archiver has not begun before its first reading of the archive
// has ended.
var errFirstReading = errors.New("it is reading the archive for the first time")

// archiveRun is one archiver process.
type archiveRun struct {
	client *clientv3.Client
	// store is the archive's store; when nil, open opens it first.
	store     archive.Store
	open      func(context.Context) (archive.Store, error)
	prefix    string
	clusterID uint64
	maxLag    time.Duration
	// probeEvery is how often the cluster's revision is read for the lag (500 ms when zero).
	probeEvery time.Duration
	// closeEvery is how often the archive's closed mark is written (archive.Archiver's
	// CloseEvery).
	closeEvery time.Duration
	// relistEvery is how often the archive is listed again (retention may have deleted its
	// oldest segments).
	relistEvery time.Duration
	tracker     *archive.Tracker
}

// run serves the report on ln and archives until ctx ends.
func (a *archiveRun) run(ctx context.Context, ln net.Listener) error {
	// The report answers from the start: until the archive is read, it says why not
	// (Report.Starting: a store that refuses the credentials, an untrusted certificate).
	a.tracker = archive.NewTracker(names.FormatID(a.clusterID), nil, nil)
	// Until then the report holds nothing of the archive, and must not be read as an empty one.
	a.tracker.Starting(errFirstReading)
	srv := &http.Server{Handler: a.handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	spans, err := a.retry(ctx, "reading the archive", func() ([]archive.Span, error) {
		// A store that takes connections and never answers is an error too, not a wait.
		actx, cancel := context.WithTimeout(ctx, firstReadingTimeout)
		defer cancel()
		if a.store == nil {
			st, err := a.open(actx)
			if err != nil {
				return nil, err
			}
			a.store = st
		}
		return archive.Segments(actx, a.store, a.prefix, a.clusterID)
	})
	if err != nil {
		return err
	}
	a.tracker.Started(archive.Ranges(spans))
	go a.probe(ctx)
	go a.relist(ctx)
	return a.archive(ctx)
}

// archive runs the Archiver again after every error, from the archive's newest revision, or
// from the cluster's revision now when the archive is empty or etcd compacted past it (a new
// range).
func (a *archiveRun) archive(ctx context.Context) error {
	var restartAt int64
	backoff := time.Second
	for {
		last, err := archive.Last(ctx, a.store, a.prefix, a.clusterID)
		if err == nil && (last == 0 || restartAt > last) {
			from := restartAt
			if from == 0 {
				from, err = a.revision(ctx)
			}
			if err == nil {
				log.Printf("archiving from revision %d (the archive holds nothing after it)", from)
				a.tracker.Restarted(from)
				last = from
			}
		}
		if err == nil && restartAt <= last {
			// Resuming: the cluster must still have the history the archive holds.
			err = archive.CheckContinues(ctx, a.client, a.store, a.prefix, a.clusterID, last)
		}
		if err == nil {
			segments := a.tracker.Report().Segments
			a.tracker.Watching(last)
			arch := &archive.Archiver{Client: a.client, Store: a.store, Prefix: a.prefix, ClusterID: a.clusterID, MaxLag: a.maxLag, Archived: a.tracker.Archived,
				ClusterRevision: a.revision, CloseEvery: a.closeEvery, ClosedMark: a.tracker.ClosedMark}
			err = arch.Run(ctx, last)
			if a.tracker.Report().Segments > segments {
				backoff = time.Second
			}
		}
		if ctx.Err() != nil {
			if err != nil && err.Error() != ctx.Err().Error() {
				// The segment of what was received last was not stored: the next start
				// archives it again from the cluster.
				log.Printf("stopping: %v", err)
			}
			return ctx.Err()
		}
		var gap *archive.GapError
		if errors.As(err, &gap) {
			// etcd keeps the compacted revision itself: the new range starts there.
			restartAt = gap.Compacted - 1
		}
		log.Printf("archiving stopped: %v; again in %s", err, backoff)
		a.tracker.Failed(err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// revision is the cluster's revision now, from a member of the archived cluster.
func (a *archiveRun) revision(ctx context.Context) (int64, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := a.client.Get(rctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("reading the cluster's revision: %w", err)
	}
	if resp.Header.ClusterId != a.clusterID {
		return 0, &archive.ForeignClusterError{Want: a.clusterID, Got: resp.Header.ClusterId}
	}
	a.tracker.Contact()
	return resp.Header.Revision, nil
}

// probe reads the cluster's revision every probeEvery, for the lag.
func (a *archiveRun) probe(ctx context.Context) {
	every := a.probeEvery
	if every == 0 {
		every = 500 * time.Millisecond
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if rev, err := a.revision(ctx); err == nil {
			a.tracker.Seen(rev)
		} else if ctx.Err() == nil {
			a.tracker.Unreachable(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// relist reads the archive's segments again now and then, so that the report stops listing
// the revisions whose segments the backups' retention deleted.
func (a *archiveRun) relist(ctx context.Context) {
	tick := time.NewTicker(cmp.Or(a.relistEvery, 5*time.Minute))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		first, ok, err := archive.FirstSegment(ctx, a.store, a.prefix, a.clusterID)
		if err != nil {
			log.Printf("reading the archive's first segment again: %v", err)
			continue
		}
		if ok {
			a.tracker.TrimBefore(first.First)
		}
	}
}

// retry calls f until it succeeds or ctx ends; each failure is why the archiver has not begun
// (Report.Starting).
func (a *archiveRun) retry(ctx context.Context, what string, f func() ([]archive.Span, error)) ([]archive.Span, error) {
	for backoff := time.Second; ; backoff = min(2*backoff, 30*time.Second) {
		out, err := f()
		if err == nil {
			return out, nil
		}
		a.tracker.Starting(err)
		log.Printf("%s: %v; again in %s", what, err, backoff)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
	}
}

// handler serves the report and the archiver's metrics.
func (a *archiveRun) handler() http.Handler {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, f func(archive.Report) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(a.tracker.Report()) }))
	}
	gauge("quorate_archive_last_revision", "The newest revision stored in the archive.", func(r archive.Report) float64 { return float64(r.LastRevision) })
	gauge("quorate_archive_lag_seconds", "How long the oldest change seen in the cluster and not yet stored in the archive has waited.", func(r archive.Report) float64 { return r.Lag.Seconds() })
	gauge("quorate_archive_segments", "Segments this archiver process has stored.", func(r archive.Report) float64 { return float64(r.Segments) })
	// Until it has begun, the gauges above read 0 and say nothing: this one says so.
	gauge("quorate_archive_begun", "1 once the archiver has opened its store and read the archive; 0 before, while /status says why (starting).", func(r archive.Report) float64 {
		if r.Starting != "" {
			return 0
		}
		return 1
	})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc(archive.ReportPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		rep := a.tracker.Report()
		if rep.Starting != "" {
			// Not begun: an operator that does not know Report.Starting (an earlier release,
			// during a rollback) must not read the empty report as an empty archive.
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(rep)
	})
	return mux
}
