package localcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Paused is one process that PauseContainers stopped: the process, and its start time
// (/proc/PID/stat field 22), so that a PID the kernel handed to another process since is
// never signalled.
type Paused struct {
	Pod   string
	PID   int
	Start uint64
}

// PauseContainers stops (SIGSTOP) every process of the running containers named container of
// the pods in namespace whose names are in pods, as a VM or a node that hangs does: their
// sockets stay open and nothing answers. The kubelet still sees the containers running; a
// pod deleted meanwhile is killed (SIGKILL ends a stopped process), and one the kubelet's
// liveness probe restarts comes back running. ResumeContainers undoes it for what is left.
func (n *Node) PauseContainers(ctx context.Context, namespace string, pods []string, container string) ([]Paused, error) {
	var out []Paused
	for _, node := range n.cfg.startedNodes() {
		p, err := pauseContainers(ctx, node.socket(), namespace, pods, container)
		out = append(out, p...)
		if err != nil {
			return out, fmt.Errorf("node %s: %w", node.name, err)
		}
	}
	return out, nil
}

// ResumeContainers continues (SIGCONT) the processes PauseContainers stopped that still
// exist, and returns them: a process that ended (its container killed) is left out.
func ResumeContainers(paused []Paused) ([]Paused, error) {
	var resumed []Paused
	var errs []error
	for _, p := range paused {
		if start, err := processStart(p.PID); err != nil || start != p.Start {
			continue
		}
		if err := syscall.Kill(p.PID, syscall.SIGCONT); err != nil {
			if !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("continuing process %d of %s: %w", p.PID, p.Pod, err))
			}
			continue
		}
		resumed = append(resumed, p)
	}
	return resumed, errors.Join(errs...)
}

func pauseContainers(ctx context.Context, socket, namespace string, pods []string, container string) ([]Paused, error) {
	rt, closeFn, err := criClient(socket)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	resp, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.pod.namespace": namespace,
			"io.kubernetes.container.name": container},
	}})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	var out []Paused
	for _, c := range resp.Containers {
		pod := c.Labels["io.kubernetes.pod.name"]
		if !slices.Contains(pods, pod) {
			continue
		}
		st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id, Verbose: true})
		if err != nil {
			return out, fmt.Errorf("the status of container %s of %s: %w", container, pod, err)
		}
		var info struct {
			PID int `json:"pid"`
		}
		if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil || info.PID <= 0 {
			return out, fmt.Errorf("container %s of %s: no process ID in its verbose status (%v)", container, pod, err)
		}
		pids, err := cgroupProcs(info.PID)
		if err != nil {
			return out, fmt.Errorf("container %s of %s: %w", container, pod, err)
		}
		for _, pid := range pids {
			start, err := processStart(pid)
			if err != nil {
				continue // ended meanwhile
			}
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				return out, fmt.Errorf("stopping process %d of %s: %w", pid, pod, err)
			}
			out = append(out, Paused{Pod: pod, PID: pid, Start: start})
		}
	}
	return out, nil
}

// cgroupProcs lists the processes in the cgroup of pid: the container's, in the pids
// hierarchy (cgroup v1) or the unified one (v2).
func cgroupProcs(pid int) ([]int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	dir := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case slices.Contains(strings.Split(parts[1], ","), "pids"):
			dir = filepath.Join("/sys/fs/cgroup/pids", parts[2])
		case parts[0] == "0" && dir == "":
			dir = filepath.Join("/sys/fs/cgroup", parts[2])
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/unified")); err == nil {
				dir = filepath.Join("/sys/fs/cgroup/unified", parts[2])
			}
		}
	}
	if dir == "" {
		return nil, fmt.Errorf("no pids or unified cgroup for process %d", pid)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, l := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(l); err == nil {
			pids = append(pids, p)
		}
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("cgroup %s lists no process", dir)
	}
	return pids, nil
}

// processStart is field 22 of /proc/PID/stat: when the process started, in clock ticks.
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command (field 2) is in parentheses and may hold spaces: count from its end.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command", pid, len(fields))
	}
	return strconv.ParseUint(fields[19], 10, 64)
}
