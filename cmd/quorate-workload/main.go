// Command quorate-workload is the conformance workload (see e2e/workload). It runs in a pod
// next to an EtcdCluster and is driven over HTTP by the conformance suite, usually through the
// API server's pod proxy:
//
//	POST /start    start the clients and the split-brain poller
//	POST /stop     stop the clients (waits for their last operations)
//	GET  /history  the recorded operations and poller samples (JSON history.History)
//	POST /final    read back every write the cluster applied (JSON history.Final)
//
// With several client profiles (--profiles=member-aware,service-only) it runs one load per
// profile, each under its own key prefix (<prefix><profile>/) with its own history, at the
// full --rate and --clients each; /start, /stop and /stats act on all of them, /history and
// /final answer for the one ?profile= names (the first without it), and /fill, /unfill and
// /probe use the first.
//
//	POST /fill     write filler values (?mib=N) until NOSPACE or N MiB
//	POST /unfill   delete the filler and compact up to the deletion (before the load starts)
//	POST /probe    write ?key=K outside the history and return etcd's error (an access check)
//	GET  /tls      when the mounted certificate files changed, and what they held (CA rotation)
//	GET  /stats    counts so far, for progress lines
//	GET  /healthz
//
// quorate-workload --fsync-probe-dir=DIR runs instead internal/diskcheck's disk check on DIR's
// volume, prints its result line and writes it to the termination message: the suite's probe
// pod, for the report's environment. (A flag, not a
// word: a workload binary older than the probe refuses it at once instead of serving.)
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quorate-dev/quorate/e2e/workload"
	"github.com/quorate-dev/quorate/e2e/workloadapi"
	"github.com/quorate-dev/quorate/internal/pki"
)

// flags are the command's flags.
type flags struct {
	endpoints, tlsDir, serverName, peerService, mix, prefix, listen string
	profiles, serviceEndpoint                                       string
	clients, keys, port, watchers                                   int
	rate                                                            float64
	openLoop                                                        bool
	opTimeout, pollInterval, watchRestart                           time.Duration
}

func main() {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "--"+fsyncProbeFlag) {
		os.Exit(fsyncProbe(os.Args[1:]))
	}
	f := parseFlags()
	cfgs, err := f.configs(time.Now().UnixNano())
	if err != nil {
		log.Fatal(err)
	}
	seen := &tlsFiles{}
	var clientTLSConfig *tls.Config
	if f.tlsDir != "" {
		clientTLSConfig = clientTLS(f.tlsDir, f.serverName, cfgs[0].Endpoints[0])
		go seen.watch(f.tlsDir)
	}
	var rs runners
	for _, cfg := range cfgs {
		cfg.TLS = clientTLSConfig
		rs = append(rs, workload.New(cfg))
		log.Printf("client profile %s: endpoints %v, key prefix %s", cfg.Profile, cfg.Endpoints, cfg.Prefix)
	}
	poller := &workload.Poller{PeerService: f.peerService, Port: f.port, TLS: clientTLSConfig, Interval: f.pollInterval}
	pollCtx, stopPoll := context.WithCancel(context.Background())
	defer stopPoll()

	mux := routes(pollCtx, rs, poller, f.peerService, seen)
	log.Printf("quorate-workload listening on %s (%d clients, %.0f ops/s per client profile)", f.listen, f.clients, f.rate)
	srv := &http.Server{Addr: f.listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

func parseFlags() flags {
	var f flags
	flag.StringVar(&f.endpoints, "endpoints", "", "comma-separated client URLs, e.g. https://demo-client.ns.svc:2379")
	flag.StringVar(&f.profiles, "profiles", string(workload.DefaultProfile), "comma-separated client profiles, each a load of its own with its own history and keys: member-aware (learns the members' URLs, AutoSync), service-only (the client Service alone)")
	flag.StringVar(&f.serviceEndpoint, "service-endpoint", "", "client Service URL of the service-only profile (default: --endpoints when it names one URL)")
	flag.StringVar(&f.tlsDir, "tls-dir", "", "directory with tls.crt, tls.key and ca.crt of a client certificate (empty: plaintext)")
	flag.StringVar(&f.serverName, "server-name", "", "name the members' server certificate must carry (default: the endpoint host)")
	flag.StringVar(&f.peerService, "peer-service", "", "DNS name of the cluster's headless peer Service, for the split-brain poller")
	flag.IntVar(&f.port, "client-port", 2379, "members' client port")
	flag.IntVar(&f.clients, "clients", workload.DefaultClients, "concurrent clients, each with its own connection and (closed loop) one operation at a time")
	flag.Float64Var(&f.rate, "rate", workload.DefaultRate, "operations per second over all clients")
	flag.BoolVar(&f.openLoop, "open-loop", false, "issue operations on schedule whether or not earlier ones returned (each client connection then carries several at a time)")
	flag.IntVar(&f.keys, "keys", 8, "number of keys")
	flag.StringVar(&f.mix, "mix", "put=4,get=4,cas=2", "operation weights")
	flag.StringVar(&f.prefix, "prefix", "/quorate-conformance/", "key prefix")
	flag.DurationVar(&f.opTimeout, "op-timeout", workload.DefaultOpTimeout, "timeout of one operation")
	flag.DurationVar(&f.pollInterval, "poll-interval", 250*time.Millisecond, "split-brain poller interval (4 Hz or faster)")
	flag.StringVar(&f.listen, "listen", ":8080", "HTTP address")
	flag.IntVar(&f.watchers, "watchers", 2, "watchers that keep a watch open on the workload's keys and record every event")
	flag.DurationVar(&f.watchRestart, "watch-restart", 10*time.Second, "restart each watch this often, from the revision after its last event, as a client whose connection drops would")
	flag.Parse()
	return f
}

// configs are the loads' configurations from the flags, one per client profile in --profiles
// order (seeded from seed). With one profile its keys are under --prefix, as they always were;
// with several, each profile's under its own <prefix><profile>/.
func (f flags) configs(seed int64) ([]workload.Config, error) {
	profiles, err := workload.ParseProfiles(f.profiles)
	if err != nil {
		return nil, fmt.Errorf("--profiles: %w", err)
	}
	base := workload.Config{Endpoints: strings.Split(f.endpoints, ","), Clients: f.clients, Rate: f.rate, Keys: f.keys, Prefix: f.prefix, OpTimeout: f.opTimeout,
		Watchers: f.watchers, WatchRestart: f.watchRestart, OpenLoop: f.openLoop}
	if _, err := fmt.Sscanf(strings.NewReplacer("put=", "", "get=", "", "cas=", "").Replace(f.mix), "%d,%d,%d", &base.PutWeight, &base.GetWeight, &base.CASWeight); err != nil {
		return nil, fmt.Errorf("--mix %q: want put=N,get=N,cas=N", f.mix)
	}
	out := make([]workload.Config, len(profiles))
	for i, p := range profiles {
		cfg := base
		cfg.Endpoints = slices.Clone(base.Endpoints)
		cfg.Profile, cfg.Seed = p, seed+int64(i)<<32
		if len(profiles) > 1 {
			cfg.Prefix = p.Prefix(f.prefix)
		}
		if p == workload.ServiceOnly {
			switch {
			case f.serviceEndpoint != "":
				cfg.Endpoints = []string{f.serviceEndpoint}
			case len(cfg.Endpoints) != 1:
				return nil, fmt.Errorf("--profiles=%s: the service-only profile needs --service-endpoint (the client Service's URL) when --endpoints names %d URLs", f.profiles, len(cfg.Endpoints))
			}
		}
		out[i] = cfg
	}
	return out, nil
}

// runners are the loads, one per client profile; the first answers when no profile is named.
type runners []*workload.Runner

// find returns the runner of the profile named name ("": the first), or an HTTP status and
// error saying why there is none.
func (rs runners) find(name string) (*workload.Runner, int, error) {
	if name == "" {
		return rs[0], 0, nil
	}
	p, err := workload.ParseProfile(name)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	for _, r := range rs {
		if r.Profile() == p {
			return r, 0, nil
		}
	}
	return nil, http.StatusNotFound, fmt.Errorf("this workload runs no %s load (its --profiles: %s)", p, rs.profiles())
}

func (rs runners) profiles() string {
	ps := make([]workload.Profile, len(rs))
	for i, r := range rs {
		ps[i] = r.Profile()
	}
	return workload.FormatProfiles(ps)
}

// start starts every load at once, so that their histories cover the same time; when one
// cannot start, the others are stopped and the error names the profile.
func (rs runners) start() error {
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Start(); err != nil && len(rs) > 1 {
				errs[i] = fmt.Errorf("client profile %s: %w", r.Profile(), err)
			} else {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		rs.stop()
		return err
	}
	return nil
}

// stop stops every load and waits for each one's last operations.
func (rs runners) stop() {
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Stop()
		}()
	}
	wg.Wait()
}

// counts are the loads' counts so far: their sums, and each profile's when there are several.
func (rs runners) counts(samples int) workloadapi.Counts {
	c := workloadapi.Counts{Samples: samples}
	for _, r := range rs {
		ok, fail, unknown := r.Counts()
		c.OK, c.Fail, c.Unknown = c.OK+int(ok), c.Fail+int(fail), c.Unknown+int(unknown)
		if len(rs) > 1 {
			c.Profiles = append(c.Profiles, workloadapi.ProfileCounts{Profile: r.Profile(), OK: int(ok), Fail: int(fail), Unknown: int(unknown)})
		}
	}
	return c
}

// clientTLS is the clients' TLS configuration from the certificate files in tlsDir; the
// members' certificate must carry serverName, or without one the host of the first endpoint.
// Files it cannot read end the program.
func clientTLS(tlsDir, serverName, endpoint string) *tls.Config {
	name := serverName
	if name == "" {
		name = strings.Split(strings.TrimPrefix(strings.TrimPrefix(endpoint, "https://"), "http://"), ":")[0]
	}
	// The client certificate and the CA bundle are read at every handshake: a renewed
	// certificate or a rotated CA reaches new connections once the kubelet updates the
	// mounted Secret, as it must for any client of a cluster whose CA rotates.
	t, err := pki.FilesTLS(tlsDir, name, nil)
	if err != nil {
		log.Fatal(err)
	}
	return t
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// routes serves the workload's HTTP API (see the package comment); the split-brain poller
// starts, with pollCtx, at the first /start when there is a peerService.
func routes(pollCtx context.Context, rs runners, poller *workload.Poller, peerService string, seen *tlsFiles) *http.ServeMux {
	var pollOnce sync.Once
	runner := rs[0]
	// profile is the runner ?profile= names (the first without it); nil after it answered
	// the request with the reason there is none.
	profile := func(w http.ResponseWriter, r *http.Request) *workload.Runner {
		run, code, err := rs.find(r.URL.Query().Get(workloadapi.ProfileParam))
		if err != nil {
			http.Error(w, err.Error(), code)
		}
		return run
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("POST /start", func(w http.ResponseWriter, _ *http.Request) {
		if err := rs.start(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if peerService != "" {
			pollOnce.Do(func() { go poller.Run(pollCtx) })
		}
		fmt.Fprintln(w, "started")
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, _ *http.Request) {
		rs.stop()
		fmt.Fprintln(w, "stopped")
	})
	mux.HandleFunc("GET /history", func(w http.ResponseWriter, r *http.Request) {
		run := profile(w, r)
		if run == nil {
			return
		}
		h := run.History()
		h.Samples = poller.Samples()
		if len(rs) > 1 {
			h.Profile = string(run.Profile())
		}
		reply(w, h)
	})
	mux.HandleFunc("POST /final", func(w http.ResponseWriter, r *http.Request) {
		run := profile(w, r)
		if run == nil {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
		defer cancel()
		reply(w, run.Final(ctx))
	})
	mux.HandleFunc("POST /fill", func(w http.ResponseWriter, r *http.Request) {
		mib, err := strconv.Atoi(r.URL.Query().Get("mib"))
		if err != nil || mib <= 0 {
			http.Error(w, "fill?mib=N: how many MiB to write at most", http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
		defer cancel()
		reply(w, runner.Fill(ctx, 512<<10, int64(mib)<<20))
	})
	mux.HandleFunc("POST /unfill", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
		defer cancel()
		reply(w, runner.Unfill(ctx))
	})
	mux.HandleFunc("POST /probe", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		reply(w, map[string]string{"error": runner.Probe(ctx, r.URL.Query().Get("key"))})
	})
	leaseRoutes(mux, runner)
	mux.HandleFunc("GET /tls", func(w http.ResponseWriter, _ *http.Request) { reply(w, seen.changes()) })
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, rs.counts(len(poller.Samples())))
	})
	return mux
}

// maxLeaseKeys is the most keys POST /lease puts on one lease.
const maxLeaseKeys = 10000

// leaseRoutes serves Lease and Revoke, on the first profile's runner.
func leaseRoutes(mux *http.ServeMux, runner *workload.Runner) {
	mux.HandleFunc("POST /lease", func(w http.ResponseWriter, r *http.Request) {
		ttl, err := strconv.ParseInt(r.URL.Query().Get("ttl"), 10, 64)
		n, nerr := strconv.Atoi(r.URL.Query().Get("keys"))
		if err != nil || ttl <= 0 || nerr != nil || n < 0 || n > maxLeaseKeys {
			http.Error(w, fmt.Sprintf("lease?ttl=S&keys=N: the lease's TTL in seconds, and how many keys to put on it (at most %d)", maxLeaseKeys), http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
		defer cancel()
		reply(w, runner.Lease(ctx, ttl, n))
	})
	mux.HandleFunc("POST /revoke", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 64)
		if err != nil {
			http.Error(w, "revoke?id=ID: the lease to revoke", http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		reply(w, runner.Revoke(ctx, id))
	})
}

// tlsFiles records when the mounted certificate files change (the kubelet projecting an
// updated Secret), looking every 200 ms.
type tlsFiles struct {
	mu   sync.Mutex
	seen []tlsChange
}

// tlsChange is one state of the files: when it was first seen, the subjects of the CAs in
// ca.crt, and the client certificate's issuer and serial.
type tlsChange struct {
	Time   int64    `json:"time"`
	CAs    []string `json:"cas"`
	Issuer string   `json:"issuer"`
	Serial string   `json:"serial"`
}

func (t *tlsFiles) watch(dir string) {
	var last string
	for {
		ca, err1 := os.ReadFile(filepath.Join(dir, "ca.crt"))
		crt, err2 := os.ReadFile(filepath.Join(dir, "tls.crt"))
		if err1 == nil && err2 == nil && string(ca)+string(crt) != last {
			last = string(ca) + string(crt)
			c := tlsChange{Time: time.Now().UnixNano()}
			for rest := ca; ; {
				var b *pem.Block
				if b, rest = pem.Decode(rest); b == nil {
					break
				}
				if x, err := x509.ParseCertificate(b.Bytes); err == nil {
					c.CAs = append(c.CAs, fmt.Sprintf("%s/%x", x.Subject.CommonName, x.SerialNumber))
				}
			}
			if x, err := pki.ParseCert(crt); err == nil {
				c.Issuer, c.Serial = x.Issuer.CommonName, fmt.Sprintf("%x", x.SerialNumber)
			}
			t.mu.Lock()
			t.seen = append(t.seen, c)
			t.mu.Unlock()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (t *tlsFiles) changes() []tlsChange {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]tlsChange(nil), t.seen...)
}
