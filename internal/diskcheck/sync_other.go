//go:build !linux

package diskcheck

import "os"

// fdatasync falls back to fsync where the system has no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }
