package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type result struct {
		limit int64
		ok    bool
		err   bool
	}
	for _, tc := range []struct {
		name  string
		paths []string
		want  result
	}{
		{"cgroup v2 limit", []string{write("v2", "268435456\n")}, result{268435456, true, false}},
		{"cgroup v2 without limit", []string{write("v2max", "max\n")}, result{0, false, false}},
		{"cgroup v1 without limit", []string{write("v1max", "9223372036854771712\n")}, result{0, false, false}},
		{"first missing, then v1", []string{filepath.Join(dir, "absent"), write("v1", "536870912")}, result{536870912, true, false}},
		{"none exists", []string{filepath.Join(dir, "absent")}, result{0, false, false}},
		{"garbage", []string{write("bad", "lots")}, result{0, false, true}},
	} {
		limit, ok, err := Limit(tc.paths)
		if got := (result{limit, ok, err != nil}); got != tc.want {
			t.Errorf("%s: Limit = %+v (err %v), want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestSet(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	p := filepath.Join(t.TempDir(), "memory.max")
	if err := os.WriteFile(p, []byte("268435456\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMEMLIMIT", "")
	soft, _, err := Set([]string{p})
	if err != nil || soft != 208<<20 || debug.SetMemoryLimit(-1) != 208<<20 {
		t.Errorf("Set = %d, %v; runtime limit %d; want 208 MiB (256 MiB less Reserve) in both", soft, err, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(before)
	t.Setenv("GOMEMLIMIT", "100MiB")
	if soft, why, err := Set([]string{p}); err != nil || soft != 0 || why != "GOMEMLIMIT=100MiB is set" || debug.SetMemoryLimit(-1) != before {
		t.Errorf("with GOMEMLIMIT set: Set = %d, %q, %v and runtime limit %d; want it left to the runtime", soft, why, err, debug.SetMemoryLimit(-1))
	}
}

// The soft limit leaves Reserve for the binary's pages, 10 % when that is more, and never takes
// more than half.
func TestSoft(t *testing.T) {
	for _, tc := range []struct{ limit, want int64 }{
		{64 << 20, 32 << 20},          // half: Reserve would leave 16 MiB
		{96 << 20, 48 << 20},          // Reserve, and half
		{256 << 20, 208 << 20},        // Reserve
		{480 << 20, 432 << 20},        // Reserve and 10 % are equal
		{1024 << 20, 9663676416 / 10}, // 10 %
	} {
		if got := Soft(tc.limit); got != tc.want {
			t.Errorf("Soft(%d MiB) = %d, want %d", tc.limit>>20, got, tc.want)
		}
	}
}
