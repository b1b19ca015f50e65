package workload

import (
	"os"
	"testing"
	"time"
)

func TestFsyncResult(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 200; i++ {
		ds = append(ds, time.Duration(201-i)*time.Millisecond)
	}
	got := fsyncResult(ds, 8192)
	want := FsyncResult{Samples: 200, BlockSize: 8192, P50: 101 * time.Millisecond, P99: 199 * time.Millisecond, Max: 200 * time.Millisecond}
	if got != want {
		t.Errorf("result %+v, want %+v", got, want)
	}
}

// TestFsyncProbe measures a real directory: every sample counted, the order of the
// percentiles kept, the file gone afterwards.
func TestFsyncProbe(t *testing.T) {
	dir := t.TempDir()
	got, err := FsyncProbe(dir, 20, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if got.Samples != 20 || got.BlockSize != 4096 || got.P50 <= 0 || got.P50 > got.P99 || got.P99 > got.Max {
		t.Errorf("result %+v", got)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the probe left %v", left)
	}
	if _, err := FsyncProbe(dir, 0, 4096); err == nil {
		t.Error("0 samples accepted")
	}
}
