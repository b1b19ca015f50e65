// Command kubectl-quorate is the kubectl plugin of Quorate: `kubectl quorate status CLUSTER`
// and the other commands of internal/plugin, with the user's kubeconfig and RBAC.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/quorate-dev/quorate/internal/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := plugin.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, plugin.NewEnv)
	stop()
	var exit plugin.ExitError
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, &exit):
		os.Exit(exit.Code)
	default:
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
