package localcluster

import (
	"os"
	"slices"
	"testing"
)

func TestOrphanNetns(t *testing.T) {
	files := map[string]uint64{"cni-b": 2, "cni-a": 1, "cni-live": 3}
	got := orphanNetns(files, map[uint64]bool{3: true, 9: true})
	if want := []string{"cni-a", "cni-b"}; !slices.Equal(got, want) {
		t.Errorf("orphanNetns = %q, want %q", got, want)
	}
	if got := orphanNetns(files, map[uint64]bool{1: true, 2: true, 3: true}); len(got) != 0 {
		t.Errorf("orphanNetns with every namespace in use = %q, want none", got)
	}
}

// This process is in a network namespace, so netnsInUse must name it.
func TestNetnsInUseHasOwn(t *testing.T) {
	link, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	ino, err := netnsInode(link)
	if err != nil {
		t.Fatalf("%s: %v", link, err)
	}
	if !netnsInUse()[ino] {
		t.Errorf("netnsInUse lacks this process's namespace %d (%s)", ino, link)
	}
}
