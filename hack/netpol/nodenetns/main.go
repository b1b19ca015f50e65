// Command nodenetns runs a command in the network namespace of the node its pod runs on, for
// the hostNetwork agent of hack/netpol.sh (kube-network-policies):
//
//	nodenetns [-ip ADDR] [-netns-dir DIR] -- COMMAND ARGS...
//
// On a real cluster a hostNetwork container is in its node's network namespace, and nodenetns
// only executes COMMAND. On the local cluster (e2e/localcluster) node 1 is the host's network
// namespace, but node i > 1 is a named namespace (/run/netns/quorate-<cluster>-n<i>) whose
// containerd runs in the host's namespace: a hostNetwork container of node i starts in the
// host's namespace, where it would program the host's netfilter for node 1's pods, not its
// own node's. nodenetns finds the namespace that holds the node's address (ADDR, default
// $NODE_IP, which the manifest fills from status.hostIP): the current one if it does, else the
// first namespace under DIR (default /run/netns, mounted from the host) that does; it enters
// it (setns, which needs CAP_SYS_ADMIN) and executes COMMAND there. It fails when no namespace
// holds the address, rather than run COMMAND in a namespace that is not the node's.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	ip := flag.String("ip", os.Getenv("NODE_IP"), "the node's address (default $NODE_IP)")
	dir := flag.String("netns-dir", "/run/netns", "where the host's named network namespaces are")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: nodenetns [-ip ADDR] [-netns-dir DIR] -- COMMAND ARGS...")
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	addr := net.ParseIP(*ip)
	if addr == nil {
		fail("no node address: set NODE_IP (status.hostIP) or -ip (got %q)", *ip)
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fail("%v", err)
	}

	// The namespace is a thread's: stay on this thread from the first setns to the exec, which
	// gives the new program this thread's namespace.
	runtime.LockOSThread()
	ok, err := holds(addr)
	if err != nil {
		fail("listing the addresses of the current network namespace: %v", err)
	}
	if ok {
		execute(path, args, "the current network namespace")
	}
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		fail("%v", err)
	}
	entries, err := os.ReadDir(*dir)
	if err != nil {
		fail("%s is not in the current network namespace, and the named ones are not readable: %v", addr, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(*dir, name)
		found, err := holdsIn(p, addr)
		// Back home after every look, so that a namespace that went away mid-way does not leave
		// the thread in a wrong one.
		if serr := setns(home); serr != nil {
			fail("returning to the original network namespace: %v", serr)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "nodenetns: skipping %s: %v\n", p, err)
			continue
		}
		if found {
			f, err := os.Open(p)
			if err != nil {
				fail("%v", err)
			}
			if err := setns(f); err != nil {
				fail("entering %s: %v", p, err)
			}
			execute(path, args, "the network namespace "+p)
		}
	}
	fail("no network namespace holds %s: neither the current one nor any under %s", addr, *dir)
}

// holdsIn enters the namespace at p and says whether an interface there has addr.
func holdsIn(p string, addr net.IP) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := setns(f); err != nil {
		return false, err
	}
	return holds(addr)
}

// holds says whether an interface of the thread's network namespace has addr (net asks the
// kernel over a netlink socket, which belongs to the namespace of the thread that opens it).
func holds(addr net.IP) (bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(addr) {
			return true, nil
		}
	}
	return false, nil
}

func setns(f *os.File) error { return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET) }

func execute(path string, args []string, where string) {
	fmt.Fprintf(os.Stderr, "nodenetns: running %s in %s\n", path, where)
	if err := syscall.Exec(path, args, os.Environ()); err != nil {
		fail("exec %s: %v", path, err)
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "nodenetns: "+format+"\n", a...)
	os.Exit(125)
}
