package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// startArchiver runs the archiver process's loop against c into store, and returns the URL of
// its report and a stop function that waits for it to end.
func startArchiver(t *testing.T, c *clientv3.Client, store archive.Store, id uint64) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &archiveRun{client: c, store: store, prefix: "ns/c/archive/s", clusterID: id, maxLag: 100 * time.Millisecond, probeEvery: 50 * time.Millisecond}
	return startArchiverRunOn(t, a, ln)
}

// startArchiverRun runs a until the test ends, and returns the URL of its report.
func startArchiverRun(t *testing.T, a *archiveRun) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url, _ := startArchiverRunOn(t, a, ln)
	return url
}

func startArchiverRunOn(t *testing.T, a *archiveRun, ln net.Listener) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run(ctx, ln) }()
	stop := func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("the archiver ended with %v, want context.Canceled", err)
		}
	}
	t.Cleanup(func() {
		select {
		case <-ctx.Done():
		default:
			stop()
		}
	})
	return "http://" + ln.Addr().String() + archive.ReportPath, stop
}

func readReport(t *testing.T, url string) (archive.Report, error) {
	t.Helper()
	resp, err := http.Get(url) //nolint:gosec,noctx // the test's own listener
	if err != nil {
		return archive.Report{}, err
	}
	defer resp.Body.Close()
	var r archive.Report
	return r, json.NewDecoder(resp.Body).Decode(&r)
}

// waitReport polls the report until ok holds of it.
func waitReport(t *testing.T, url, what string, ok func(archive.Report) bool) archive.Report {
	t.Helper()
	var last archive.Report
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r, err := readReport(t, url)
		if err == nil && ok(r) {
			return r
		}
		last = r
	}
	t.Fatalf("the archiver's report never showed %s; last %+v", what, last)
	return last
}

func put(t *testing.T, c *clientv3.Client, n int, prefix string) int64 {
	t.Helper()
	var rev int64
	for i := range n {
		resp, err := c.Put(context.Background(), fmt.Sprintf("%s/%d", prefix, i), "v")
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	return rev
}

// The archiver process starts an empty archive from the cluster's revision, stores every
// later revision, reports its progress and lag, resumes after a restart from the archive's
// newest revision (one range), and starts a new range after etcd compacted past it.
func TestArchiverProcess(t *testing.T) {
	c := testsupport.StartEtcd(t, "archive-cmd", false).Client(t)
	store := archive.DirStore(t.TempDir())
	before := put(t, c, 3, "before")
	st, err := c.Status(context.Background(), c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	id := st.Header.ClusterId
	url, stop := startArchiver(t, c, store, id)
	// The process has read the archive (empty) once its watch started; the first revision it
	// stores is the next one.
	if r := waitReport(t, url, "the watch started", func(r archive.Report) bool { return r.WatchingFrom > 0 }); r.WatchingFrom != before {
		t.Fatalf("an empty archive started after revision %d, want the cluster's revision %d", r.WatchingFrom, before)
	}
	last := put(t, c, 20, "a")
	r := waitReport(t, url, fmt.Sprintf("revision %d stored", last), func(r archive.Report) bool { return r.LastRevision == last && r.Lag == 0 })
	want := archive.Report{ClusterID: fmt.Sprintf("%x", id), LastRevision: last, LastTime: r.LastTime, Ranges: [][2]int64{{before + 1, last}}, Segments: r.Segments, WatchingFrom: before}
	if fmt.Sprint(r) != fmt.Sprint(want) || r.Segments < 1 {
		t.Fatalf("report %+v, want %+v", r, want)
	}
	stop()

	// Writes while no archiver runs are archived by the next process: one range.
	gapless := put(t, c, 5, "b")
	url, stop = startArchiver(t, c, store, id)
	r = waitReport(t, url, fmt.Sprintf("revision %d stored", gapless), func(r archive.Report) bool { return r.LastRevision == gapless })
	if len(r.Ranges) != 1 || r.Ranges[0][1] != gapless {
		t.Fatalf("after a restart the archive covers %v, want one range to %d", r.Ranges, gapless)
	}
	spans, err := archive.Segments(context.Background(), store, "ns/c/archive/s", id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive.Cover(spans, r.Ranges[0][0]-1, gapless); err != nil {
		t.Fatalf("the stored segments do not cover the reported range: %v", err)
	}
	stop()

	// Revisions written and compacted while no archiver runs are a gap: a new range starts.
	lost := put(t, c, 5, "c")
	if _, err := c.Compact(context.Background(), lost); err != nil {
		t.Fatal(err)
	}
	url, _ = startArchiver(t, c, store, id)
	r = waitReport(t, url, "the compaction reported", func(r archive.Report) bool { return r.Error != "" })
	if want := (&archive.GapError{After: gapless, Compacted: lost}).Error(); r.Error != want {
		t.Fatalf("the report's error is %q, want %q", r.Error, want)
	}
	// etcd keeps the compacted revision itself: the new range starts there.
	waitReport(t, url, "the new range's watch", func(r archive.Report) bool { return r.WatchingFrom == lost-1 })
	after := put(t, c, 3, "d")
	r = waitReport(t, url, "a new range", func(r archive.Report) bool { return r.LastRevision == after })
	if fmt.Sprint(r.Ranges) != fmt.Sprint([][2]int64{{r.Ranges[0][0], gapless}, {lost, after}}) || r.Error != "" {
		t.Fatalf("after a compacted gap the archive covers %v (error %q), want the old range to %d and a new one %d-%d", r.Ranges, r.Error, gapless, lost, after)
	}
}

// reportStatus is the HTTP status the report answers with.
func reportStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url) //nolint:gosec,noctx // the test's own listener
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// begunGauge reads quorate_archive_begun from the /metrics next to the report at url.
func begunGauge(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(strings.Replace(url, archive.ReportPath, "/metrics", 1)) //nolint:noctx // the test's own listener
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "quorate_archive_begun "); ok {
			return v
		}
	}
	t.Fatalf("no quorate_archive_begun in /metrics:\n%s", body)
	return ""
}

// refusingStore refuses to list until allowed.
type refusingStore struct {
	archive.Store
	allowed chan struct{}
}

var errRefused = fmt.Errorf("listing s3://backups/ns/c: AccessDenied")

func (s refusingStore) List(ctx context.Context, prefix string) ([]string, error) {
	select {
	case <-s.allowed:
		return s.Store.List(ctx, prefix)
	default:
		return nil, errRefused
	}
}

// Until the archiver has read the archive, its report says why not (Report.Starting) and
// nothing of the archive; once it can, it begins.
func TestArchiverReportsWhyItHasNotBegun(t *testing.T) {
	c := testsupport.StartEtcd(t, "archive-starting", false).Client(t)
	st, err := c.Status(context.Background(), c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	id := st.Header.ClusterId
	store := refusingStore{Store: archive.DirStore(t.TempDir()), allowed: make(chan struct{})}
	url, _ := startArchiver(t, c, store, id)
	got := waitReport(t, url, "why it has not begun", func(r archive.Report) bool { return r.Starting != "" && r.Starting != errFirstReading.Error() })
	want := archive.Report{ClusterID: fmt.Sprintf("%x", id), Starting: "listing the archive's segments: " + errRefused.Error()}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("report %+v, want %+v", got, want)
	}
	if code := reportStatus(t, url); code != http.StatusServiceUnavailable {
		t.Fatalf("the report of an archiver that has not begun answers %d, want 503", code)
	}
	if v := begunGauge(t, url); v != "0" {
		t.Fatalf("quorate_archive_begun of an archiver that has not begun is %s, want 0", v)
	}
	close(store.allowed)
	got = waitReport(t, url, "the watch started", func(r archive.Report) bool { return r.WatchingFrom > 0 })
	if got.Starting != "" {
		t.Fatalf("begun, the report still says %q", got.Starting)
	}
	if code := reportStatus(t, url); code != http.StatusOK {
		t.Fatalf("the report of an archiver that has begun answers %d, want 200", code)
	}
	if v := begunGauge(t, url); v != "1" {
		t.Fatalf("quorate_archive_begun of an archiver that has begun is %s, want 1", v)
	}

	// A store that cannot be opened (its first request refused) is opened again, and the
	// report says why until it opens.
	errUntrusted := fmt.Errorf("reaching the bucket of s3://backups: x509: certificate signed by unknown authority")
	opened := make(chan struct{})
	a := &archiveRun{client: c, prefix: "ns/c2/archive/s", clusterID: id, maxLag: 100 * time.Millisecond, probeEvery: 50 * time.Millisecond,
		open: func(context.Context) (archive.Store, error) {
			select {
			case <-opened:
				return archive.DirStore(t.TempDir()), nil
			default:
				return nil, errUntrusted
			}
		}}
	url = startArchiverRun(t, a)
	got = waitReport(t, url, "why it has not begun", func(r archive.Report) bool { return r.Starting != "" && r.Starting != errFirstReading.Error() })
	if want := (archive.Report{ClusterID: fmt.Sprintf("%x", id), Starting: errUntrusted.Error()}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("report %+v, want %+v", got, want)
	}
	close(opened)
	if got = waitReport(t, url, "the watch started", func(r archive.Report) bool { return r.WatchingFrom > 0 }); got.Starting != "" {
		t.Fatalf("begun, the report still says %q", got.Starting)
	}
}
