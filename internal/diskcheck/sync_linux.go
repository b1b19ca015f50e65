package diskcheck

import (
	"os"
	"syscall"
)

// fdatasync is what etcd calls after each write-ahead log write.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
