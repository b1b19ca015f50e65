package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/quorate-dev/quorate/e2e/workloadapi"
	"github.com/quorate-dev/quorate/internal/diskcheck"
)

// terminationLog is where the kubelet reads a container's termination message.
const terminationLog = "/dev/termination-log"

// fsyncProbeFlag, given first, runs the fsync probe instead of the workload.
const fsyncProbeFlag = workloadapi.FsyncProbeFlag

// fsyncProbe runs `quorate-workload --fsync-probe-dir=DIR`: the disk check of
// internal/diskcheck on DIR's volume (fewer writes than `kubectl quorate disk-check`'s: it
// only describes the environment), its result line printed and written to the termination
// message.
func fsyncProbe(args []string) int {
	fs := flag.NewFlagSet("fsync-probe", flag.ContinueOnError)
	dir := fs.String(fsyncProbeFlag, "/data", "a directory on the volume to measure")
	syncs := fs.Int("fsync-probe-syncs", 1000, "how many small writes to make durable, one after the other")
	throughput := fs.Int64("fsync-probe-throughput-bytes", 16<<20, "bytes of the sequential write")
	out := fs.String("termination-log", terminationLog, "file the result is written to besides stdout (empty: none)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	res, err := diskcheck.Measure(*dir, diskcheck.Options{Syncs: *syncs, ThroughputBytes: *throughput})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fsync probe:", err)
		return 1
	}
	line := res.Encode()
	fmt.Println(line)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(line), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "writing the termination message:", err)
			return 1
		}
	}
	return 0
}
