package localcluster

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeProcSys points the sysctls at a directory holding the two writeback settings.
func fakeProcSys(t *testing.T, ratio, bytes string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "vm"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := procSys
	procSys = dir
	t.Cleanup(func() { procSys = old })
	setFile(t, backgroundRatio, ratio)
	setFile(t, backgroundBytes, bytes)
}

func setFile(t *testing.T, key, v string) {
	t.Helper()
	if err := os.WriteFile(sysctlPath(key), []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, key string) string {
	t.Helper()
	b, err := os.ReadFile(sysctlPath(key))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// The host's threshold is lowered while the cluster is up and the one it had set is put back,
// as the kernel keeps it: writing either setting zeroes the other.
func TestWritebackIsLimitedAndRestored(t *testing.T) {
	for _, tc := range []struct {
		name, ratio, bytes string
		restored, want     string
	}{
		{name: "host sets a ratio", ratio: "10", bytes: "0", restored: backgroundRatio, want: "10"},
		{name: "host sets bytes", ratio: "0", bytes: "1048576000", restored: backgroundBytes, want: "1048576000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeProcSys(t, tc.ratio, tc.bytes)
			c := &Cluster{cfg: Config{StateDir: t.TempDir()}, out: io.Discard}
			if err := c.limitWriteback(); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, backgroundBytes); got != "67108864" {
				t.Fatalf("%s while up = %s, want 67108864", backgroundBytes, got)
			}
			setFile(t, backgroundRatio, "0") // as the kernel does
			// A second Up keeps the host's values, not the lowered ones.
			if err := c.limitWriteback(); err != nil {
				t.Fatal(err)
			}
			setFile(t, backgroundRatio, "-")
			setFile(t, backgroundBytes, "-")
			if err := c.restoreWriteback(); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, tc.restored); got != tc.want {
				t.Errorf("%s after Down = %s, want %s", tc.restored, got, tc.want)
			}
			other := backgroundBytes
			if tc.restored == backgroundBytes {
				other = backgroundRatio
			}
			if got := readFile(t, other); got != "-" {
				t.Errorf("%s was written (%s); only %s should be", other, got, tc.restored)
			}
			// Down twice: nothing left to restore.
			if err := c.restoreWriteback(); err != nil {
				t.Errorf("second restore: %v", err)
			}
		})
	}
}
