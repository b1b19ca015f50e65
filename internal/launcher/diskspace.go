package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// WALSegmentBytes is the size etcd preallocates for each write-ahead log segment: the room a
// member needs free on its volume to start.
const WALSegmentBytes = 64 << 20

// freeSpace is the room left on the file system holding dir, and its size (statfs, for tests
// to replace).
var freeSpace = func(dir string) (free, size uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// CheckFreeSpace refuses to start etcd (RefusalDiskFull) when the volume holding dataDir has
// less room than a write-ahead log segment: etcd preallocates the next segment as it opens the
// log, and would exit with "no space left on device" again and again. The preallocated
// segments a stopped etcd left (member/wal/*.tmp) count as room, since etcd replaces them.
// A file system that cannot be asked is not refused.
func CheckFreeSpace(dataDir string) error {
	volume := filepath.Dir(dataDir)
	free, size, err := freeSpace(volume)
	if err != nil {
		return nil
	}
	reusable := uint64(0)
	entries, _ := os.ReadDir(filepath.Join(dataDir, "member", "wal"))
	for _, e := range entries {
		if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".tmp") && info.Mode().IsRegular() {
			reusable += uint64(info.Size()) //nolint:gosec // a file's size is not negative
		}
	}
	if free+reusable >= WALSegmentBytes {
		return nil
	}
	return &Refusal{Kind: RefusalDiskFull, Message: fmt.Sprintf(
		"the volume has %s free of %s, and etcd needs %s to open its write-ahead log; its data is intact. Raise spec.storage.size (volumes are expanded without quorum) or free space on the volume",
		mib(free+reusable), mib(size), mib(WALSegmentBytes))}
}

func mib(b uint64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }
