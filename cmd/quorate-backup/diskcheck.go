package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/quorate-dev/quorate/internal/diskcheck"
)

// diskCheck measures the disk of --dir and prints the result line that `kubectl quorate
// disk-check` reads from the pod's log. It needs no credentials and writes nowhere else.
func diskCheck(args []string) int {
	fs := flag.NewFlagSet("disk-check", flag.ExitOnError)
	dir := fs.String("dir", "/data", "a directory on the disk to measure")
	syncs := fs.Int("syncs", 0, "durable writes to time (default: 22 MiB of 2300-byte writes, as etcd's fio job)")
	bytes := fs.Int64("throughput-bytes", 0, "bytes of the sequential write (default 256 MiB)")
	_ = fs.Parse(args)
	r, err := diskcheck.Measure(*dir, diskcheck.Options{Syncs: *syncs, ThroughputBytes: *bytes})
	if err != nil {
		fmt.Fprintln(os.Stderr, "disk-check:", err)
		return 1
	}
	fmt.Println(r.Encode())
	return 0
}
