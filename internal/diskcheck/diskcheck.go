// Package diskcheck measures what etcd needs of a disk: the latency of a small write made
// durable with fdatasync (what every write-ahead log entry costs), and the sequential write
// throughput (what snapshots and defragmentation cost). `quorate-backup disk-check` runs it in
// a pod on a volume of the StorageClass to check; `kubectl quorate disk-check` starts that pod
// and judges the result against etcd's guidance.
package diskcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Guidance of etcd's hardware recommendations and its FAQ: the 99th percentile of fdatasync
// durations under 10 ms, and at least 50 sequential durable writes per second (500 for a
// heavily loaded cluster).
const (
	MaxP99          = 10 * time.Millisecond
	MinSyncsPerSec  = 50
	BusySyncsPerSec = 500
)

// Options of a measurement. The defaults follow the fio job etcd's maintainers suggest:
// 2300-byte writes, each followed by fdatasync, 22 MiB in all (about 10000 writes).
type Options struct {
	BlockSize       int
	Syncs           int
	ThroughputBytes int64
}

func (o *Options) defaults() {
	if o.BlockSize == 0 {
		o.BlockSize = 2300
	}
	if o.Syncs == 0 {
		o.Syncs = 22 << 20 / 2300
	}
	if o.ThroughputBytes == 0 {
		o.ThroughputBytes = 256 << 20
	}
}

// Result of a measurement.
type Result struct {
	Syncs     int           `json:"syncs"`
	BlockSize int           `json:"blockSize"`
	P50       time.Duration `json:"p50Nanos"`
	P99       time.Duration `json:"p99Nanos"`
	Max       time.Duration `json:"maxNanos"`
	// SyncsPerSec is how many durable writes, one after the other, the disk made a second.
	SyncsPerSec float64 `json:"syncsPerSec"`
	// ThroughputBytesPerSec is the rate of a large sequential write, fsync included.
	ThroughputBytesPerSec float64 `json:"throughputBytesPerSec"`
}

// Prefix marks the line of a pod's log that holds the Result.
const Prefix = "quorate-disk-check: "

// Encode is the log line of a result.
func (r Result) Encode() string {
	b, _ := json.Marshal(r)
	return Prefix + string(b)
}

// Parse finds the result line in a log.
func Parse(log []byte) (Result, error) {
	for _, line := range strings.Split(string(log), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), Prefix); ok {
			var r Result
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				return Result{}, fmt.Errorf("the disk check's result %q: %w", rest, err)
			}
			return r, nil
		}
	}
	return Result{}, errors.New("the disk check's log holds no result line")
}

// percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Summarize turns the durations of the durable writes into a Result (without throughput).
func Summarize(d []time.Duration, blockSize int) Result {
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	var total time.Duration
	for _, x := range d {
		total += x
	}
	r := Result{Syncs: len(d), BlockSize: blockSize, P50: percentile(sorted, 0.50), P99: percentile(sorted, 0.99)}
	if len(sorted) > 0 {
		r.Max = sorted[len(sorted)-1]
	}
	if total > 0 {
		r.SyncsPerSec = float64(len(d)) / total.Seconds()
	}
	return r
}

// Measure writes into dir: o.Syncs blocks each made durable, then o.ThroughputBytes in 1 MiB
// writes and one fsync. It removes its files.
func Measure(dir string, o Options) (Result, error) {
	o.defaults()
	f, err := os.CreateTemp(dir, "sync-")
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = os.Remove(f.Name()); _ = f.Close() }()
	block := make([]byte, o.BlockSize)
	for i := range block {
		block[i] = byte(i)
	}
	durations := make([]time.Duration, 0, o.Syncs)
	for range o.Syncs {
		start := time.Now()
		if _, err := f.Write(block); err != nil {
			return Result{}, fmt.Errorf("writing %s: %w", f.Name(), err)
		}
		if err := fdatasync(f); err != nil {
			return Result{}, fmt.Errorf("fdatasync of %s: %w", f.Name(), err)
		}
		durations = append(durations, time.Since(start))
	}
	r := Summarize(durations, o.BlockSize)

	g, err := os.Create(filepath.Join(dir, "throughput")) //nolint:gosec // a file in the directory the caller measures
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = os.Remove(g.Name()); _ = g.Close() }()
	chunk := make([]byte, 1<<20)
	start := time.Now()
	for written := int64(0); written < o.ThroughputBytes; written += int64(len(chunk)) {
		if _, err := g.Write(chunk); err != nil {
			return Result{}, fmt.Errorf("writing %s: %w", g.Name(), err)
		}
	}
	if err := g.Sync(); err != nil {
		return Result{}, fmt.Errorf("fsync of %s: %w", g.Name(), err)
	}
	if s := time.Since(start).Seconds(); s > 0 {
		r.ThroughputBytesPerSec = float64(o.ThroughputBytes) / s
	}
	return r, nil
}

// Verdict is the judgement of a result against etcd's guidance.
type Verdict struct {
	// Met: the p99 and the durable writes per second meet the guidance.
	Met bool
	// Lines say what was measured against what etcd asks.
	Lines []string
}

// Judge compares a result with etcd's guidance.
func Judge(r Result) Verdict {
	v := Verdict{Met: true}
	if r.P99 <= MaxP99 {
		v.Lines = append(v.Lines, fmt.Sprintf("ok: fdatasync p99 %s (p50 %s, max %s) is within etcd's %s", round(r.P99), round(r.P50), round(r.Max), MaxP99))
	} else {
		v.Met = false
		v.Lines = append(v.Lines, fmt.Sprintf("too slow: fdatasync p99 %s (p50 %s, max %s) is over etcd's %s: expect slow writes, leader elections under load and heartbeat warnings; use a faster StorageClass (local or provisioned-IOPS SSD)",
			round(r.P99), round(r.P50), round(r.Max), MaxP99))
	}
	switch {
	case r.SyncsPerSec >= BusySyncsPerSec:
		v.Lines = append(v.Lines, fmt.Sprintf("ok: %.0f durable writes a second, enough for a heavily loaded cluster (%d)", r.SyncsPerSec, BusySyncsPerSec))
	case r.SyncsPerSec >= MinSyncsPerSec:
		v.Lines = append(v.Lines, fmt.Sprintf("ok: %.0f durable writes a second, enough for a lightly loaded cluster (%d), not for a heavily loaded one (%d)", r.SyncsPerSec, MinSyncsPerSec, BusySyncsPerSec))
	default:
		v.Met = false
		v.Lines = append(v.Lines, fmt.Sprintf("too slow: %.0f durable writes a second, under etcd's minimum of %d", r.SyncsPerSec, MinSyncsPerSec))
	}
	v.Lines = append(v.Lines, fmt.Sprintf("sequential write throughput %.1f MiB/s (snapshots and defragmentation copy the database at this rate)", r.ThroughputBytesPerSec/(1<<20)))
	return v
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
