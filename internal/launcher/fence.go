package launcher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/quorate-dev/quorate/internal/names"
)

// A member is fenced at the user's request (the EtcdCluster's names.AnnotationFenceMembers):
// the operator puts names.AnnotationStopEtcd on its pod, which the launcher sees in the
// downward-API annotations file. It stops etcd as a pod's stop does (leadership leaves first)
// and stays alive without it, answering the pod's probes on the metrics port itself: /livez
// succeeds, so the kubelet does not restart the container, and /readyz fails, so no Service
// sends it clients. When the annotation goes away, it starts etcd again with the same flags.

// defaultFencePoll is how often the launcher reads the pod's annotations for a fence. The
// kubelet itself refreshes the file on its own sync, up to about a minute after the change.
const defaultFencePoll = time.Second

// Fenced reports whether the pod's annotations ask the launcher to stop etcd.
func Fenced(ann map[string]string) bool { return ann[names.AnnotationStopEtcd] == "true" }

func (o Options) fencePoll() time.Duration {
	if o.FencePoll > 0 {
		return o.FencePoll
	}
	return defaultFencePoll
}

func (o Options) healthAddress() string {
	if o.HealthAddress != "" {
		return o.HealthAddress
	}
	return fmt.Sprintf(":%d", names.MetricsPort)
}

// fencedNow reads the annotations file; an unreadable file is taken as no fence (it was
// written by the kubelet, and the previous reading stands until it reads again).
func (o Options) fencedNow() bool {
	if o.PodAnnotationsPath == "" {
		return false
	}
	ann, err := ReadPodAnnotations(o.PodAnnotationsPath)
	return err == nil && Fenced(ann)
}

// superviseEtcd runs etcd until it exits, stopping it while the member is fenced and starting
// it again, with the same flags, once unfenced. It returns etcd's exit code, or 0 when the pod
// was told to stop while fenced.
func superviseEtcd(ctx context.Context, o Options, marker *Marker, tlsCfg *tls.Config, logger *log.Logger, refuse func(error) int) int {
	for {
		fctx, stopWatch := context.WithCancel(ctx)
		fence := watchFence(fctx, o)
		code, fenced := startEtcd(ctx, o, marker, tlsCfg, logger, refuse, fence)
		stopWatch()
		if !fenced {
			return code
		}
		logger.Printf("etcd of member %s stopped for the fence (exit code %d)", o.Member, code)
		if stop := holdWhileFenced(ctx, o, logger); stop {
			return 0
		}
		// The volume is checked again, as at any container start: the member may have been
		// tampered with while fenced (its data moved aside, an old copy put back), and etcd
		// must not start on that (the marker, require-data, the cluster ID, free space).
		if ann, err := ReadPodAnnotations(o.PodAnnotationsPath); err == nil {
			o.Volume = o.FromAnnotations(ann)
		}
		m, err := o.Check()
		if err != nil {
			return refuse(err)
		}
		if err := CheckFreeSpace(o.DataDir); err != nil {
			return refuse(err)
		}
		marker = m
		logger.Printf("member %s unfenced: starting etcd again", o.Member)
	}
}

// watchFence returns a channel closed once the pod's annotations ask for a fence.
func watchFence(ctx context.Context, o Options) <-chan struct{} {
	fence := make(chan struct{})
	if o.PodAnnotationsPath == "" {
		return fence
	}
	go func() {
		t := time.NewTicker(o.fencePoll())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if o.fencedNow() {
					close(fence)
					return
				}
			}
		}
	}()
	return fence
}

// stopForFence is the stop sequence of a fence: leadership leaves, then etcd is told to stop.
// The pod is not terminating, so its endpoint stays until its readiness fails; there is no
// delay to wait out.
func stopForFence(ctx context.Context, o Options, tlsCfg *tls.Config, logger *log.Logger, forward func(os.Signal)) {
	logger.Printf("member %s is fenced (pod annotation %s): stopping etcd; the pod stays", o.Member, names.AnnotationStopEtcd)
	handOverFunc(ctx, o, tlsCfg, logger)()
	forward(syscall.SIGTERM)
}

// holdWhileFenced returns at once when the member is not fenced. Otherwise it answers the
// pod's probes (alive, not ready) until the fence is lifted (false) or the pod is told to
// stop (true).
func holdWhileFenced(ctx context.Context, o Options, logger *log.Logger) bool {
	if !o.fencedNow() {
		return false
	}
	logger.Printf("member %s is fenced (pod annotation %s): etcd is not running until the annotation goes away", o.Member, names.AnnotationStopEtcd)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	mux := http.NewServeMux()
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, "fenced: member %s is alive, its etcd is stopped\n", o.Member)
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "fenced: member %s's etcd is stopped (pod annotation %s)\n", o.Member, names.AnnotationStopEtcd)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	var ln net.Listener
	defer func() {
		if ln != nil {
			_ = srv.Close()
			<-served
		}
	}()
	t := time.NewTicker(o.fencePoll())
	defer t.Stop()
	for {
		if ln == nil {
			// etcd released the port when it exited; a moment may pass before it is free.
			l, err := net.Listen("tcp", o.healthAddress())
			if err == nil {
				ln = l
				go func() {
					defer close(served)
					if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
						logger.Printf("fenced: serving the probes: %v", err)
					}
				}()
			} else {
				logger.Printf("fenced: listening on %s for the probes: %v; trying again", o.healthAddress(), err)
			}
		}
		select {
		case s := <-sigs:
			logger.Printf("%s while fenced: exiting", s)
			return true
		case <-ctx.Done():
			return true
		case <-t.C:
			if !o.fencedNow() {
				return false
			}
		}
	}
}
