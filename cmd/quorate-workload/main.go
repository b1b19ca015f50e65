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

func main() {
	var (
		endpoints, tlsDir, serverName, peerService, mix, prefix, listen string
		clients, keys, port, watchers                                   int
		rate                                                            float64
		openLoop                                                        bool
		opTimeout, pollInterval, watchRestart                           time.Duration
	)
	flag.StringVar(&endpoints, "endpoints", "", "comma-separated client URLs, e.g. https://demo-client.ns.svc:2379")
	flag.StringVar(&tlsDir, "tls-dir", "", "directory with tls.crt, tls.key and ca.crt of a client certificate (empty: plaintext)")
	flag.StringVar(&serverName, "server-name", "", "name the members' server certificate must carry (default: the endpoint host)")
	flag.StringVar(&peerService, "peer-service", "", "DNS name of the cluster's headless peer Service, for the split-brain poller")
	flag.IntVar(&port, "client-port", 2379, "members' client port")
	flag.IntVar(&clients, "clients", workload.DefaultClients, "concurrent clients, each with its own connection and (closed loop) one operation at a time")
	flag.Float64Var(&rate, "rate", workload.DefaultRate, "operations per second over all clients")
	flag.BoolVar(&openLoop, "open-loop", false, "issue operations on schedule whether or not earlier ones returned (each client connection then carries several at a time)")
	flag.IntVar(&keys, "keys", 8, "number of keys")
	flag.StringVar(&mix, "mix", "put=4,get=4,cas=2", "operation weights")
	flag.StringVar(&prefix, "prefix", "/quorate-conformance/", "key prefix")
	flag.DurationVar(&opTimeout, "op-timeout", workload.DefaultOpTimeout, "timeout of one operation")
	flag.DurationVar(&pollInterval, "poll-interval", 250*time.Millisecond, "split-brain poller interval (4 Hz or faster)")
	flag.StringVar(&listen, "listen", ":8080", "HTTP address")
	flag.IntVar(&watchers, "watchers", 2, "watchers that keep a watch open on the workload's keys and record every event")
	flag.DurationVar(&watchRestart, "watch-restart", 10*time.Second, "restart each watch this often, from the revision after its last event, as a client whose connection drops would")
	flag.Parse()

	cfg := workload.Config{Endpoints: strings.Split(endpoints, ","), Clients: clients, Rate: rate, Keys: keys, Prefix: prefix, OpTimeout: opTimeout, Seed: time.Now().UnixNano(),
		Watchers: watchers, WatchRestart: watchRestart, OpenLoop: openLoop}
	if _, err := fmt.Sscanf(strings.NewReplacer("put=", "", "get=", "", "cas=", "").Replace(mix), "%d,%d,%d", &cfg.PutWeight, &cfg.GetWeight, &cfg.CASWeight); err != nil {
		log.Fatalf("--mix %q: want put=N,get=N,cas=N", mix)
	}
	seen := &tlsFiles{}
	if tlsDir != "" {
		name := serverName
		if name == "" {
			name = strings.Split(strings.TrimPrefix(strings.TrimPrefix(cfg.Endpoints[0], "https://"), "http://"), ":")[0]
		}
		// The client certificate and the CA bundle are read at every handshake: a renewed
		// certificate or a rotated CA reaches new connections once the kubelet updates the
		// mounted Secret, as it must for any client of a cluster whose CA rotates.
		t, err := pki.FilesTLS(tlsDir, name, nil)
		if err != nil {
			log.Fatal(err)
		}
		cfg.TLS = t
		go seen.watch(tlsDir)
	}
	runner := workload.New(cfg)
	poller := &workload.Poller{PeerService: peerService, Port: port, TLS: cfg.TLS, Interval: pollInterval}
	var pollOnce sync.Once
	pollCtx, stopPoll := context.WithCancel(context.Background())
	defer stopPoll()

	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
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
	log.Printf("quorate-workload listening on %s (endpoints %v, %d clients, %.0f ops/s)", listen, cfg.Endpoints, clients, rate)
	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
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
