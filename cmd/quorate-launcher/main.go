// Command quorate-launcher runs in front of etcd in every member pod (see internal/launcher).
//
//	quorate-launcher install DEST
//	quorate-launcher launch --data-dir=... --marker=... --member=... [--tls-dir=...] -- etcd FLAGS...
//	quorate-launcher restore --data-dir=... --marker=... --snapshot=... -- etcdutl snapshot restore FLAGS...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/internal/launcher"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: quorate-launcher install DEST | launch [flags] -- etcd [flags]")
		os.Exit(64)
	}
	switch os.Args[1] {
	case "install":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: quorate-launcher install DEST")
			os.Exit(64)
		}
		if err := launcher.Install(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "quorate-launcher install:", err)
			os.Exit(1)
		}
	case "launch":
		fs := flag.NewFlagSet("launch", flag.ExitOnError)
		var o launcher.Options
		fs.StringVar(&o.DataDir, "data-dir", "", "etcd data directory")
		fs.StringVar(&o.MarkerPath, "marker", "", "marker file beside the data directory")
		fs.StringVar(&o.Member, "member", "", "member name")
		fs.StringVar(&o.Host, "host", "", "the member's DNS name")
		fs.StringVar(&o.ExpectedClusterID, "expected-cluster-id", "", "cluster ID (hex) the data must belong to")
		fs.BoolVar(&o.RequireData, "require-data", false, "refuse an empty data directory")
		fs.StringVar(&o.TLSDir, "tls-dir", "", "directory with tls.crt, tls.key, ca.crt")
		fs.StringVar(&o.PeerTLSDir, "peer-tls-dir", "", "directory with the peer certificate (tls.crt, tls.key, ca.crt)")
		requirePeers := fs.String("require-peers", "", "comma-separated peer URLs that must answer before a member with no data starts etcd")
		fs.DurationVar(&o.RequirePeersFor, "require-peers-for", time.Minute, "how long to wait for --require-peers to answer")
		fs.StringVar(&o.TerminationLogPath, "termination-log", "/dev/termination-log", "where refusals are written")
		fs.StringVar(&o.PodAnnotationsPath, "pod-annotations", "", "the pod's annotations file (downward API): the operator marks a member that has run there")
		fs.StringVar(&o.ForceToken, "force-token", "", "the recovery token of a start with --force-new-cluster: a member forced for it before is not forced again")
		fs.DurationVar(&o.StopDelay, "stop-delay", 0, "how long etcd keeps serving after the pod is told to stop, while its endpoint leaves the client Service")
		fs.DurationVar(&o.FencePoll, "fence-poll", time.Second, "how often the pod's annotations are read for a fence (etcd.quorate.dev/stop-etcd)")
		_ = fs.Parse(os.Args[2:])
		o.Command = fs.Args()
		if *requirePeers != "" {
			o.RequirePeers = strings.Split(*requirePeers, ",")
		}
		if o.DataDir == "" || o.MarkerPath == "" || o.Member == "" || len(o.Command) == 0 {
			fmt.Fprintln(os.Stderr, "launch needs --data-dir, --marker, --member and a command after --")
			os.Exit(64)
		}
		// Launch forwards SIGTERM and SIGINT to etcd and exits when etcd does.
		os.Exit(launcher.Launch(context.Background(), o, os.Stderr))
	case "restore":
		fs := flag.NewFlagSet("restore", flag.ExitOnError)
		var o launcher.RestoreOptions
		fs.StringVar(&o.DataDir, "data-dir", "", "etcd data directory")
		fs.StringVar(&o.MarkerPath, "marker", "", "marker file beside the data directory")
		fs.StringVar(&o.Snapshot, "snapshot", "", "the fetched and verified snapshot")
		fs.StringVar(&o.PodAnnotationsPath, "pod-annotations", "", "the pod's annotations file (downward API): a member the operator recorded as having run is not restored")
		fs.StringVar(&o.TLSDir, "tls-dir", "", "the member's server certificate directory, to ask the other members whether it ran")
		fs.StringVar(&o.Host, "host", "", "the member's host name (its certificate's)")
		fs.StringVar(&o.ArchiveDir, "archive-dir", "", "a restore to a point's plan and segments, written by the fetch: the snapshot is rebased by them first")
		termination := fs.String("termination-log", "/dev/termination-log", "where a failure is written")
		_ = fs.Parse(os.Args[2:])
		o.Command = fs.Args()
		if o.DataDir == "" || o.MarkerPath == "" || o.Snapshot == "" || len(o.Command) == 0 {
			fmt.Fprintln(os.Stderr, "restore needs --data-dir, --marker, --snapshot and etcdutl after --")
			os.Exit(64)
		}
		if err := launcher.Restore(context.Background(), o, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "quorate-launcher restore:", err)
			_ = os.WriteFile(*termination, []byte(err.Error()), 0o644) //nolint:gosec // the kubelet reads it
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		os.Exit(64)
	}
}
