// Package memlimit gives the Go runtime a soft memory limit below the container's memory limit.
//
// Without one, the runtime lets the heap grow to twice what is live before it collects (GOGC
// 100), so an operator whose live heap is half its container's limit is OOM-killed though it
// would fit. With a soft limit it collects harder as the heap nears the limit instead.
package memlimit

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Fraction of the container's limit given to the Go runtime at most; the rest is for what the
// runtime does not count: the pages of the binary the process touches, which the kernel
// charges to the container, and memory it maps for the process.
const Fraction = 0.9

// Reserve is what is left of the container's limit for that at least: the operator's binary
// had 42 MB resident at 5000 clusters, all of it charged to the container (make bench-scale,
// docs/design.md). With 10 % alone, a 256 MiB container left it 26 MiB, and the kernel
// reclaimed the binary's pages under the heap until the operator stalled and lost its leader
// lease.
const Reserve = 48 << 20

// Paths of the container's memory limit: cgroup v2, then v1.
var Paths = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// v1Unlimited: cgroup v1 reports no limit as a number near the largest int64, rounded to a page.
const v1Unlimited = int64(1) << 60

// Limit reads the container's memory limit in bytes from the first of paths that exists; ok is
// false when none does or the limit is unset ("max" in cgroup v2).
func Limit(paths []string) (limit int64, ok bool, err error) {
	for _, p := range paths {
		b, err := os.ReadFile(p) //nolint:gosec // G304: the cgroup files of Paths, or a test's
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return 0, false, err
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s holds %q, not a number of bytes", p, s)
		}
		if n <= 0 || n >= v1Unlimited {
			return 0, false, nil
		}
		return n, true, nil
	}
	return 0, false, nil
}

// Soft is the soft limit for a container's limit: Fraction of it, or less to leave Reserve,
// but never less than half.
func Soft(limit int64) int64 {
	soft := min(int64(float64(limit)*Fraction), limit-Reserve)
	return max(soft, limit/2)
}

// Set gives the runtime a soft limit (Soft) for the container's limit, unless GOMEMLIMIT is set
// (the runtime reads that itself) or the container has no limit. It returns the soft limit it
// set (0 for none) and why.
func Set(paths []string) (int64, string, error) {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		return 0, "GOMEMLIMIT=" + v + " is set", nil
	}
	limit, ok, err := Limit(paths)
	if err != nil || !ok {
		return 0, "the container has no memory limit", err
	}
	soft := Soft(limit)
	debug.SetMemoryLimit(soft)
	return soft, fmt.Sprintf("%.0f %% of the container's limit of %d bytes", float64(soft)*100/float64(limit), limit), nil
}
