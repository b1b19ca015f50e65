// Command nsexec is a stand-in for Chaos Mesh's nsexec (a Rust helper released outside the Go
// module proxy and Debian) with the same command line, executed by util-linux nsenter:
//
//	nsexec [-l] [-m MNT] [-n NET] [-p PID] [-i IPC] -- COMMAND ARGS...
//
// chaos-daemon runs every command it executes inside a target's namespaces through it:
// iptables, ipset, tc and ip in the network namespace for NetworkChaos, stress-ng in the PID
// namespace for StressChaos. -l (run a binary of the daemon's own filesystem inside the
// target's mount namespace) has no nsenter equivalent: with -l the mount namespace is not
// entered, which is right for the network and stress faults and wrong for IOChaos, HTTPChaos and
// BlockChaos, which are out of scope here (docs/chaos.md).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	args := os.Args[1:]
	var ns []string
	local := false
	for len(args) > 0 {
		switch a := args[0]; a {
		case "-l":
			local = true
			args = args[1:]
			continue
		case "--":
			args = args[1:]
			goto run
		case "-m", "-n", "-p", "-i":
			if len(args) < 2 {
				fail("%s needs a namespace path", a)
			}
			flag := map[string]string{"-m": "--mount=", "-n": "--net=", "-p": "--pid=", "-i": "--ipc="}[a]
			if a != "-m" || !local {
				ns = append(ns, flag+args[1])
			}
			args = args[2:]
		default:
			fail("unsupported argument %q (usage: nsexec [-l] [-m|-n|-p|-i PATH]... -- COMMAND ARGS...)", a)
		}
	}
run:
	if len(args) == 0 {
		fail("no command after --")
	}
	// -l after -m: drop an -m seen before -l.
	if local {
		kept := ns[:0]
		for _, o := range ns {
			if len(o) < 8 || o[:8] != "--mount=" {
				kept = append(kept, o)
			}
		}
		ns = kept
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		fail("nsenter not found: %v", err)
	}
	argv := append(append([]string{"nsenter"}, ns...), "--")
	argv = append(argv, args...)
	if err := syscall.Exec(nsenter, argv, os.Environ()); err != nil {
		fail("exec nsenter: %v", err)
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "nsexec: "+format+"\n", a...)
	os.Exit(125)
}
