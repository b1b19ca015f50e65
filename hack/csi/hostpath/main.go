// Command quorate-csi-hostpath is a small CSI driver whose volumes are directories on the host,
// for the local cluster's CSI-only ("foreign") storage profile (hack/csi.sh,
// docs/local-cluster.md). It stands in for kubernetes-csi's csi-driver-host-path and
// node-driver-registrar, which the Go module proxy here refuses (hack/build-csi.sh), and runs
// behind the upstream external-provisioner, external-resizer and external-snapshotter
// sidecars.
//
// It runs in one of three modes:
//
//   - controller: the Identity and Controller services on --endpoint, for the sidecars of one
//     Deployment: volumes are created, cloned, expanded and snapshotted in --data-dir.
//   - node: the Identity and Node services on <kubelet-dir>/plugins/<driver>/csi.sock, and the
//     kubelet's plugin registration service on <kubelet-dir>/plugins_registry/<driver>-reg.sock
//     (what node-driver-registrar would do): volumes are bind-mounted from --data-dir.
//   - all: every service on --endpoint (the tests' csi-sanity run).
//
// The local cluster's nodes share this machine's file system, so every node reaches every
// volume's directory; with --node-local (the default) a volume is still pinned to the node its
// first consumer was scheduled on, as csi-driver-host-path's are.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// version is set at build time (-X main.version).
var version = "dev"

// options are the driver's flags.
type options struct {
	driverName    string
	mode          string
	endpoint      string
	kubeletDir    string
	dataDir       string
	nodeID        string
	nodeLocal     bool
	maxVolumeSize int64
	healthAddr    string
}

func main() {
	var o options
	flag.StringVar(&o.driverName, "driver-name", "hostpath.csi.quorate.dev", "the CSI driver's name (the CSIDriver object and the StorageClass's provisioner)")
	flag.StringVar(&o.mode, "mode", "all", "controller, node or all")
	flag.StringVar(&o.endpoint, "endpoint", "", "the CSI socket (a path or unix://path); in node mode <kubelet-dir>/plugins/<driver-name>/csi.sock when empty")
	flag.StringVar(&o.kubeletDir, "kubelet-dir", "/var/lib/kubelet", "the kubelet's --root-dir on this node, as the host sees it and as this container mounts it (node mode)")
	flag.StringVar(&o.dataDir, "data-dir", "/csi-data-dir", "where volumes and snapshots are kept")
	flag.StringVar(&o.nodeID, "node-id", os.Getenv("KUBE_NODE_NAME"), "the node's name (node mode; in controller mode the node a volume with no topology requirement goes to)")
	flag.BoolVar(&o.nodeLocal, "node-local", true, "pin every volume to one node (topology key "+topologyKey+")")
	flag.Int64Var(&o.maxVolumeSize, "max-volume-size", 1<<40, "the largest volume, in bytes, that can be created or expanded to")
	flag.StringVar(&o.healthAddr, "health-addr", "", "serve GET /healthz on this address (e.g. :9808) when not empty")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := runUntil(ctx, o)
	stop()
	if err != nil {
		slog.Error("exiting", "error", err)
		os.Exit(1)
	}
}

// runUntil serves until ctx ends or a server fails.
func runUntil(ctx context.Context, o options) error {
	switch o.mode {
	case "controller", "node", "all":
	default:
		return fmt.Errorf("--mode must be controller, node or all, not %q", o.mode)
	}
	if o.mode != "controller" && o.nodeID == "" {
		return errors.New("--node-id (or KUBE_NODE_NAME) is required in node mode")
	}
	if o.endpoint == "" {
		if o.mode != "node" {
			return errors.New("--endpoint is required in controller mode")
		}
		o.endpoint = filepath.Join(o.kubeletDir, "plugins", o.driverName, "csi.sock")
	}
	o.endpoint = strings.TrimPrefix(o.endpoint, "unix://")
	d, err := newDriver(o)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(srv, d)
	if o.mode != "node" {
		csi.RegisterControllerServer(srv, d)
	}
	if o.mode != "controller" {
		csi.RegisterNodeServer(srv, d)
	}
	lis, err := listenUnix(o.endpoint)
	if err != nil {
		return err
	}
	errs := make(chan error, 3)
	go func() { errs <- srv.Serve(lis) }()
	defer srv.Stop()
	slog.Info("serving CSI", "driver", o.driverName, "version", version, "mode", o.mode, "endpoint", o.endpoint, "data", o.dataDir, "node", o.nodeID)

	if o.mode == "node" {
		reg := filepath.Join(o.kubeletDir, "plugins_registry", o.driverName+"-reg.sock")
		rlis, err := listenUnix(reg)
		if err != nil {
			return err
		}
		rsrv := grpc.NewServer()
		registerapi.RegisterRegistrationServer(rsrv, &registrar{name: o.driverName, endpoint: o.endpoint, failed: errs})
		go func() { errs <- rsrv.Serve(rlis) }()
		// Removing the socket is what makes the kubelet deregister the plugin.
		defer func() { rsrv.Stop(); _ = os.Remove(reg) }()
		slog.Info("serving the kubelet's plugin registration", "socket", reg)
	}
	if o.healthAddr != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
			if err := d.healthy(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok\n"))
		})
		hs := &http.Server{Addr: o.healthAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { errs <- hs.ListenAndServe() }()
		defer func() { _ = hs.Close() }()
	}
	select {
	case <-ctx.Done():
		slog.Info("stopping")
		return nil
	case err := <-errs:
		return err
	}
}

// listenUnix listens on the unix socket path, replacing a socket left by an earlier run.
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return net.Listen("unix", path)
}

// logCalls logs every call but the frequent probes, and its error.
func logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	quiet := strings.HasSuffix(info.FullMethod, "/Probe") || strings.HasSuffix(info.FullMethod, "/NodeGetVolumeStats") ||
		strings.HasSuffix(info.FullMethod, "Capabilities")
	start := time.Now()
	resp, err := handler(ctx, req)
	switch {
	case err != nil:
		slog.Warn("call failed", "method", info.FullMethod, "request", fmt.Sprintf("%v", req), "error", err)
	case !quiet:
		slog.Info("call", "method", info.FullMethod, "request", fmt.Sprintf("%v", req), "took", time.Since(start).Round(time.Millisecond))
	}
	return resp, err
}

// registrar is the kubelet's plugin registration service (pluginregistration/v1), which
// node-driver-registrar serves for drivers that do not: the kubelet finds its socket in
// plugins_registry, asks for the driver's name and CSI endpoint, and reports whether it took it.
type registrar struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
	failed         chan<- error
}

func (r *registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !s.PluginRegistered {
		// As node-driver-registrar does: exit, so that the kubelet restarts the container and
		// the registration is tried again.
		select {
		case r.failed <- fmt.Errorf("the kubelet refused the registration: %s", s.Error):
		default:
		}
	} else {
		slog.Info("registered with the kubelet")
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
