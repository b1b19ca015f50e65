package launcher

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/internal/names"
)

// fenceRig is a launcher in front of a fake etcd: a shell loop that records its starts and
// stops in a file, stops on SIGTERM, and exits 7 once told to quit.
type fenceRig struct {
	t           *testing.T
	dir         string
	annotations string
	events      string
	quit        string
	addr        string
	o           Options
}

func newFenceRig(t *testing.T, fenced bool) *fenceRig {
	t.Helper()
	dir := t.TempDir()
	r := &fenceRig{t: t, dir: dir, annotations: filepath.Join(dir, "annotations"), events: filepath.Join(dir, "events"), quit: filepath.Join(dir, "quit"), addr: freeAddress(t)}
	r.setFence(fenced)
	script := fmt.Sprintf(`echo start >> %[1]s; trap 'echo stop >> %[1]s; exit 0' TERM; while [ ! -e %[2]s ]; do sleep 0.02; done; exit 7`, r.events, r.quit)
	r.o = Options{Volume: volume(t, true, nil), TerminationLogPath: filepath.Join(dir, "termination-log"), PodAnnotationsPath: r.annotations,
		TLSDir: "/nonexistent", FencePoll: 10 * time.Millisecond, HealthAddress: r.addr, Command: []string{"/bin/sh", "-c", script}}
	return r
}

func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// setFence writes the annotations file as the kubelet would, with or without the stop.
func (r *fenceRig) setFence(fenced bool) {
	content := "etcd.quorate.dev/require-data=\"true\"\n"
	if fenced {
		content += names.AnnotationStopEtcd + "=\"true\"\n"
	}
	tmp := r.annotations + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(tmp, r.annotations); err != nil {
		r.t.Fatal(err)
	}
}

func (r *fenceRig) eventLog() string {
	b, _ := os.ReadFile(r.events)
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", ",")
}

// probe returns the launcher's answer on path: its status code, or 0 when nothing listens.
func (r *fenceRig) probe(path string) (int, string) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + r.addr + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// eventually waits until cond holds, failing with what after 20 seconds.
func (r *fenceRig) eventually(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s (etcd's events: %q)", what, r.eventLog())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *fenceRig) launch(ctx context.Context) (<-chan int, *syncBuffer) {
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- Launch(ctx, r.o, logs) }()
	return done, logs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A fence stops etcd while the launcher stays, alive and not ready on the probe port; the
// fence lifted, the port is etcd's again and etcd starts with the same flags; its own exit
// still ends the launcher with its code.
func TestFenceStopsAndRestartsEtcd(t *testing.T) {
	r := newFenceRig(t, false)
	done, logs := r.launch(context.Background())
	r.eventually("etcd's first start", func() bool { return r.eventLog() == "start" })
	if code, _ := r.probe("/livez"); code != 0 {
		t.Fatalf("the launcher answers the probes (%d) while etcd runs: etcd could not listen there", code)
	}

	r.setFence(true)
	r.eventually("etcd stopped and the probes answered by the launcher", func() bool {
		code, _ := r.probe("/readyz")
		return r.eventLog() == "start,stop" && code == http.StatusServiceUnavailable
	})
	if code, body := r.probe("/livez"); code != http.StatusOK || !strings.Contains(body, "fenced") {
		t.Errorf("/livez while fenced = %d %q, want 200 saying fenced", code, body)
	}
	if code, body := r.probe("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "fenced") {
		t.Errorf("/readyz while fenced = %d %q, want 503 saying fenced", code, body)
	}

	r.setFence(false)
	r.eventually("etcd started again and the launcher's listener closed", func() bool {
		code, _ := r.probe("/livez")
		return r.eventLog() == "start,stop,start" && code == 0
	})
	if err := os.WriteFile(r.quit, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 7 {
		t.Fatalf("exit code %d, want etcd's 7 (logs: %s)", code, logs.String())
	}
}

// A container that starts while its member is fenced (a restart, a pod recreated with the
// annotation) does not start etcd until the fence is lifted.
func TestFencedAtStartStaysFenced(t *testing.T) {
	r := newFenceRig(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, logs := r.launch(ctx)
	r.eventually("the launcher answering the probes", func() bool {
		code, _ := r.probe("/readyz")
		return code == http.StatusServiceUnavailable
	})
	if code, _ := r.probe("/livez"); code != http.StatusOK {
		t.Errorf("/livez = %d, want 200", code)
	}
	if ev := r.eventLog(); ev != "" {
		t.Fatalf("etcd ran while fenced: %q", ev)
	}
	r.setFence(false)
	r.eventually("etcd's start once unfenced", func() bool { return r.eventLog() == "start" })
	if err := os.WriteFile(r.quit, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 7 {
		t.Fatalf("exit code %d, want etcd's 7 (logs: %s)", code, logs.String())
	}
}

// The pod told to stop while fenced: the launcher exits at once, successfully.
func TestFencedLauncherExitsWhenStopped(t *testing.T) {
	r := newFenceRig(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	done, logs := r.launch(ctx)
	r.eventually("the launcher answering the probes", func() bool {
		code, _ := r.probe("/readyz")
		return code == http.StatusServiceUnavailable
	})
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit code %d, want 0 (logs: %s)", code, logs.String())
	}
	if code, _ := r.probe("/livez"); code != 0 {
		t.Errorf("the probe listener outlived the launcher: %d", code)
	}
	if ev := r.eventLog(); ev != "" {
		t.Fatalf("etcd ran while fenced: %q", ev)
	}
}

// The volume is checked again before etcd starts after a fence: a member whose data were moved
// aside while it was fenced is refused (DataLost), as at any container start, never started on
// an empty directory.
func TestUnfenceChecksTheVolumeAgain(t *testing.T) {
	r := newFenceRig(t, false)
	done, logs := r.launch(context.Background())
	r.eventually("etcd's first start", func() bool { return r.eventLog() == "start" })
	r.setFence(true)
	r.eventually("etcd stopped for the fence", func() bool { return r.eventLog() == "start,stop" })
	if err := os.RemoveAll(r.o.DataDir); err != nil {
		t.Fatal(err)
	}
	r.setFence(false)
	if code := <-done; code != 2 {
		t.Fatalf("exit code %d, want 2 for a refusal (logs: %s)", code, logs.String())
	}
	msg, _ := os.ReadFile(r.o.TerminationLogPath)
	if got := ParseTermination(string(msg)); got == nil || got.Kind != RefusalDataLost {
		t.Fatalf("termination message %q, want a DataLost refusal", msg)
	}
	if r.eventLog() != "start,stop" {
		t.Errorf("etcd started on the emptied volume: %q", r.eventLog())
	}
}
