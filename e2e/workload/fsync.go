package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// FsyncProbeFlag is the workload binary's flag that runs the probe on a directory
// (--fsync-probe-dir=DIR) instead of the workload.
const FsyncProbeFlag = "fsync-probe-dir"

// FsyncResult is what the fsync probe measured on a volume: how long writing a block and
// fdatasync-ing it took, as etcd's WAL does for every entry. The workload binary's fsync-probe
// writes it as JSON in its termination message; the suite reads it into the report's
// environment. etcd's hardware guide asks for a 99th percentile under 10 ms.
type FsyncResult struct {
	Samples   int           `json:"samples"`
	BlockSize int           `json:"blockSize"`
	P50       time.Duration `json:"p50"`
	P99       time.Duration `json:"p99"`
	Max       time.Duration `json:"max"`
}

// FsyncProbe appends n blocks of size bytes to a file in dir, fdatasync-ing after each, and
// returns the distribution of the write+sync times. The file is removed afterwards.
func FsyncProbe(dir string, n, size int) (FsyncResult, error) {
	if n < 1 || size < 1 {
		return FsyncResult{}, fmt.Errorf("fsync probe: %d samples of %d bytes: give at least one of one", n, size)
	}
	f, err := os.CreateTemp(dir, "fsync-probe-*")
	if err != nil {
		return FsyncResult{}, fmt.Errorf("fsync probe: %w", err)
	}
	defer func() { _ = os.Remove(filepath.Clean(f.Name())) }()
	defer func() { _ = f.Close() }()
	block := make([]byte, size)
	for i := range block {
		block[i] = byte(i)
	}
	ds := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := f.Write(block); err != nil {
			return FsyncResult{}, fmt.Errorf("fsync probe: writing: %w", err)
		}
		if err := fdatasync(f); err != nil {
			return FsyncResult{}, fmt.Errorf("fsync probe: syncing: %w", err)
		}
		ds = append(ds, time.Since(start))
	}
	return fsyncResult(ds, size), nil
}

// fsyncResult summarizes the samples.
func fsyncResult(ds []time.Duration, size int) FsyncResult {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return FsyncResult{Samples: len(s), BlockSize: size, P50: at(0.5), P99: at(0.99), Max: s[len(s)-1]}
}
