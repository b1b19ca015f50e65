package localcluster

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A daemon that dies on its first start and lives on its second: waitRestarting starts it again
// and returns once the condition holds; with no restarts allowed it reports the exit.
func TestWaitRestartingStartsADeadDaemonAgain(t *testing.T) {
	for _, tc := range []struct {
		restarts   int
		wantExited bool
	}{{restarts: 0, wantExited: true}, {restarts: 1}} {
		cfg := testConfig(t)
		c := New(cfg, io.Discard)
		d := daemon{name: "flaky", args: []string{"sh", "-c", "if [ -e started ]; then touch up; exec sleep 60; else touch started; exit 2; fi"}}
		if err := c.start(d); err != nil {
			t.Fatal(err)
		}
		up := func(context.Context) error {
			_, err := os.Stat(filepath.Join(cfg.StateDir, "up"))
			return err
		}
		err := c.waitRestarting(context.Background(), d, "flaky up", 30*time.Second, tc.restarts, up)
		c.stop(d.name, time.Second)
		if got := errors.Is(err, errDaemonExited); got != tc.wantExited || (!tc.wantExited && err != nil) {
			t.Errorf("restarts %d: err = %v, want exited %v", tc.restarts, err, tc.wantExited)
		}
	}
}
