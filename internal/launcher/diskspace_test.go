package launcher

import (
	"os"
	"path/filepath"
	"testing"
)

// A volume with less room than a write-ahead log segment is refused with DiskFull, saying how
// full it is and what to do; the preallocated segments a stopped etcd left count as room; a
// file system that cannot be asked refuses nothing.
func TestCheckFreeSpace(t *testing.T) {
	real := freeSpace
	t.Cleanup(func() { freeSpace = real })
	dataDir := filepath.Join(t.TempDir(), "data")
	wal := filepath.Join(dataDir, "member", "wal")
	if err := os.MkdirAll(wal, 0o700); err != nil {
		t.Fatal(err)
	}
	free := uint64(10 << 20)
	freeSpace = func(dir string) (uint64, uint64, error) {
		if dir != filepath.Dir(dataDir) {
			t.Errorf("asked about %s, not the volume %s", dir, filepath.Dir(dataDir))
		}
		return free, 200 << 20, nil
	}
	want := "DiskFull: the volume has 10.0MiB free of 200.0MiB, and etcd needs 64.0MiB to open its write-ahead log; its data is intact. Raise spec.storage.size (volumes are expanded without quorum) or free space on the volume"
	err := CheckFreeSpace(dataDir)
	if err == nil || err.Error() != want {
		t.Fatalf("CheckFreeSpace = %v\nwant %s", err, want)
	}
	if r := ParseTermination(err.Error()); r == nil || r.Kind != RefusalDiskFull {
		t.Fatalf("the termination message does not parse back as DiskFull: %+v", r)
	}
	// A segment etcd preallocated before it stopped is room it takes again.
	f, err := os.Create(filepath.Join(wal, "0.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(WALSegmentBytes - 10<<20); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if err := CheckFreeSpace(dataDir); err != nil {
		t.Fatalf("with a preallocated segment to reuse: %v", err)
	}
	free = WALSegmentBytes
	if err := os.Remove(filepath.Join(wal, "0.tmp")); err != nil {
		t.Fatal(err)
	}
	if err := CheckFreeSpace(dataDir); err != nil {
		t.Fatalf("with exactly a segment free: %v", err)
	}
	freeSpace = func(string) (uint64, uint64, error) { return 0, 0, os.ErrPermission }
	if err := CheckFreeSpace(dataDir); err != nil {
		t.Fatalf("a file system that cannot be asked: %v", err)
	}
}
