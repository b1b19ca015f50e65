package framework

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// track records namespace ns as the run's.
func (s *Suite) track(ns string) {
	s.nsMu.Lock()
	defer s.nsMu.Unlock()
	if !slices.Contains(s.namespaces, ns) {
		s.namespaces = append(s.namespaces, ns)
	}
}

// forget records that the run deleted namespace ns.
func (s *Suite) forget(ns string) {
	s.nsMu.Lock()
	defer s.nsMu.Unlock()
	s.namespaces = slices.DeleteFunc(s.namespaces, func(n string) bool { return n == ns })
}

// deleteNamespace deletes namespace ns without waiting for it to go, and forgets it once the
// API server took the deletion (or it was gone already).
func (s *Suite) deleteNamespace(ctx context.Context, ns string) {
	if err := s.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err == nil || apierrors.IsNotFound(err) {
		s.forget(ns)
	}
}

// Interrupted is the exit code of a run stopped by SIGTERM or SIGINT.
const Interrupted = 130

// cleanUpOnSignal deletes, when the process is told to stop (the Job replaced or deleted,
// which sends SIGTERM and gives the pod 30 s; ^C), the namespaces the run created, so that no
// scenario's cluster and workload keep running, and loading the cluster, after the suite is
// gone; then it exits with Interrupted. Without it, a replaced Job left them behind.
func (s *Suite) cleanUpOnSignal() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		got := <-sig
		s.nsMu.Lock()
		names := slices.Clone(s.namespaces)
		s.nsMu.Unlock()
		fmt.Fprintf(os.Stderr, "%s: deleting the namespaces this run created (%d) before exiting\n", got, len(names))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for _, ns := range names {
			err := s.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			switch {
			case err == nil || apierrors.IsNotFound(err):
				fmt.Fprintf(os.Stderr, "  deleted namespace %s\n", ns)
			default:
				fmt.Fprintf(os.Stderr, "  namespace %s: %v (delete it yourself: kubectl delete namespace %s)\n", ns, err, ns)
			}
		}
		os.Exit(Interrupted)
	}()
}
