//go:build !linux

package workload

import "os"

// fdatasync flushes f (fsync where fdatasync does not exist).
func fdatasync(f *os.File) error { return f.Sync() }
