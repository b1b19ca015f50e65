package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// SizedVolume is a directory on node 1 whose file system holds Size bytes and no more: a tmpfs
// mounted there. A local-path volume is a directory of this machine's disk, which a PVC's
// request does not limit; a volume made of a SizedVolume fills up as a disk of its size does.
type SizedVolume struct {
	Node string // the node it is on (its kubernetes.io/hostname)
	Path string
	Size int64
}

// SizedVolumes mounts count file systems of size bytes each under the cluster's state
// directory, in sized/<set>/, and returns them; Down unmounts them with everything else.
func (n *Node) SizedVolumes(set string, count int, size int64) ([]SizedVolume, error) {
	var out []SizedVolume
	for i := range count {
		dir := n.cfg.path("sized", set, fmt.Sprint(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return out, err
		}
		if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0777", size)); err != nil {
			return out, fmt.Errorf("mounting a tmpfs of %d bytes on %s: %w", size, dir, err)
		}
		out = append(out, SizedVolume{Node: n.cfg.NodeName, Path: dir, Size: size})
	}
	return out, nil
}

// RemoveSizedVolumes unmounts and removes what SizedVolumes mounted for set.
func (n *Node) RemoveSizedVolumes(set string) error {
	dir := n.cfg.path("sized", set)
	if _, err := unmountUnder(dir); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Clean(dir))
}
