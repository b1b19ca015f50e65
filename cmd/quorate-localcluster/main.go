// Command quorate-localcluster starts and stops a local Kubernetes cluster built from upstream
// source (see e2e/localcluster).
//
//	quorate-localcluster up     [--name N] [--k8s-version vX.Y.Z] [--nodes N] [--profile openshift-like|foreign]
//	quorate-localcluster down   [--name N]
//	quorate-localcluster status [--name N]
//	quorate-localcluster power-off|power-on|cut|heal [--name N] NODE
//
// power-off stops a further node the way a power loss does (its link down, then every process
// of it killed), power-on starts it again; cut takes it off the network whole, heal joins it
// again.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/quorate-dev/quorate/e2e/localcluster"
	"github.com/quorate-dev/quorate/internal/envflag"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: quorate-localcluster up|down|status [--name NAME] [--k8s-version VERSION] [--nodes N] [--profile openshift-like|foreign]\n       quorate-localcluster power-off|power-on|cut|heal [--name NAME] NODE")
		os.Exit(64)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	name := fs.String("name", "quorate", "cluster name")
	version := fs.String("k8s-version", envflag.Or("K8S_VERSION", localcluster.DefaultVersion), "Kubernetes version, one of "+fmt.Sprint(localcluster.Versions))
	nodes := fs.Int("nodes", 1, fmt.Sprintf("how many nodes (1 to %d): node 1 is this machine, each further one a network namespace with its own containerd, kubelet and kube-proxy", localcluster.MaxNodes))
	profile := fs.String("profile", os.Getenv("PROFILE"), "profile: empty (upstream defaults), openshift-like (Pod Security Admission restricted on every namespace, UID ranges per namespace assigned and enforced as OpenShift's restricted-v2 SCC does) or foreign (openshift-like, and CSI storage alone under StorageClass standard-rwo, nodes 2 and up tainted node.quorate.dev/pool=etcd:NoSchedule, images pulled only as registry.foreign.internal/...; at least 3 nodes); docs/local-cluster.md")
	_ = fs.Parse(os.Args[2:])
	if err := localcluster.CheckProfile(*profile); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(64)
	}
	cfg := localcluster.DefaultConfig(*name, *version)
	cfg.Nodes = *nodes
	cfg.Profile = *profile
	c := localcluster.New(cfg, os.Stderr)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var err error
	switch os.Args[1] {
	case "up":
		err = c.Up(ctx)
		if err == nil {
			fmt.Println(cfg.Kubeconfig)
		}
	case "down":
		err = c.Down(ctx)
	case "power-off", "power-on", "cut", "heal":
		if fs.NArg() != 1 {
			err = fmt.Errorf("%s takes the node's name (kubectl get nodes)", os.Args[1])
			break
		}
		node := localcluster.NewNode(cfg)
		switch os.Args[1] {
		case "power-off":
			err = node.PowerOff(ctx, fs.Arg(0))
		case "power-on":
			err = node.PowerOn(ctx, fs.Arg(0))
		default:
			err = node.Partition(ctx, fs.Arg(0), os.Args[1] == "cut")
		}
	case "status":
		if c.Running() {
			fmt.Printf("cluster %s is running; kubeconfig %s\n", cfg.Name, cfg.Kubeconfig)
		} else {
			fmt.Printf("cluster %s is not running\n", cfg.Name)
			os.Exit(1)
		}
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
