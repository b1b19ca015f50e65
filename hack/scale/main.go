// Command scale measures the operator itself with thousands of EtcdClusters (make bench-scale).
//
// What is real: the kube-apiserver and its etcd (envtest's, built from source), the operator's
// binary with every controller, its caches, client rate limits, work queue and metrics, and
// every API request it makes. What is simulated: the nodes (this program plays the kubelet: it
// gives each pod an address and marks it Running and Ready, finishes deleting terminating pods
// and lets unused terminating PVCs go, as the PVC-protection controller does), and etcd (the
// operator is built with the tag scalesim, which answers its etcd calls from memory, one
// in-memory cluster per EtcdCluster, see internal/etcd/etcdsim). Nothing is scheduled (pods
// are never bound to nodes), no PersistentVolume is provisioned (PVCs stay Pending) and no
// container runs. So every reconcile does its real Kubernetes work and its real decisions, and
// only the answers of etcd members are made up.
//
// It reports resident memory and CPU of the operator's process, the time from the first
// EtcdCluster created to all Available, the operator's API requests against its QPS and burst,
// the writes the API server received in a steady window (by resource), the work queue's
// latency, and a cold restart: the time from the process start to every cluster reconciled.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

type options struct {
	clusters    int
	operator    string
	out         string
	qps         float64
	burst       int
	concurrency int
	steady      time.Duration
	createRate  int
	version     string
	extra       string
}

func main() {
	var o options
	flag.IntVar(&o.clusters, "clusters", 5000, "EtcdClusters to create (3 members each), 100 per namespace")
	flag.StringVar(&o.operator, "operator", "bin/quorate-operator-scalesim", "the operator built with -tags scalesim")
	flag.StringVar(&o.out, "out", "reports/scale", "directory of the report (scale.md) and the operator's log")
	flag.Float64Var(&o.qps, "kube-api-qps", 50, "the operator's --kube-api-qps")
	flag.IntVar(&o.burst, "kube-api-burst", 100, "the operator's --kube-api-burst")
	flag.IntVar(&o.concurrency, "max-concurrent-reconciles", 4, "the operator's --max-concurrent-reconciles")
	flag.DurationVar(&o.steady, "steady", 2*time.Minute, "the steady window in which writes are counted")
	flag.IntVar(&o.createRate, "create-rate", 100, "EtcdClusters created per second")
	flag.StringVar(&o.version, "etcd-version", "3.6.16", "spec.version of the clusters")
	flag.StringVar(&o.extra, "operator-flags", "", "further operator flags, space separated")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// scrape is one reading of a Prometheus endpoint.
type scrape map[string]*dto.MetricFamily

// sum adds the samples of a counter or gauge whose labels include every pair of match.
func (s scrape) sum(name string, match ...string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.Metric {
		if !labelsMatch(m.Label, match) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Untyped != nil:
			total += m.Untyped.GetValue()
		}
	}
	return total
}

// by sums a counter per value of one label, over samples whose labels include match.
func (s scrape) by(name, label string, match ...string) map[string]float64 {
	out := map[string]float64{}
	f := s[name]
	if f == nil {
		return out
	}
	for _, m := range f.Metric {
		if !labelsMatch(m.Label, match) {
			continue
		}
		for _, l := range m.Label {
			if l.GetName() == label {
				out[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// buckets returns a histogram's cumulative buckets (upper bound → count) and its count.
func (s scrape) buckets(name string, match ...string) (map[float64]float64, float64) {
	out := map[float64]float64{}
	count := 0.0
	f := s[name]
	if f == nil {
		return out, 0
	}
	for _, m := range f.Metric {
		if !labelsMatch(m.Label, match) || m.Histogram == nil {
			continue
		}
		for _, b := range m.Histogram.Bucket {
			out[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
		count += float64(m.Histogram.GetSampleCount())
	}
	return out, count
}

func labelsMatch(labels []*dto.LabelPair, match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		if !slices.ContainsFunc(labels, func(l *dto.LabelPair) bool { return l.GetName() == match[i] && l.GetValue() == match[i+1] }) {
			return false
		}
	}
	return true
}

func parse(r io.Reader) (scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// quantile of the observations between two readings of a histogram: the upper bound of the
// first bucket holding it.
func quantile(before, after map[float64]float64, q float64) float64 {
	var bounds []float64
	for b := range after {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total <= 0 {
		return math.NaN()
	}
	for _, b := range bounds {
		if after[b]-before[b] >= q*total {
			return b
		}
	}
	return math.Inf(1)
}

type harness struct {
	o          options
	k8s        client.Client
	clientset  *kubernetes.Clientset
	kubeconfig string
	metrics    string
	proc       *exec.Cmd
	exited     chan error
	log        *os.File
	report     strings.Builder
}

func (h *harness) printf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	fmt.Print(line)
	h.report.WriteString(line)
}

func run(ctx context.Context, o options) error {
	if err := os.MkdirAll(o.out, 0o750); err != nil {
		return err
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	// The API server is not what is measured: let it take what the operator and the kubelet
	// stand-in send.
	env.ControlPlane.GetAPIServer().Configure().Set("max-requests-inflight", "2000").Set("max-mutating-requests-inflight", "1000").
		Set("service-cluster-ip-range", "10.96.0.0/12") // a client Service per cluster: envtest's default /24 holds 254
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting the API server (KUBEBUILDER_ASSETS): %w", err)
	}
	defer func() { _ = env.Stop() }()
	h, err := newHarness(env, cfg, o)
	if err != nil {
		return err
	}
	defer func() { _ = h.log.Close() }()

	namespaces, err := h.createNamespaces(ctx)
	if err != nil {
		return err
	}
	kctx, stopKubelet := context.WithCancel(ctx)
	defer stopKubelet()
	kubelet := startKubelet(kctx, h.clientset)

	h.printHeader()
	if err := h.startOperator(ctx); err != nil {
		return err
	}
	defer h.stopOperator()

	created, err := h.measureCreation(ctx, namespaces[1:], kubelet)
	if err != nil {
		return err
	}
	// Settle: the last steps (status, Events) of the last clusters.
	if err := h.waitIdle(ctx, 0); err != nil {
		return err
	}
	time.Sleep(30 * time.Second)
	if err := h.measureSteady(ctx); err != nil {
		return err
	}
	if err := h.measureColdStart(ctx, created); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.out, "scale.md"), []byte(h.report.String()), 0o600)
}

// newHarness connects to the started API server as a user of its own (whose kubeconfig the
// operator gets) and creates the operator's log file.
func newHarness(env *envtest.Environment, cfg *rest.Config, o options) (*harness, error) {
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "quorate-scale", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	h := &harness{o: o, kubeconfig: filepath.Join(o.out, "kubeconfig"), metrics: "127.0.0.1:18480"}
	if err := os.WriteFile(h.kubeconfig, kc, 0o600); err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 2000, 4000
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	if h.k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	if h.clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if h.log, err = os.Create(filepath.Join(o.out, "operator.log")); err != nil {
		return nil, err
	}
	return h, nil
}

// createNamespaces creates the operator's namespace and one namespace per 100 clusters, and
// returns their names, the operator's first.
func (h *harness) createNamespaces(ctx context.Context) ([]string, error) {
	namespaces := []string{"quorate-system"}
	for i := 0; i < (h.o.clusters+99)/100; i++ {
		namespaces = append(namespaces, fmt.Sprintf("scale-%03d", i))
	}
	for _, ns := range namespaces {
		if err := h.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	return namespaces, nil
}

// printHeader writes the report's title and what was measured on what.
func (h *harness) printHeader() {
	o := h.o
	host, _ := os.Hostname()
	h.printf("# The operator at %d EtcdClusters\n\n", o.clusters)
	h.printf("Measured %s on %s (%d CPUs), `go run ./hack/scale -clusters %d` (make bench-scale); operator flags `--kube-api-qps %g --kube-api-burst %d --max-concurrent-reconciles %d %s`. Simulated: the kubelet and etcd (see hack/scale/main.go); real: the API server and the operator.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), host, cpus(), o.clusters, o.qps, o.burst, o.concurrency, o.extra)
}

// measureCreation creates every cluster, at the given rate, then waits until every one is
// Available, and returns how many were created.
func (h *harness) measureCreation(ctx context.Context, namespaces []string, kubelet *kubelet) (int, error) {
	start := time.Now()
	created, err := h.createClusters(ctx, namespaces)
	if err != nil {
		return 0, err
	}
	h.printf("## Creation\n\n- %d EtcdClusters created in %s\n", created, time.Since(start).Round(time.Second))
	peakRSS := 0.0
	for {
		avail, err := h.available(ctx)
		if err != nil {
			return 0, err
		}
		m, err := h.scrapeOperator(ctx)
		if err != nil {
			return 0, err
		}
		peakRSS = max(peakRSS, m.sum("process_resident_memory_bytes"))
		fmt.Printf("  %s: %d of %d Available, operator RSS %s, queue depth %.0f, pods given addresses %d\n",
			time.Since(start).Round(time.Second), avail, created, mib(m.sum("process_resident_memory_bytes")), m.sum("workqueue_depth", "name", "etcdcluster"), kubelet.started.Load())
		if avail == created {
			break
		}
		if err := h.alive(); err != nil {
			return 0, err
		}
		time.Sleep(10 * time.Second)
	}
	h.printf("- every one Available %s after the first was created; peak operator RSS during creation %s\n\n", time.Since(start).Round(time.Second), mib(peakRSS))
	return created, nil
}

// measureSteady reads the operator's and the API server's metrics before and after the steady
// window and reports the difference.
func (h *harness) measureSteady(ctx context.Context) error {
	m1, err := h.scrapeOperator(ctx)
	if err != nil {
		return err
	}
	a1, err := h.scrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	w0 := time.Now()
	time.Sleep(h.o.steady)
	m2, err := h.scrapeOperator(ctx)
	if err != nil {
		return err
	}
	a2, err := h.scrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	h.reportSteady(m1, m2, a1, a2, w0)
	return nil
}

// reportSteady writes the steady window's table: m1, a1 the operator's and the API server's
// metrics at its start (w0), m2, a2 at its end.
func (h *harness) reportSteady(m1, m2, a1, a2 scrape, w0 time.Time) {
	window := time.Since(w0).Seconds()
	h.printf("## Steady state (%s window, every cluster settled)\n\n", time.Since(w0).Round(time.Second))
	h.printf("| measure | value |\n|---|---|\n")
	h.printf("| resident memory (process_resident_memory_bytes) | %s |\n", mib(m2.sum("process_resident_memory_bytes")))
	h.printf("| Go heap in use | %s |\n", mib(m2.sum("go_memstats_heap_inuse_bytes")))
	h.printf("| CPU | %.2f cores |\n", (m2.sum("process_cpu_seconds_total")-m1.sum("process_cpu_seconds_total"))/window)
	reconciles := m2.sum("controller_runtime_reconcile_total", "controller", "etcdcluster") - m1.sum("controller_runtime_reconcile_total", "controller", "etcdcluster")
	h.printf("| EtcdCluster reconciles | %.1f/s (%.0f) |\n", reconciles/window, reconciles)
	req1, req2 := m1.by("rest_client_requests_total", "method"), m2.by("rest_client_requests_total", "method")
	h.printf("| the operator's API requests | %s (QPS %g, burst %d) |\n", perSecond(req1, req2, window), h.o.qps, h.o.burst)
	b1, _ := m1.buckets("workqueue_queue_duration_seconds", "name", "etcdcluster")
	b2, _ := m2.buckets("workqueue_queue_duration_seconds", "name", "etcdcluster")
	h.printf("| work queue wait p50 / p99 | ≤ %s / ≤ %s |\n", seconds(quantile(b1, b2, 0.5)), seconds(quantile(b1, b2, 0.99)))
	writes := apiWrites(a1, a2)
	h.printf("| reads the API server answered, by resource | %s |\n", formatWrites(apiReads(a1, a2)))
	h.printf("| writes the API server received, by resource | %s |\n", formatWrites(writes))
	other := 0.0
	for res, n := range writes {
		if res != "leases" {
			other += n
		}
	}
	h.printf("| writes per steady-state reconcile (Leases apart) | %.4f |\n\n", other/max(reconciles, 1))
}

// measureColdStart stops the operator and starts it again on the same (created) clusters, and
// reports the time until every cluster was reconciled once.
func (h *harness) measureColdStart(ctx context.Context, created int) error {
	h.stopOperator()
	a1, err := h.scrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	coldStart := time.Now()
	if err := h.startOperator(ctx); err != nil {
		return err
	}
	if err := h.waitIdle(ctx, created); err != nil {
		return err
	}
	synced := time.Since(coldStart)
	m3, err := h.scrapeOperator(ctx)
	if err != nil {
		return err
	}
	a2, err := h.scrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	h.printf("## Cold start (the operator restarted on %d settled clusters)\n\n", created)
	h.printf("| measure | value |\n|---|---|\n")
	h.printf("| process start to every cluster reconciled once (queue empty) | %s |\n", synced.Round(100*time.Millisecond))
	h.printf("| resident memory then | %s |\n", mib(m3.sum("process_resident_memory_bytes")))
	h.printf("| CPU used | %.1f s |\n", m3.sum("process_cpu_seconds_total"))
	h.printf("| the operator's API requests | %s |\n", formatWrites(m3.by("rest_client_requests_total", "method")))
	h.printf("| reads the API server answered, by resource | %s |\n", formatWrites(apiReads(a1, a2)))
	h.printf("| writes the API server received, by resource | %s |\n\n", formatWrites(apiWrites(a1, a2)))
	return nil
}

func cpus() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\nprocessor") + 1
}

func mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }

func seconds(s float64) string {
	if math.IsNaN(s) {
		return "no samples"
	}
	return (time.Duration(s * float64(time.Second))).String()
}

func perSecond(before, after map[string]float64, window float64) string {
	var parts []string
	for _, k := range sortedKeys(after) {
		if d := after[k] - before[k]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f/s", k, d/window))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func formatWrites(w map[string]float64) string {
	var parts []string
	for _, k := range sortedKeys(w) {
		if w[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, w[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// apiWrites are the mutating requests the API server answered between two readings, by
// resource (subresources apart: pods/status).
func apiWrites(before, after scrape) map[string]float64 {
	return apiRequests(before, after, false, "POST", "PUT", "PATCH", "DELETE", "APPLY")
}

// apiReads are the GET and LIST requests the API server answered between two readings.
func apiReads(before, after scrape) map[string]float64 {
	return apiRequests(before, after, true, "GET", "LIST")
}

// apiRequests are the requests of the given verbs the API server answered between two
// readings, by resource (subresources apart: pods/status), each key prefixed with its verb if
// byVerb.
func apiRequests(before, after scrape, byVerb bool, verbs ...string) map[string]float64 {
	out := map[string]float64{}
	f := after["apiserver_request_total"]
	if f == nil {
		return out
	}
	key := func(m *dto.Metric) (string, bool) {
		var verb, res, sub string
		for _, l := range m.Label {
			switch l.GetName() {
			case "verb":
				verb = l.GetValue()
			case "resource":
				res = l.GetValue()
			case "subresource":
				sub = l.GetValue()
			}
		}
		if !slices.Contains(verbs, verb) {
			return "", false
		}
		if sub != "" {
			res += "/" + sub
		}
		if byVerb {
			res = verb + " " + res
		}
		return res, true
	}
	for _, m := range f.Metric {
		if k, ok := key(m); ok {
			out[k] += m.GetCounter().GetValue()
		}
	}
	if b := before["apiserver_request_total"]; b != nil {
		for _, m := range b.Metric {
			if k, ok := key(m); ok {
				out[k] -= m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func (h *harness) startOperator(ctx context.Context) error {
	args := []string{"--metrics-bind-address", h.metrics, "--metrics-secure=false", "--health-probe-bind-address", "0",
		"--leader-election-namespace", "quorate-system", "--metrics-cert-secret", "",
		"--kube-api-qps", fmt.Sprint(h.o.qps), "--kube-api-burst", fmt.Sprint(h.o.burst),
		"--max-concurrent-reconciles", fmt.Sprint(h.o.concurrency)}
	args = append(args, strings.Fields(h.o.extra)...)
	cmd := exec.CommandContext(ctx, h.o.operator, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+h.kubeconfig, "POD_NAMESPACE=quorate-system",
		"OPERATOR_IMAGE=localhost:5000/quorate/operator:scale", "SCALESIM_ETCD_VERSION="+h.o.version)
	cmd.Stdout, cmd.Stderr = h.log, h.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s (make bench-scale builds it): %w", h.o.operator, err)
	}
	h.proc, h.exited = cmd, make(chan error, 1)
	go func() { h.exited <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if err := h.alive(); err != nil {
			return err
		}
		if _, err := h.scrapeOperator(ctx); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the operator's metrics endpoint %s did not answer within 2m: see %s", h.metrics, h.log.Name())
}

func (h *harness) alive() error {
	select {
	case err := <-h.exited:
		h.exited <- err
		return fmt.Errorf("the operator exited (%v): see %s", err, h.log.Name())
	default:
		return nil
	}
}

func (h *harness) stopOperator() {
	if h.proc == nil {
		return
	}
	_ = h.proc.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-h.exited:
		_, _ = fmt.Fprintf(h.log, "scale: the operator stopped: %v\n", err)
	case <-time.After(time.Minute):
		_ = h.proc.Process.Kill()
		_, _ = fmt.Fprintf(h.log, "scale: the operator was killed after a minute: %v\n", <-h.exited)
	}
	h.proc = nil
}

func (h *harness) scrapeOperator(ctx context.Context) (scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.metrics+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", resp.Status)
	}
	return parse(resp.Body)
}

func (h *harness) scrapeAPIServer(ctx context.Context) (scrape, error) {
	raw, err := h.clientset.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parse(strings.NewReader(string(raw)))
}

// waitIdle waits until the operator's queue of EtcdClusters is empty with nothing in work and,
// if adds is above zero, at least that many keys were added since it started.
func (h *harness) waitIdle(ctx context.Context, adds int) error {
	for {
		if err := h.alive(); err != nil {
			return err
		}
		m, err := h.scrapeOperator(ctx)
		if err == nil && m.sum("workqueue_adds_total", "name", "etcdcluster") >= float64(adds) &&
			m.sum("workqueue_depth", "name", "etcdcluster") == 0 && m.sum("workqueue_unfinished_work_seconds", "name", "etcdcluster") == 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (h *harness) createClusters(ctx context.Context, namespaces []string) (int, error) {
	var created atomic.Int64
	work := make(chan *v1alpha1.EtcdCluster)
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				if err := h.k8s.Create(ctx, c); err != nil && !apierrors.IsAlreadyExists(err) {
					once.Do(func() { firstErr = err })
					continue
				}
				created.Add(1)
			}
		}()
	}
	tick := time.NewTicker(time.Second / time.Duration(max(h.o.createRate, 1)))
	defer tick.Stop()
	for i := range h.o.clusters {
		ns := namespaces[i/100]
		<-tick.C
		work <- &v1alpha1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", ns, i%100)},
			Spec: v1alpha1.EtcdClusterSpec{Replicas: 3, Version: h.o.version,
				Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}},
		}
	}
	close(work)
	wg.Wait()
	return int(created.Load()), firstErr
}

func (h *harness) available(ctx context.Context) (int, error) {
	var list v1alpha1.EtcdClusterList
	if err := h.k8s.List(ctx, &list); err != nil {
		return 0, err
	}
	n := 0
	for _, c := range list.Items {
		if meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionAvailable) {
			n++
		}
	}
	return n, nil
}

// kubelet plays the nodes and the PVC-protection controller for every namespace.
type kubelet struct {
	cs      *kubernetes.Clientset
	pods    cache.Indexer
	pvcs    cache.Indexer
	queue   workqueue.TypedRateLimitingInterface[string]
	next    atomic.Int64
	started atomic.Int64
}

func startKubelet(ctx context.Context, cs *kubernetes.Clientset) *kubelet {
	k := &kubelet{cs: cs, queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	factory := informers.NewSharedInformerFactory(cs, 0)
	pods, pvcs := factory.Core().V1().Pods().Informer(), factory.Core().V1().PersistentVolumeClaims().Informer()
	k.pods, k.pvcs = pods.GetIndexer(), pvcs.GetIndexer()
	enqueue := func(kind string) func(any) {
		return func(obj any) {
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				k.queue.Add(kind + "|" + key)
			}
		}
	}
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue("pod"), UpdateFunc: func(_, o any) { enqueue("pod")(o) }})
	_, _ = pvcs.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue("pvc"), UpdateFunc: func(_, o any) { enqueue("pvc")(o) }})
	// A PVC is let go once its pod has gone: look again when a pod is deleted.
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add("pvc|" + key)
		}
	}})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go func() { <-ctx.Done(); k.queue.ShutDown() }()
	for range 8 {
		go func() {
			for k.work(ctx) {
			}
		}()
	}
	return k
}

func (k *kubelet) work(ctx context.Context) bool {
	item, shutdown := k.queue.Get()
	if shutdown {
		return false
	}
	defer k.queue.Done(item)
	kind, key, _ := strings.Cut(item, "|")
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	var err error
	if kind == "pod" {
		err = k.pod(ctx, ns, name)
	} else {
		err = k.pvc(ctx, ns, name)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		k.queue.AddRateLimited(item)
		return true
	}
	k.queue.Forget(item)
	return true
}

func (k *kubelet) pod(ctx context.Context, ns, name string) error {
	obj, ok, err := k.pods.GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return err
	}
	p := obj.(*corev1.Pod).DeepCopy()
	if p.DeletionTimestamp != nil {
		zero := int64(0)
		return k.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	}
	if p.Status.PodIP != "" {
		return nil
	}
	n := k.next.Add(1)
	ip := fmt.Sprintf("10.%d.%d.%d", 64+n/65536, n/256%256, n%256)
	now := metav1.Now()
	p.Status.Phase, p.Status.PodIP, p.Status.PodIPs, p.Status.StartTime = corev1.PodRunning, ip, []corev1.PodIP{{IP: ip}}, &now
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	if _, err := k.cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return err
	}
	k.started.Add(1)
	return nil
}

func (k *kubelet) pvc(ctx context.Context, ns, name string) error {
	obj, ok, err := k.pvcs.GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return err
	}
	c := obj.(*corev1.PersistentVolumeClaim).DeepCopy()
	if c.DeletionTimestamp == nil || len(c.Finalizers) == 0 {
		return nil
	}
	if _, used, _ := k.pods.GetByKey(ns + "/" + name); used {
		return nil
	}
	c.Finalizers = nil
	_, err = k.cs.CoreV1().PersistentVolumeClaims(ns).Update(ctx, c, metav1.UpdateOptions{})
	return err
}
