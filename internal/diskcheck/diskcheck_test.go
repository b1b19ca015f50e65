package diskcheck

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	got := Summarize(d, 2300)
	want := Result{Syncs: 100, BlockSize: 2300, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond, SyncsPerSec: 100 / 5.05}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestJudge(t *testing.T) {
	fast := Result{P50: 800 * time.Microsecond, P99: 2345678 * time.Nanosecond, Max: 12 * time.Millisecond, SyncsPerSec: 900, ThroughputBytesPerSec: 200 << 20}
	if diff := cmp.Diff(Verdict{Met: true, Lines: []string{
		"ok: fdatasync p99 2.35ms (p50 800µs, max 12ms) is within etcd's 10ms",
		"ok: 900 durable writes a second, enough for a heavily loaded cluster (500)",
		"sequential write throughput 200.0 MiB/s (snapshots and defragmentation copy the database at this rate)",
	}}, Judge(fast)); diff != "" {
		t.Error(diff)
	}
	slow := Result{P50: 9 * time.Millisecond, P99: 25 * time.Millisecond, Max: 40 * time.Millisecond, SyncsPerSec: 40, ThroughputBytesPerSec: 10 << 20}
	if diff := cmp.Diff(Verdict{Met: false, Lines: []string{
		"too slow: fdatasync p99 25ms (p50 9ms, max 40ms) is over etcd's 10ms: expect slow writes, leader elections under load and heartbeat warnings; use a faster StorageClass (local or provisioned-IOPS SSD)",
		"too slow: 40 durable writes a second, under etcd's minimum of 50",
		"sequential write throughput 10.0 MiB/s (snapshots and defragmentation copy the database at this rate)",
	}}, Judge(slow)); diff != "" {
		t.Error(diff)
	}
}

func TestMeasureAndParse(t *testing.T) {
	r, err := Measure(t.TempDir(), Options{Syncs: 20, ThroughputBytes: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.Syncs != 20 || r.BlockSize != 2300 || r.P50 <= 0 || r.P50 > r.P99 || r.P99 > r.Max || r.SyncsPerSec <= 0 || r.ThroughputBytesPerSec <= 0 {
		t.Errorf("implausible result %+v", r)
	}
	got, err := Parse([]byte("starting\n" + r.Encode() + "\ndone\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Error(diff)
	}
	if _, err := Parse([]byte("no result\n")); err == nil || err.Error() != "the disk check's log holds no result line" {
		t.Errorf("got %v", err)
	}
}
