package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A daemon is a cluster process started detached (its own session) with its output in
// logs/<name>.log and its PID in run/<name>.pid, so that Down can stop it from another process.
type daemon struct {
	name string
	args []string
	env  []string
}

func (c *Cluster) pidFile(name string) string { return c.cfg.path("run", name+".pid") }

// LogFile is where a daemon's output goes.
func (c *Cluster) LogFile(name string) string { return c.cfg.path("logs", name+".log") }

func (c *Cluster) start(d daemon) error {
	if err := os.MkdirAll(c.cfg.path("logs"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(c.cfg.path("run"), 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(c.LogFile(d.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(d.args[0], d.args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Dir = c.cfg.StateDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", d.name, err)
	}
	// Reap the child if it exits while this process lives (the e2e provider case).
	go func() { _ = cmd.Wait() }()
	c.logf("started %s (pid %d, log %s)", d.name, cmd.Process.Pid, c.LogFile(d.name))
	return os.WriteFile(c.pidFile(d.name), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

// running returns the PID of a daemon that is alive.
func (c *Cluster) running(name string) (int, bool) {
	b, err := os.ReadFile(c.pidFile(name))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return 0, false
	}
	// A zombie or a recycled PID of another program is not our daemon.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || strings.Contains(string(stat), ") Z ") {
		return 0, false
	}
	return pid, true
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs the daemon's process group.
func (c *Cluster) stop(name string, grace time.Duration) {
	pid, ok := c.running(name)
	if !ok {
		_ = os.Remove(c.pidFile(name))
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if _, ok := c.running(name); !ok {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, ok := c.running(name); ok {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = os.Remove(c.pidFile(name))
	c.logf("stopped %s", name)
}

// waitFor polls cond until it succeeds, the daemon dies, or the timeout passes.
func (c *Cluster) waitFor(ctx context.Context, daemonName, what string, timeout time.Duration, cond func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = cond(ctx); last == nil {
			return nil
		}
		if daemonName != "" {
			if _, ok := c.running(daemonName); !ok {
				return fmt.Errorf("%s exited while waiting for %s; see %s: %w", daemonName, what, c.LogFile(daemonName), errDaemonExited)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s waiting for %s: %v", timeout, what, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// errDaemonExited marks waitFor's error when the daemon it watched is gone.
var errDaemonExited = errors.New("the daemon exited")

// waitRestarting is waitFor for a daemon a service manager would restart (the kubelet runs under
// systemd's Restart=always on a real node): when d exits before cond holds, it is started again,
// at most restarts times, each exit logged with where its output is. A kubelet of v1.35.4 can
// die of a data race in its first second ("concurrent map read and map write" in
// GetCapacity); one such crash must not fail a run.
func (c *Cluster) waitRestarting(ctx context.Context, d daemon, what string, timeout time.Duration, restarts int, cond func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := c.waitFor(ctx, d.name, what, timeout, cond)
		if err == nil || !errors.Is(err, errDaemonExited) || attempt == restarts {
			return err
		}
		c.logf("%s exited before %s (see %s); starting it again, as its service manager would (restart %d of %d)", d.name, what, c.LogFile(d.name), attempt+1, restarts)
		if err := c.start(d); err != nil {
			return err
		}
	}
}

// portFree fails with a clear message when a TCP port the cluster needs is taken.
func portFree(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		owner := portOwner(port)
		return fmt.Errorf("port %d is taken%s: stop what listens there, or run `make cluster-down` if it is a previous local cluster", port, owner)
	}
	return l.Close()
}

// portOwner names the process listening on a port, from /proc, when it can.
func portOwner(port int) string {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 || fields[3] != "0A" {
				continue
			}
			if i := strings.LastIndex(fields[1], ":"); i >= 0 {
				if p, err := strconv.ParseInt(fields[1][i+1:], 16, 32); err == nil && int(p) == port {
					inodes["socket:["+fields[9]+"]"] = true
				}
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		if target, err := os.Readlink(fd); err == nil && inodes[target] {
			pid := strings.Split(fd, "/")[2]
			comm, _ := os.ReadFile("/proc/" + pid + "/comm")
			return fmt.Sprintf(" by %s (pid %s)", strings.TrimSpace(string(comm)), pid)
		}
	}
	return ""
}

// run executes a command and returns its combined output in the error.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

var errNotRoot = errors.New("the local cluster runs kubelet, containerd and iptables: run it as root")
