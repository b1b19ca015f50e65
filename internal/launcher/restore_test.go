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
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
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
	if err := Restore(ctx, o, &log); err != nil {
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
	if err := Restore(ctx, o, &log); err != nil || !strings.Contains(log.String(), "holds data: nothing to restore") {
		t.Fatalf("restore over data: %v %s", err, log.String())
	}
	// A member that has run (its marker exists) but lost its data is not restored.
	o2 := o
	o2.DataDir, o2.MarkerPath = filepath.Join(dir, "data2"), filepath.Join(dir, "marker2.json")
	if err := WriteMarker(o2.MarkerPath, Marker{ClusterID: "abc", Member: "m0"}); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := Restore(ctx, o2, &log); err != nil || HasData(o2.DataDir) || !strings.Contains(log.String(), "has run before") {
		t.Fatalf("restore into a member that ran: %v, data %v, %s", err, HasData(o2.DataDir), log.String())
	}
	// A damaged snapshot: etcdutl refuses it, and no data directory appears.
	o3 := o
	o3.DataDir, o3.MarkerPath = filepath.Join(dir, "data3"), filepath.Join(dir, "marker3.json")
	if err := os.WriteFile(snap, bytes.Repeat([]byte{7}, 8192+32), 0o600); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := Restore(ctx, o3, &log); err == nil || HasData(o3.DataDir) || !strings.Contains(err.Error(), "etcdutl exited with code") {
		t.Fatalf("restore of a damaged snapshot: %v, data %v", err, HasData(o3.DataDir))
	}
}

// A bootstrap pod's init containers run again when its sandbox restarts: the restore then
// honours the same never-bootstrap-twice guard as the launch, so a member that ran and lost its
// data is not rolled back to the backup. What says it ran: the operator's record in the pod's
// annotations, or another member listing it as started. Only a member nobody knows to have run
// is restored (here the stand-in for etcdutl fails, which shows it was reached).
func TestRestoreOnlyIntoAMemberThatNeverRan(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, annotations string
		bootstrapped      bool
		wantErr, wantLog  string
	}{
		{name: "recorded by the operator", annotations: names.AnnotationRequireData + "=\"true\"\n",
			wantLog: "the operator recorded that member m0 has run (pod annotation etcd.quorate.dev/require-data): not restoring"},
		{name: "listed as started by a peer", bootstrapped: true,
			wantLog: "refusing to bootstrap a second time: not restoring"},
		{name: "annotations unreadable", annotations: "garbage\n",
			wantErr: `not restoring: reading the pod's annotations, which say whether the member has run: `},
		{name: "never ran", annotations: names.AnnotationClusterID + "=\"\"\n",
			wantErr: "sh exited with code 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ann := filepath.Join(dir, "annotations")
			if err := os.WriteFile(ann, []byte(tc.annotations), 0o600); err != nil {
				t.Fatal(err)
			}
			snap := filepath.Join(dir, "snapshot.db")
			if err := os.WriteFile(snap, []byte("snapshot"), 0o600); err != nil {
				t.Fatal(err)
			}
			f := etcd.NewFake("3.6.16")
			if tc.bootstrapped {
				f.Bootstrap(0xc1, []string{"m0", "m1", "m2"}, []string{"u0", "u1", "u2"})
				f.ServeAt("m1:2379", "m1")
			}
			o := RestoreOptions{DataDir: filepath.Join(dir, "data"), MarkerPath: filepath.Join(dir, "marker.json"), Snapshot: snap,
				PodAnnotationsPath: ann, Factory: f.Factory(),
				Command: []string{"/bin/sh", "-c", "exit 9", "--name=m0", "--initial-cluster=m0=http://m0:2380,m1=http://m1:2380,m2=http://m2:2380"}}
			var log bytes.Buffer
			err := Restore(ctx, o, &log)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Fatalf("Restore = %v, want an error starting %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Restore = %v, want none", err)
			case !strings.Contains(log.String(), tc.wantLog):
				t.Fatalf("log %q does not say %q", log.String(), tc.wantLog)
			case HasData(o.DataDir):
				t.Fatal("data was restored")
			}
			if _, err := os.Stat(snap); tc.wantErr == "" && !os.IsNotExist(err) {
				t.Errorf("the snapshot of a member not restored was kept: %v", err)
			}
		})
	}
}
