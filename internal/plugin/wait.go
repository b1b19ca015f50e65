package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// waitFor calls check every e.Poll until it reports done or an error, or the timeout passes.
// Each new progress line check returns is printed once, so the user sees the operator's
// steps. A timeout says what the last progress was and that the change stays asked for.
func (e *Env) waitFor(ctx context.Context, timeout time.Duration, what string, check func(ctx context.Context) (done bool, progress string, err error)) error {
	last := ""
	err := wait.PollUntilContextTimeout(ctx, e.Poll, timeout, true, func(ctx context.Context) (bool, error) {
		done, progress, err := check(ctx)
		if err != nil {
			return false, err
		}
		if progress != "" && progress != last {
			fmt.Fprintf(e.Err, "  %s\n", progress)
			last = progress
		}
		return done, nil
	})
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || wait.Interrupted(err)) && ctx.Err() == nil {
		return fmt.Errorf("%s: not done after %s (last: %s); the request stays in place and the operator keeps working on it: look again with `kubectl quorate status`, or wait longer with --timeout", what, timeout, orNothing(last))
	}
	return err
}

func orNothing(s string) string {
	if s == "" {
		return "nothing observed yet"
	}
	return s
}
