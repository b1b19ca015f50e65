// Command archive-lag measures how far the continuous archive (internal/archive) trails the
// writes it keeps: it starts a real etcd on loopback, writes to it at a steady rate, archives
// every revision into a bucket (a directory, or a versitygw S3 server started on loopback), and
// reports, per acknowledged write, the time from its acknowledgement to the moment the segment
// holding it was stored: the archive's recovery point, which bounds what a restore to the
// newest archived point loses. A measurement, not a test: see docs/reports/pitr.md.
//
//	go run ./hack/archive-lag --rate 500 --duration 60s --store s3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/quorate-dev/quorate/hack/internal/loopback"
	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup/blobstore"
)

func main() {
	home, _ := os.UserHomeDir()
	etcdBin := flag.String("etcd", filepath.Join(home, ".cache/quorate/etcd/v3.6.16/bin/etcd"), "etcd binary (hack/build-etcd.sh)")
	gw := flag.String("versitygw", filepath.Join(home, ".cache/quorate/tools/versitygw/v1.8.0/versitygw"), "versitygw binary, for --store s3 (hack/build-tool.sh)")
	store := flag.String("store", "s3", "where the archive goes: s3 (versitygw on loopback) or file (a directory)")
	rate := flag.Int("rate", 500, "writes a second")
	duration := flag.Duration("duration", time.Minute, "how long to write")
	valueSize := flag.Int("value-size", 256, "bytes per value")
	maxLag := flag.Duration("max-lag", 500*time.Millisecond, "the archiver's MaxLag (its default)")
	flag.Parse()
	if err := run(*etcdBin, *gw, *store, *rate, *duration, *valueSize, *maxLag); err != nil {
		log.Fatal(err)
	}
}

// stored is when the segment ending at rev was stored.
type stored struct {
	rev int64
	at  time.Time
}

// report prints the Markdown row: each acknowledged write's lag, from its acknowledgement to
// the storing of the segment that holds it.
func report(kind string, rate int, duration time.Duration, valueSize int, maxLag time.Duration, acks map[int64]time.Time, failed int, segments []stored) {
	var lags []time.Duration
	for rev, ack := range acks {
		i, _ := slices.BinarySearchFunc(segments, rev, func(s stored, r int64) int { return int(s.rev - r) })
		lags = append(lags, max(segments[i].at.Sub(ack), 0))
	}
	slices.Sort(lags)
	q := func(p float64) time.Duration { return lags[min(len(lags)-1, int(p*float64(len(lags))))] }
	fmt.Printf("| %s | %d/s for %s | %d B | %s | %d | %d | %d | %s | %s | %s |\n", kind, rate, duration, valueSize, maxLag,
		len(acks), failed, len(segments), q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
}

// write puts at a steady rate for duration, each write from its own tick (a write that is late
// does not delay the next one's start), and returns when each revision was acknowledged and
// how many writes failed. mu guards the results against the archiver's callback.
func write(ctx context.Context, c *clientv3.Client, mu *sync.Mutex, rate int, duration time.Duration, valueSize int) (map[int64]time.Time, int) {
	acks := map[int64]time.Time{}
	value := make([]byte, valueSize)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.Now().Add(duration)
	failed := 0
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := c.Put(ctx, fmt.Sprintf("k/%06d", i%10000), string(value))
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			acks[r.Header.Revision] = now
		}(i)
	}
	wg.Wait()
	return acks, failed
}

// waitStored waits, a minute at most, until a stored segment ends at revision last or later.
func waitStored(mu *sync.Mutex, segments *[]stored, last int64) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		done := len(*segments) > 0 && (*segments)[len(*segments)-1].rev >= last
		mu.Unlock()
		if done {
			return nil
		}
	}
	return errors.New("the archive did not reach the last write within a minute")
}

func run(etcdBin, gw, kind string, rate int, duration time.Duration, valueSize int, maxLag time.Duration) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "archive-lag-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	var waits []func()
	defer func() {
		cancel()
		for _, w := range waits {
			w()
		}
	}()

	curl, w, err := loopback.StartEtcd(ctx, etcdBin, dir, "lag")
	if w != nil {
		waits = append(waits, w)
	}
	if err != nil {
		return err
	}

	url, w, err := loopback.Bucket(ctx, kind, dir, gw)
	if w != nil {
		waits = append(waits, w)
	}
	if err != nil {
		return err
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{curl}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := blobstore.OpenArchive(ctx, url)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()

	// The moment each segment was stored, by its last revision.
	var mu sync.Mutex
	var segments []stored
	resp, err := c.Get(ctx, "x")
	if err != nil {
		return err
	}
	from := resp.Header.Revision
	a := &archive.Archiver{Client: c, Store: st, Prefix: "lag/archive", ClusterID: resp.Header.ClusterId, MaxLag: maxLag,
		Archived: func(p archive.Progress) {
			mu.Lock()
			segments = append(segments, stored{p.Revision, time.Now()})
			mu.Unlock()
		}}
	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	archived := make(chan error, 1)
	go func() { archived <- a.Run(actx, from) }()

	acks, failed := write(ctx, c, &mu, rate, duration, valueSize)
	var last int64
	for rev := range acks {
		last = max(last, rev)
	}
	if err := waitStored(&mu, &segments, last); err != nil {
		return err
	}
	acancel()
	if err := <-archived; !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the archiver: %w", err)
	}

	if len(acks) == 0 {
		return fmt.Errorf("no write was acknowledged (%d failed)", failed)
	}
	report(kind, rate, duration, valueSize, maxLag, acks, failed, segments)
	return nil
}
