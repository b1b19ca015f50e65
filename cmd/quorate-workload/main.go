// Command quorate-workload is the conformance workload (see e2e/workload). It runs in a pod
// next to an EtcdCluster and is driven over HTTP by the conformance suite, usually through the
// API server's pod proxy:
//
//	POST /start    start the clients and the split-brain poller
//	POST /stop     stop the clients (waits for their last operations)
//	GET  /history  the recorded operations and poller samples (JSON history.History)
//	POST /final    read back every write the cluster applied (JSON history.Final)
//	POST /fill     write filler values (?mib=N) until NOSPACE or N MiB
//	POST /unfill   delete the filler and compact up to the deletion (before the load starts)
//	POST /probe    write ?key=K outside the history and return etcd's error (an access check)
//	GET  /tls      when the mounted certificate files changed, and what they held (CA rotation)
//	GET  /stats    counts so far, for progress lines
//	GET  /healthz
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quorate-dev/quorate/e2e/workload"
	"github.com/quorate-dev/quorate/internal/pki"
)

// flags are the command's flags.
type flags struct {
	endpoints, tlsDir, serverName, peerService, mix, prefix, listen string
	clients, keys, port, watchers                                   int
	rate                                                            float64
	openLoop                                                        bool
	opTimeout, pollInterval, watchRestart                           time.Duration
}

func main() {
	f := parseFlags()
	cfg := f.config()
	seen := &tlsFiles{}
	if f.tlsDir != "" {
		cfg.TLS = clientTLS(f.tlsDir, f.serverName, cfg.Endpoints[0])
		go seen.watch(f.tlsDir)
	}
	runner := workload.New(cfg)
	poller := &workload.Poller{PeerService: f.peerService, Port: f.port, TLS: cfg.TLS, Interval: f.pollInterval}
	pollCtx, stopPoll := context.WithCancel(context.Background())
	defer stopPoll()

	mux := routes(pollCtx, runner, poller, f.peerService, seen)
	log.Printf("quorate-workload listening on %s (endpoints %v, %d clients, %.0f ops/s)", f.listen, cfg.Endpoints, f.clients, f.rate)
	srv := &http.Server{Addr: f.listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

func parseFlags() flags {
	var f flags
	flag.StringVar(&f.endpoints, "endpoints", "", "comma-separated client URLs, e.g. https://demo-client.ns.svc:2379")
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

// config is the workload's configuration from the flags; a --mix it cannot read ends the
// program.
func (f flags) config() workload.Config {
	cfg := workload.Config{Endpoints: strings.Split(f.endpoints, ","), Clients: f.clients, Rate: f.rate, Keys: f.keys, Prefix: f.prefix, OpTimeout: f.opTimeout, Seed: time.Now().UnixNano(),
		Watchers: f.watchers, WatchRestart: f.watchRestart, OpenLoop: f.openLoop}
	if _, err := fmt.Sscanf(strings.NewReplacer("put=", "", "get=", "", "cas=", "").Replace(f.mix), "%d,%d,%d", &cfg.PutWeight, &cfg.GetWeight, &cfg.CASWeight); err != nil {
		log.Fatalf("--mix %q: want put=N,get=N,cas=N", f.mix)
	}
	return cfg
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
func routes(pollCtx context.Context, runner *workload.Runner, poller *workload.Poller, peerService string, seen *tlsFiles) *http.ServeMux {
	var pollOnce sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("POST /start", func(w http.ResponseWriter, _ *http.Request) {
		if err := runner.Start(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if peerService != "" {
			pollOnce.Do(func() { go poller.Run(pollCtx) })
		}
		fmt.Fprintln(w, "started")
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, _ *http.Request) {
		runner.Stop()
		fmt.Fprintln(w, "stopped")
	})
	mux.HandleFunc("GET /history", func(w http.ResponseWriter, _ *http.Request) {
		h := runner.History()
		h.Samples = poller.Samples()
		reply(w, h)
	})
	mux.HandleFunc("POST /final", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
		defer cancel()
		reply(w, runner.Final(ctx))
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
	mux.HandleFunc("GET /tls", func(w http.ResponseWriter, _ *http.Request) { reply(w, seen.changes()) })
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		ok, fail, unknown := runner.Counts()
		reply(w, map[string]any{"ok": ok, "fail": fail, "unknown": unknown, "samples": len(poller.Samples())})
	})
	return mux
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
