package launcher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

// Options of the launch command.
type Options struct {
	Volume
	Host       string // the member's DNS name, waited for before etcd starts
	TLSDir     string // server certificate directory; empty for plaintext
	PeerTLSDir string // peer certificate directory; empty for plaintext
	// RequirePeers are peer URLs a joining member must reach before etcd starts (the external
	// members of spec.bootstrap.join); they are checked only before the member's first start.
	RequirePeers []string
	// RequirePeersFor bounds how long the launcher waits for RequirePeers to answer.
	RequirePeersFor    time.Duration
	TerminationLogPath string
	// PodAnnotationsPath is the pod's annotations file (downward API).
	PodAnnotationsPath string
	// ForceToken is the recovery token of a pod that starts etcd with --force-new-cluster.
	ForceToken string
	// StopDelay is how long etcd keeps serving after the pod is told to stop, while its
	// endpoint leaves the client Service (stopSequence).
	StopDelay time.Duration
	// FencePoll is how often the pod's annotations are read for a fence (fence.go); a second
	// when zero.
	FencePoll time.Duration
	// HealthAddress is where the launcher answers the pod's probes while fenced; the metrics
	// port when empty.
	HealthAddress string
	Command       []string // etcd and its flags
}

// flagForceNewCluster is etcd's flag that makes a member the single member of its cluster.
const flagForceNewCluster = "--force-new-cluster"

// forceOnce drops --force-new-cluster from the command of a member that was already forced for
// this recovery (its marker records the token): a container restart of the survivor's pod must
// not make a one-member cluster again beside the members that have rejoined since. It says
// whether etcd still starts forced.
func (o Options) forceOnce(marker *Marker, logger *log.Logger) (Options, bool) {
	if !slices.Contains(o.Command, flagForceNewCluster) {
		return o, false
	}
	if o.ForceToken == "" || marker == nil || marker.ForcedToken != o.ForceToken || mutant.On("keep-force-new-cluster") {
		return o, true
	}
	logger.Printf("member %s was forced for recovery %q before: starting it without %s", o.Member, o.ForceToken, flagForceNewCluster)
	o.Command = slices.DeleteFunc(slices.Clone(o.Command), func(a string) bool { return a == flagForceNewCluster })
	return o, false
}

func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

func (o Options) tlsConfig() (*tls.Config, error) {
	if o.TLSDir == "" {
		return nil, nil
	}
	return pki.DirClientTLS(o.TLSDir, o.Host)
}

// Launch checks the volume, starts etcd, records the marker, and returns etcd's exit code.
func Launch(ctx context.Context, o Options, logw io.Writer) int {
	logger := log.New(logw, "quorate-launcher: ", log.LstdFlags)
	refuse := func(err error) int { return refuseLaunch(o.TerminationLogPath, logger, err) }
	ann, err := ReadPodAnnotations(o.PodAnnotationsPath)
	if err != nil {
		logger.Printf("reading the pod's annotations: %v; checking the volume with the flags alone", err)
	}
	o.Volume = o.FromAnnotations(ann)
	marker, err := o.Check()
	if err != nil {
		return refuse(err)
	}
	if err := CheckFreeSpace(o.DataDir); err != nil {
		return refuse(err)
	}
	tlsCfg, err := o.tlsConfig()
	if err != nil {
		logger.Printf("cannot build a client TLS config from %s (%v): the marker will not be written", o.TLSDir, err)
	}

	// A container that starts (or restarts) while its member is fenced stays fenced.
	if stop := holdWhileFenced(ctx, o, logger); stop {
		return 0
	}

	waitForDNS(ctx, o.Host, 60*time.Second, logger)

	if err := checkFirstStart(ctx, o, marker, tlsCfg, logger); err != nil {
		return refuse(err)
	}
	return superviseEtcd(ctx, o, marker, tlsCfg, logger, refuse)
}

// startEtcd runs etcd once (runEtcd), forced for a recovery unless this member was forced for
// it before; fence stops it as a fence does. It returns etcd's exit code and whether it was
// stopped for a fence.
func startEtcd(ctx context.Context, o Options, marker *Marker, tlsCfg *tls.Config, logger *log.Logger, refuse func(error) int, fence <-chan struct{}) (int, bool) {
	o, forcing := o.forceOnce(marker, logger)
	if forcing && o.ForceToken != "" && marker != nil && (tlsCfg != nil || o.TLSDir == "") {
		return runEtcd(ctx, o, marker, tlsCfg, logger, refuse, func(ctx context.Context) error {
			return recordForced(ctx, o, *marker, tlsCfg, logger)
		}, fence)
	}
	return runEtcd(ctx, o, marker, tlsCfg, logger, refuse, nil, fence)
}

// refuseLaunch logs err, writes the termination message (a Refusal's, which the operator acts
// on, or err's message as it is) and returns the launcher's exit code for a refusal.
func refuseLaunch(terminationLogPath string, logger *log.Logger, err error) int {
	logger.Print(err)
	var r *Refusal
	if !errors.As(err, &r) {
		// Not a refusal the operator acts on (etcd could not be started at all): the
		// message is shown as it is.
		if werr := writeTerminationLog(terminationLogPath, err.Error()); werr != nil {
			logger.Printf("writing the termination message: %v", werr)
		}
		return 2
	}
	if werr := WriteTerminationMessage(terminationLogPath, r); werr != nil {
		logger.Printf("writing the termination message: %v", werr)
	}
	return 2
}

// checkFirstStart runs the checks of a member's first start (no data and no marker), in this
// order: a new cluster's member must not have been bootstrapped before, and a joining member
// must reach the required peers. A non-nil error is a refusal.
func checkFirstStart(ctx context.Context, o Options, marker *Marker, tlsCfg *tls.Config, logger *log.Logger) error {
	if flagValue(o.Command, "initial-cluster-state") == "new" && !HasData(o.DataDir) && marker == nil {
		peers := PeerClientURLs(flagValue(o.Command, "initial-cluster"), o.Member)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := CheckNotBootstrappedBefore(cctx, etcd.NewClient, tlsCfg, o.Member, peers)
		cancel()
		if err != nil {
			return err
		}
	}

	if len(o.RequirePeers) > 0 && !HasData(o.DataDir) && marker == nil {
		tlsFor, err := PeerTLS(o.PeerTLSDir)
		if err != nil {
			return fmt.Errorf("reading the peer certificate from %s: %w", o.PeerTLSDir, err)
		}
		if err := CheckPeersReachable(ctx, o.RequirePeers, tlsFor, o.RequirePeersFor, 2*time.Second); err != nil {
			return err
		}
		logger.Printf("every required peer answered: %s", strings.Join(o.RequirePeers, ", "))
	}
	return nil
}

// runEtcd starts etcd, forwards the signals that stop the pod to it, records the marker on a
// member's first start, and returns etcd's exit code (or refuse's, when etcd could not be
// started or turned out to belong to another cluster). When fence closes, leadership is
// handed over and etcd is stopped; the second result says etcd stopped for that (and not
// also because the pod was told to stop).
func runEtcd(ctx context.Context, o Options, marker *Marker, tlsCfg *tls.Config, logger *log.Logger, refuse func(error) int, alsoRecord func(context.Context) error, fence <-chan struct{}) (int, bool) {
	// The launcher exists to start etcd with the flags the operator put after --.
	cmd := exec.Command(o.Command[0], o.Command[1:]...) //nolint:gosec // see above
	watch := &startCheckWatch{}
	cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stdout, watch), io.MultiWriter(os.Stderr, watch)
	if err := cmd.Start(); err != nil {
		return refuse(fmt.Errorf("starting %s: %w", o.Command[0], err)), false
	}
	signalled, stopSignals := forwardSignals(ctx, cmd, o, tlsCfg, logger)
	exited := make(chan struct{})
	var fenced atomic.Bool
	go func() {
		select {
		case <-fence:
			fenced.Store(true)
			stopForFence(ctx, o, tlsCfg, logger, func(s os.Signal) { _ = cmd.Process.Signal(s) })
		case <-exited:
		}
	}()
	mctx, stopMarker := context.WithCancel(ctx)
	mismatch := make(chan error, 1)
	if tlsCfg != nil || o.TLSDir == "" {
		check := recordMarker
		if marker != nil {
			check = func(ctx context.Context, o Options, tlsCfg *tls.Config, _ *log.Logger) error {
				return verifyServing(ctx, o, marker, tlsCfg)
			}
		}
		go func() {
			if err := check(mctx, o, tlsCfg, logger); err != nil {
				mismatch <- err
				_ = cmd.Process.Signal(syscall.SIGTERM)
			}
		}()
	}
	if alsoRecord != nil {
		go func() { _ = alsoRecord(mctx) }()
	}
	err := cmd.Wait()
	close(exited)
	stopMarker()
	stopSignals()
	stoppedForFence := fenced.Load() && !signalled.Load()
	select {
	case m := <-mismatch:
		return refuse(m), false
	default:
	}
	if r := watch.refusal(); r != nil && err != nil {
		return refuse(r), false
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), stoppedForFence
	}
	if err != nil {
		return refuse(err), false
	}
	return 0, stoppedForFence
}

// handOverFunc is the leadership hand-over before etcd stops; nothing when the client TLS
// config could not be built.
func handOverFunc(ctx context.Context, o Options, tlsCfg *tls.Config, logger *log.Logger) func() {
	if tlsCfg == nil && o.TLSDir != "" {
		return func() {}
	}
	return func() {
		hctx, cancel := context.WithTimeout(ctx, handOverTimeout)
		defer cancel()
		HandOver(hctx, etcd.NewClient, o.Member, tlsCfg, logger)
	}
}

// forwardSignals passes SIGTERM and SIGINT on to etcd, after the stop sequence (stopSequence)
// for the first one. signalled says whether a signal came; stop ends the forwarding once etcd
// has exited.
func forwardSignals(ctx context.Context, cmd *exec.Cmd, o Options, tlsCfg *tls.Config, logger *log.Logger) (signalled *atomic.Bool, stop func()) {
	sigs := make(chan os.Signal, 2)
	got := make(chan os.Signal, 2)
	signalled = &atomic.Bool{}
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		defer close(got)
		for {
			select {
			case s := <-sigs:
				signalled.Store(true)
				select {
				case got <- s:
				case <-done:
					return
				}
			case <-done:
				return
			}
		}
	}()
	go stopSequence(ctx, got, o.StopDelay, handOverFunc(ctx, o, tlsCfg, logger), func(s os.Signal) { _ = cmd.Process.Signal(s) }, logger)
	return signalled, func() {
		signal.Stop(sigs)
		close(done)
	}
}

// stopSequence is what happens between the first stop signal and etcd's stop. Whoever stops
// the pod (kubectl delete, a drain, an eviction, the operator), leadership leaves first, while
// etcd still serves (etcd's own hand-over at shutdown can drop the proposal in flight), so
// that even a grace period shorter than the delay below stops a follower. Then etcd keeps
// serving for delay: the pod's endpoint leaves the Services as it starts terminating, but
// kube-proxy drops it from the Service's address a moment later, and a client that knows only
// the Service and connects meanwhile must reach a member that answers rather than one that is
// gone. Leadership is handed over again if the member was elected meanwhile, and etcd is told
// to stop. A second signal ends the delay early; it and every later signal are passed on after
// the first.
func stopSequence(ctx context.Context, sigs <-chan os.Signal, delay time.Duration, handOver func(), forward func(os.Signal), logger *log.Logger) {
	first, ok := <-sigs
	if !ok {
		return
	}
	handOver()
	var again []os.Signal
	if delay > 0 {
		logger.Printf("stopping in %s: etcd serves while its endpoint leaves the client Service", delay)
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case s, ok := <-sigs:
			if !ok { // no more signals will come: the delay runs out
				<-timer.C
				break
			}
			timer.Stop()
			logger.Printf("%s during the stop delay: stopping etcd now", s)
			again = append(again, s)
		case <-ctx.Done():
			timer.Stop()
		}
		handOver()
	}
	forward(first)
	for _, s := range again {
		forward(s)
	}
	for s := range sigs {
		forward(s)
	}
}

// handOverTimeout bounds the leadership hand-over before etcd is stopped; the pod's grace
// period (30s) leaves etcd the rest.
const handOverTimeout = 10 * time.Second

// HandOver moves leadership from the local member, if it leads, to another voter that has
// started, and returns once the local member no longer leads (or it gave up). A member that
// does not lead has nothing to hand over.
func HandOver(ctx context.Context, factory etcd.Factory, member string, tlsCfg *tls.Config, logger *log.Logger) {
	self := etcd.Endpoint{Member: member, Address: net.JoinHostPort("127.0.0.1", fmt.Sprint(names.ClientPort))}
	c, err := factory(ctx, etcd.Config{Endpoints: []etcd.Endpoint{self}, TLS: tlsCfg, Timeout: 2 * time.Second})
	if err != nil {
		logger.Printf("hand-over: %v", err)
		return
	}
	defer c.Close()
	st, err := c.Status(ctx, self)
	if err != nil || st.Leader != st.MemberID {
		return
	}
	_, members, err := c.MemberList(ctx)
	if err != nil {
		logger.Printf("hand-over: listing members: %v", err)
		return
	}
	for _, m := range members {
		if m.ID == st.MemberID || m.IsLearner || !m.Started() {
			continue
		}
		start := time.Now()
		if err := c.MoveLeader(ctx, self, m.ID); err != nil {
			logger.Printf("hand-over to %s (%x) failed: %v", m.Name, m.ID, err)
			continue
		}
		// Wait until the local member knows it no longer leads: requests it was serving as the
		// leader have been handed on.
		for ctx.Err() == nil {
			if now, err := c.Status(ctx, self); err == nil && now.Leader != st.MemberID {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		logger.Printf("stopping: handed leadership to %s (%x) in %s", m.Name, m.ID, time.Since(start).Round(time.Millisecond))
		return
	}
	logger.Printf("stopping as the leader: no other voter took leadership")
}

func waitForDNS(ctx context.Context, host string, limit time.Duration, logger *log.Logger) {
	if host == "" {
		return
	}
	deadline := time.Now().Add(limit)
	for {
		if _, err := net.DefaultResolver.LookupHost(ctx, host); err == nil {
			return
		} else if time.Now().After(deadline) {
			logger.Printf("%s does not resolve after %s (%v); starting etcd anyway", host, limit, err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// recordMarker waits until the local member answers, then writes the marker. It returns an
// error only when the member turns out to belong to another cluster than expected.
func recordMarker(ctx context.Context, o Options, tlsCfg *tls.Config, logger *log.Logger) error {
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(names.ClientPort))
	for {
		c, err := etcd.NewClient(ctx, etcd.Config{Endpoints: []etcd.Endpoint{{Member: o.Member, Address: addr}}, TLS: tlsCfg, Timeout: 3 * time.Second})
		if err == nil {
			st, err := c.Status(ctx, etcd.Endpoint{Member: o.Member, Address: addr})
			c.Close()
			if err == nil && st.ClusterID != 0 {
				cid := names.FormatID(st.ClusterID)
				if o.ExpectedClusterID != "" && cid != o.ExpectedClusterID {
					return &Refusal{Kind: RefusalClusterIDMismatch, Message: fmt.Sprintf("etcd started as a member of cluster %s, not of cluster %s", cid, o.ExpectedClusterID)}
				}
				m := Marker{ClusterID: cid, MemberID: names.FormatID(st.MemberID), Member: o.Member, Written: time.Now().UTC()}
				if err := WriteMarker(o.MarkerPath, m); err != nil {
					logger.Printf("writing marker %s: %v", o.MarkerPath, err)
				} else {
					logger.Printf("recorded member %s of cluster %s in %s", m.MemberID, m.ClusterID, o.MarkerPath)
				}
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
}

// recordForced records the recovery token in the marker once the forced member leads a
// cluster of itself alone: etcd has then rewritten its membership, and a later start must not
// force again (forceOnce).
func recordForced(ctx context.Context, o Options, marker Marker, tlsCfg *tls.Config, logger *log.Logger) error {
	self := etcd.Endpoint{Member: o.Member, Address: net.JoinHostPort("127.0.0.1", fmt.Sprint(names.ClientPort))}
	for {
		if c, err := etcd.NewClient(ctx, etcd.Config{Endpoints: []etcd.Endpoint{self}, TLS: tlsCfg, Timeout: 3 * time.Second}); err == nil {
			st, serr := c.Status(ctx, self)
			_, members, lerr := c.MemberList(ctx)
			c.Close()
			if serr == nil && lerr == nil && st.Leader == st.MemberID && len(members) == 1 && members[0].ID == st.MemberID {
				marker.ForcedToken = o.ForceToken
				if err := WriteMarker(o.MarkerPath, marker); err != nil {
					logger.Printf("recording the forced recovery %q in %s: %v", o.ForceToken, o.MarkerPath, err)
					return err
				}
				logger.Printf("member %s leads alone after the forced recovery %q: recorded in %s, a restart will not force again", o.Member, o.ForceToken, o.MarkerPath)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// Install copies the running executable to dest (the init container puts the launcher into a
// volume shared with the etcd container, so any etcd image works).
func Install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self) //nolint:gosec // the running executable
	if err != nil {
		return err
	}
	defer in.Close()
	// The etcd container runs the launcher from this shared volume as another user.
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil { //nolint:gosec // see above
		return err
	}
	out, err := os.OpenFile(dest+".tmp", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755) //nolint:gosec // see above
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(dest+".tmp", dest)
}
