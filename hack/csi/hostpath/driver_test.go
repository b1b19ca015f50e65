package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// serve runs the driver with o until the test ends, and after the cleanups registered later
// (which unpublish volumes through it).
func serve(t *testing.T, o options, sockets ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runUntil(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("driver: %v", err)
		}
	})
	for _, s := range append([]string{o.endpoint}, sockets...) {
		for i := 0; ; i++ {
			// Dialled, not stat'ed: the socket's file exists a moment before it listens.
			if c, err := net.Dial("unix", s); err == nil {
				_ = c.Close()
				break
			}
			if i == 100 {
				t.Fatalf("the driver did not listen on %s", s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func needMounts(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root")
	}
	if _, err := exec.LookPath("mount"); err != nil {
		t.Skip("no mount(8)")
	}
}

// TestSanity runs kubernetes-csi's csi-sanity suite against the driver in mode all: every
// call the sidecars and the kubelet make, with its arguments missing, repeated, and in order.
func TestSanity(t *testing.T) {
	needMounts(t)
	dir := t.TempDir()
	o := options{
		driverName: "hostpath.csi.quorate.dev", mode: "all", endpoint: filepath.Join(dir, "csi.sock"),
		dataDir: filepath.Join(dir, "data"), nodeID: "node-1", nodeLocal: true, maxVolumeSize: 1 << 40,
	}
	serve(t, o)
	cfg := sanity.NewTestConfig()
	// csi-test's Connect reads the connection's state after dialling and then waits for it to
	// change: when the connection is ready before that read, it waits out its minute and fails
	// (flaky against a local socket). A dialler that takes a moment closes that race; with a
	// scheme other than unix, Connect leaves the dialler to the options.
	cfg.Address = "passthrough:///" + o.endpoint
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		time.Sleep(100 * time.Millisecond)
		var d net.Dialer
		return d.DialContext(ctx, "unix", o.endpoint)
	}))
	cfg.TargetPath = filepath.Join(dir, "target")
	cfg.StagingPath = filepath.Join(dir, "staging")
	cfg.TestVolumeSize = 1 << 20
	cfg.TestVolumeExpandSize = 2 << 20
	cfg.IdempotentCount = 2
	sanity.Test(t, cfg)
}

// TestSnapshotRestore writes files into a volume through its bind mount, snapshots and clones
// it, and reads them back from the restored volume and the clone.
func TestSnapshotRestore(t *testing.T) {
	needMounts(t)
	dir := t.TempDir()
	o := options{
		driverName: "hostpath.csi.quorate.dev", mode: "all", endpoint: filepath.Join(dir, "csi.sock"),
		dataDir: filepath.Join(dir, "data"), nodeID: "node-1", nodeLocal: true, maxVolumeSize: 1 << 40,
	}
	serve(t, o)
	conn, err := grpc.NewClient("unix://"+o.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() }) // after the unpublishing cleanups below
	ctrl, node := csi.NewControllerClient(conn), csi.NewNodeClient(conn)
	ctx := t.Context()
	mountCap := []*csi.VolumeCapability{{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}}
	topo := &csi.TopologyRequirement{Preferred: []*csi.Topology{{Segments: map[string]string{topologyKey: "node-2"}}}}
	vol, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-a", VolumeCapabilities: mountCap, AccessibilityRequirements: topo,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if got := vol.GetVolume().GetAccessibleTopology()[0].GetSegments()[topologyKey]; got != "node-2" {
		t.Errorf("the volume is on node %q, want the preferred node-2", got)
	}
	id := vol.GetVolume().GetVolumeId()
	target := filepath.Join(dir, "pod", "mount")
	publish := func(id, target string, ro bool) {
		t.Helper()
		if _, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: mountCap[0], Readonly: ro}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
				t.Errorf("unpublishing %s: %v", target, err)
			}
		})
	}
	publish(id, target, false)
	if err := os.MkdirAll(filepath.Join(target, "member", "snap"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "member", "snap", "db"), []byte("etcd data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("snap/db", filepath.Join(target, "member", "link")); err != nil {
		t.Fatal(err)
	}
	snap, err := ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snapshot-a", SourceVolumeId: id})
	if err != nil {
		t.Fatal(err)
	}
	// Written after the snapshot: not in what is restored from it.
	if err := os.WriteFile(filepath.Join(target, "later"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: id, CapacityRange: &csi.CapacityRange{RequiredBytes: 4 << 20}}); err != nil {
		t.Fatal(err)
	}
	stats, err := node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: target})
	if err != nil {
		t.Fatal(err)
	}
	if got := stats.GetUsage()[0].GetTotal(); got != 4<<20 {
		t.Errorf("capacity after expansion is %d, want %d", got, 4<<20)
	}

	for _, src := range []*csi.VolumeContentSource{
		{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshot().GetSnapshotId()}}},
		{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: id}}},
	} {
		name := "pvc-from-" + sourceID(src)
		restored, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: mountCap,
			CapacityRange: &csi.CapacityRange{RequiredBytes: 4 << 20}, VolumeContentSource: src})
		if err != nil {
			t.Fatal(err)
		}
		rt := filepath.Join(dir, name, "mount")
		publish(restored.GetVolume().GetVolumeId(), rt, true)
		b, err := os.ReadFile(filepath.Join(rt, "member", "link"))
		if err != nil || string(b) != "etcd data" {
			t.Errorf("%s: reading the file through the restored link: %q, %v", name, b, err)
		}
		_, err = os.Stat(filepath.Join(rt, "later"))
		if wantLater := src.GetVolume() != nil; (err == nil) != wantLater {
			t.Errorf("%s: the file written after the snapshot is there: %v, want %v", name, err == nil, wantLater)
		}
		if err := os.WriteFile(filepath.Join(rt, "x"), nil, 0o600); err == nil {
			t.Errorf("%s: a read-only publish is writable", name)
		}
	}
}

// TestRegistration checks the node's plugin registration service as the kubelet sees it.
func TestRegistration(t *testing.T) {
	needMounts(t)
	dir := t.TempDir()
	kubelet := filepath.Join(dir, "kubelet")
	o := options{
		driverName: "hostpath.csi.quorate.dev", mode: "node", kubeletDir: kubelet,
		dataDir: filepath.Join(dir, "data"), nodeID: "node-1", nodeLocal: true, maxVolumeSize: 1 << 40,
	}
	o.endpoint = filepath.Join(kubelet, "plugins", o.driverName, "csi.sock")
	reg := filepath.Join(kubelet, "plugins_registry", o.driverName+"-reg.sock")
	serve(t, o, reg)
	conn, err := grpc.NewClient("unix://"+reg, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	info, err := registerapi.NewRegistrationClient(conn).GetInfo(t.Context(), &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.GetType() != registerapi.CSIPlugin || info.GetName() != o.driverName || info.GetEndpoint() != o.endpoint {
		t.Errorf("plugin info %v", info)
	}
	if _, err := registerapi.NewRegistrationClient(conn).NotifyRegistrationStatus(t.Context(), &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
}
