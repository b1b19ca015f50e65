// Command quorate-localcluster starts and stops a local Kubernetes cluster built from upstream
// source (see e2e/localcluster).
//
//	quorate-localcluster up     [--name N] [--k8s-version vX.Y.Z]
//	quorate-localcluster down   [--name N]
//	quorate-localcluster status [--name N]
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
		fmt.Fprintln(os.Stderr, "usage: quorate-localcluster up|down|status [--name NAME] [--k8s-version VERSION]")
		os.Exit(64)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	name := fs.String("name", "quorate", "cluster name")
	version := fs.String("k8s-version", envflag.Or("K8S_VERSION", localcluster.DefaultVersion), "Kubernetes version, one of "+fmt.Sprint(localcluster.Versions))
	_ = fs.Parse(os.Args[2:])
	cfg := localcluster.DefaultConfig(*name, *version)
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
