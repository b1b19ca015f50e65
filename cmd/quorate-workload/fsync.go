package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/quorate-dev/quorate/e2e/workload"
)

// terminationLog is where the kubelet reads a container's termination message.
const terminationLog = "/dev/termination-log"

// fsyncProbeFlag, given first, runs the fsync probe instead of the workload.
const fsyncProbeFlag = workload.FsyncProbeFlag

// fsyncProbe runs `quorate-workload --fsync-probe-dir=DIR`: it measures DIR's volume and
// prints the workload.FsyncResult as JSON, also into the termination message when the pod has
// one.
func fsyncProbe(args []string) int {
	fs := flag.NewFlagSet("fsync-probe", flag.ContinueOnError)
	dir := fs.String(fsyncProbeFlag, "/data", "a directory on the volume to measure")
	n := fs.Int("fsync-probe-samples", 500, "how many blocks to write and sync")
	size := fs.Int("fsync-probe-block-size", 2048, "bytes per block (etcd's WAL entries are small)")
	out := fs.String("termination-log", terminationLog, "file the result is written to besides stdout (empty: none)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	res, err := workload.FsyncProbe(*dir, *n, *size)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(string(b))
	if *out != "" {
		if err := os.WriteFile(*out, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "writing the termination message:", err)
			return 1
		}
	}
	return 0
}
