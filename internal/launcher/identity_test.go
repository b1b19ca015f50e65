package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// identityOf asks a running member who it is.
func identityOf(t *testing.T, e *testsupport.Etcd) DataIdentity {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := e.Client(t).Status(ctx, e.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	return DataIdentity{MemberID: st.Header.MemberId, ClusterID: st.Header.ClusterId}
}

func markerOf(id DataIdentity, member string) *Marker {
	return &Marker{ClusterID: names.FormatID(id.ClusterID), MemberID: names.FormatID(id.MemberID), Member: member}
}

// Real etcd writes the data: the head of its log names the member and cluster it answers as,
// a forced recovery keeps both, and a volume whose data is another cluster's (or another
// member's) behind this member's marker is refused before etcd starts.
func TestDataIdentity(t *testing.T) {
	a := testsupport.StartCluster(t, "a", 3)
	b := testsupport.StartEtcd(t, "b", false)
	idA0, idA1, idB := identityOf(t, a[0]), identityOf(t, a[1]), identityOf(t, b)
	for _, e := range append(a, b) {
		e.Stop()
	}
	for _, tc := range []struct {
		dir  string
		want DataIdentity
	}{{a[0].DataDir, idA0}, {a[1].DataDir, idA1}, {b.DataDir, idB}} {
		got, err := ReadDataIdentity(tc.dir)
		if err != nil || got != tc.want {
			t.Fatalf("ReadDataIdentity(%s) = %+v, %v; want %+v", tc.dir, got, err, tc.want)
		}
	}

	// The survivor of a forced recovery keeps its member and cluster ID (the marker written
	// before it stays right).
	forced := a[0].Restart(t, "--force-new-cluster")
	if got := identityOf(t, forced); got != idA0 {
		t.Fatalf("after --force-new-cluster etcd answers as %+v, was %+v", got, idA0)
	}
	forced.Stop()
	if got, err := ReadDataIdentity(a[0].DataDir); err != nil || got != idA0 {
		t.Fatalf("after --force-new-cluster the log's head says %+v, %v; want %+v", got, err, idA0)
	}

	check := func(dataDir string, marker *Marker) error {
		t.Helper()
		path := filepath.Join(t.TempDir(), "quorate-member.json")
		if err := WriteMarker(path, *marker); err != nil {
			t.Fatal(err)
		}
		_, err := Volume{DataDir: dataDir, MarkerPath: path, Member: "a-0", ExpectedClusterID: marker.ClusterID, RequireData: true}.Check()
		return err
	}
	if err := check(a[0].DataDir, markerOf(idA0, "a-0")); err != nil {
		t.Fatalf("the member's own data was refused: %v", err)
	}
	padded := &Marker{ClusterID: fmt.Sprintf("%016x", idA0.ClusterID), MemberID: fmt.Sprintf("%016x", idA0.MemberID), Member: "a-0"}
	if err := check(a[0].DataDir, padded); err != nil {
		t.Fatalf("the member's own data behind a marker with zero-padded IDs was refused: %v", err)
	}
	hex := names.FormatID
	for _, tc := range []struct {
		name string
		data string
		want string
	}{
		{"another cluster's data", b.DataDir, "the data in " + b.DataDir + " is member " + hex(idB.MemberID) + " of etcd cluster " + hex(idB.ClusterID) +
			", but the volume's marker records member " + hex(idA0.MemberID) + " (a-0) of cluster " + hex(idA0.ClusterID) +
			": another cluster's data was put on this volume; refusing to serve it. Delete the member's PVC if that data is not needed: the member is then replaced"},
		{"another member's data of the same cluster", a[1].DataDir, "the data in " + a[1].DataDir + " is member " + hex(idA1.MemberID) + " of etcd cluster " + hex(idA1.ClusterID) +
			", but the volume's marker records member " + hex(idA0.MemberID) + " (a-0) of cluster " + hex(idA0.ClusterID) +
			": another member's data of this cluster was put on this volume; refusing to start it as this member. Put each member's data back on its own volume; if this member's own data is lost, delete its PVC: the member is then replaced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := check(tc.data, markerOf(idA0, "a-0"))
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("got %v, want a refusal", err)
			}
			if want := (Refusal{Kind: RefusalClusterIDMismatch, Message: tc.want}); *r != want {
				t.Fatalf("refusal\n%+v\nwant\n%+v", *r, want)
			}
		})
	}

	// A damaged oldest file gives way to the next one.
	walDir := filepath.Join(b.DataDir, "member", "wal")
	entries, err := os.ReadDir(walDir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("reading %s: %v, %d entries", walDir, err, len(entries))
	}
	mixed := t.TempDir()
	if err := os.MkdirAll(filepath.Join(mixed, "member", "wal"), 0o700); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(walDir, entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"0000000000000000-0000000000000000.wal": {3, 0, 0, 0, 0, 0, 0, 0, 1}, "0000000000000001-0000000000000009.wal": good} {
		if err := os.WriteFile(filepath.Join(mixed, "member", "wal", name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := ReadDataIdentity(mixed); err != nil || got != idB {
		t.Fatalf("with a damaged oldest file: %+v, %v; want %+v", got, err, idB)
	}
}

// A log whose head cannot be read says nothing: the volume is not refused for it (etcd's
// answer is checked once it serves).
func TestDataIdentityUnknown(t *testing.T) {
	dir := t.TempDir()
	wal := filepath.Join(dir, "member", "wal")
	if err := os.MkdirAll(wal, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDataIdentity(dir); err == nil {
		t.Fatal("an empty WAL directory gave an identity")
	}
	if err := os.WriteFile(filepath.Join(wal, "0000000000000000-0000000000000000.wal"), []byte{8, 0, 0}, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDataIdentity(dir); err == nil {
		t.Fatal("a cut-short WAL gave an identity")
	}
	path := filepath.Join(dir, "quorate-member.json")
	if err := WriteMarker(path, Marker{ClusterID: "abc", MemberID: "12", Member: "a-0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := (Volume{DataDir: dir, MarkerPath: path, Member: "a-0"}).Check(); err != nil {
		t.Fatalf("a volume whose log's head is unreadable was refused: %v", err)
	}
}
