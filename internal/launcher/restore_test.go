package launcher

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// Restore restores a real snapshot with the etcdutl `make test` builds into a member that then
// serves the backup's keys at the backup's revision, under a new cluster ID; it restores only
// once, never over data or into a member that has run, and a damaged snapshot leaves no data.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	src := testsupport.StartEtcd(t, "src", false)
	c := src.Client(t)
	for i := range 30 {
		if _, err := c.Put(ctx, fmt.Sprintf("k%02d", i), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.db")
	if _, err := backup.Save(ctx, c, snap); err != nil {
		t.Fatal(err)
	}
	want, err := backup.Inspect(snap)
	if err != nil {
		t.Fatal(err)
	}
	srcStatus, err := c.Status(ctx, src.ClientURL)
	if err != nil {
		t.Fatal(err)
	}

	peer := fmt.Sprintf("http://127.0.0.1:%d", testsupport.FreePort(t))
	o := RestoreOptions{DataDir: filepath.Join(dir, "data"), MarkerPath: filepath.Join(dir, "marker.json"), Snapshot: snap,
		Command: []string{filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "etcdutl"), "snapshot", "restore", snap,
			"--name=m0", "--initial-cluster=m0=" + peer, "--initial-cluster-token=tok", "--initial-advertise-peer-urls=" + peer}}
	var log bytes.Buffer
	if err := Restore(o, &log); err != nil {
		t.Fatalf("restore: %v\n%s", err, log.String())
	}
	if _, err := os.Stat(snap); !os.IsNotExist(err) {
		t.Errorf("the snapshot was not removed after the restore: %v", err)
	}
	if _, err := os.Stat(o.DataDir + ".restoring"); !os.IsNotExist(err) {
		t.Errorf("the restore's work directory was left: %v", err)
	}
	restored := testsupport.StartEtcdWith(t, "m0", testsupport.EtcdOptions{DataDir: o.DataDir, PeerURL: peer})
	rc := restored.Client(t)
	got, err := backup.KeyspaceAt(ctx, rc, want.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("restored keyspace %+v, the snapshot's %+v", got, want)
	}
	st, err := rc.Status(ctx, restored.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	if st.Header.ClusterId == srcStatus.Header.ClusterId || st.Header.Revision != want.Revision {
		t.Fatalf("restored member: cluster %x (source %x), revision %d (snapshot %d)", st.Header.ClusterId, srcStatus.Header.ClusterId, st.Header.Revision, want.Revision)
	}

	// A member with data is left alone (the snapshot, fetched again, is removed).
	if err := os.WriteFile(snap, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := Restore(o, &log); err != nil || !strings.Contains(log.String(), "holds data: nothing to restore") {
		t.Fatalf("restore over data: %v %s", err, log.String())
	}
	// A member that has run (its marker exists) but lost its data is not restored.
	o2 := o
	o2.DataDir, o2.MarkerPath = filepath.Join(dir, "data2"), filepath.Join(dir, "marker2.json")
	if err := WriteMarker(o2.MarkerPath, Marker{ClusterID: "abc", Member: "m0"}); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := Restore(o2, &log); err != nil || HasData(o2.DataDir) || !strings.Contains(log.String(), "has run before") {
		t.Fatalf("restore into a member that ran: %v, data %v, %s", err, HasData(o2.DataDir), log.String())
	}
	// A damaged snapshot: etcdutl refuses it, and no data directory appears.
	o3 := o
	o3.DataDir, o3.MarkerPath = filepath.Join(dir, "data3"), filepath.Join(dir, "marker3.json")
	if err := os.WriteFile(snap, bytes.Repeat([]byte{7}, 8192+32), 0o600); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := Restore(o3, &log); err == nil || HasData(o3.DataDir) || !strings.Contains(err.Error(), "etcdutl exited with code") {
		t.Fatalf("restore of a damaged snapshot: %v, data %v", err, HasData(o3.DataDir))
	}
}
