package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// processState is field 3 of /proc/PID/stat: T for a stopped process.
func processState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

func TestCgroupProcsListsTheProcess(t *testing.T) {
	pids, err := cgroupProcs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, os.Getpid()) {
		t.Fatalf("the cgroup of process %d lists %d processes, not it", os.Getpid(), len(pids))
	}
}

// A paused process is resumed only while it is the process that was paused: once it has
// ended, ResumeContainers leaves it out.
func TestResumeContainers(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	start, err := processStart(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for processState(t, pid) != "T" {
		// SIGSTOP is delivered asynchronously.
		runtime.Gosched()
	}
	paused := []Paused{{Pod: "p", PID: pid, Start: start}}
	if got, err := ResumeContainers([]Paused{{Pod: "p", PID: pid, Start: start + 1}}); err != nil || len(got) != 0 {
		t.Fatalf("a process with another start time: resumed %v, %v; want none", got, err)
	}
	if st := processState(t, pid); st != "T" {
		t.Fatalf("state %s after resuming another process, want T", st)
	}
	got, err := ResumeContainers(paused)
	if err != nil || !slices.Equal(got, paused) {
		t.Fatalf("resumed %v, %v; want %v", got, err, paused)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got, err := ResumeContainers(paused); err != nil || len(got) != 0 {
		t.Fatalf("an ended process: resumed %v, %v; want none", got, err)
	}
}
