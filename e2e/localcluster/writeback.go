package localcluster

import (
	"fmt"
	"os"
	"strings"
)

// The node's containers and the etcd members' data directories share the host's root
// filesystem. When a container stops, unmounting its overlayfs root syncs that whole filesystem
// (overlayfs's sync_fs), so every member's next fsync waits until everything written on the
// machine is on disk. With the kernel's default threshold (background writeback from 10 % of
// memory) that can be gigabytes. In CI on 2026-11-26 it stalled every member's writes for 1.4 s
// (etcd-upgrade, the old pod's RemoveContainer) and 1.6 s (backup-restore, a helper pod's exit).
// Measured here: with 1.5 GB dirty, unmounting an idle overlay took 0.55 s; mounted `volatile`,
// 2 ms. Debian's containerd (1.6) cannot mount its overlays volatile, so while the cluster is up
// the kernel writes dirty data back from writebackBytes on instead, which keeps such a flush
// short. Down puts the host's value back.
const writebackBytes = 64 << 20

const (
	backgroundRatio = "vm.dirty_background_ratio"
	backgroundBytes = "vm.dirty_background_bytes"
)

// limitWriteback saves the host's background writeback threshold (once: a second Up keeps the
// first one's record) and lowers it to writebackBytes.
func (c *Cluster) limitWriteback() error {
	saved := c.cfg.path("writeback.orig")
	if _, err := os.Stat(saved); os.IsNotExist(err) {
		var orig []string
		for _, k := range []string{backgroundRatio, backgroundBytes} {
			b, err := os.ReadFile(sysctlPath(k))
			if err != nil {
				return fmt.Errorf("reading %s: %w", k, err)
			}
			orig = append(orig, k+"="+strings.TrimSpace(string(b)))
		}
		if err := os.WriteFile(saved, []byte(strings.Join(orig, "\n")), 0o644); err != nil {
			return err
		}
	}
	return sysctl(backgroundBytes, fmt.Sprint(writebackBytes))
}

// restoreWriteback puts back the threshold limitWriteback saved. The kernel keeps one of the
// two settings (writing either zeroes the other), so it writes the one the host had set.
func (c *Cluster) restoreWriteback() error {
	saved := c.cfg.path("writeback.orig")
	b, err := os.ReadFile(saved)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	orig := map[string]string{}
	for _, kv := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			orig[k] = v
		}
	}
	k := backgroundBytes
	if v := orig[k]; v == "" || v == "0" {
		k = backgroundRatio
	}
	if orig[k] == "" {
		return fmt.Errorf("%s names neither %s nor %s", saved, backgroundRatio, backgroundBytes)
	}
	if err := sysctl(k, orig[k]); err != nil {
		return err
	}
	return os.Remove(saved)
}
