package workload

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data as etcd's WAL does (fdatasync on Linux).
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
