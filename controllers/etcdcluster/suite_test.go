package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/backup"
	"github.com/quorate-dev/quorate/controllers/managercache"
	"github.com/quorate-dev/quorate/controllers/ownership"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/expectations"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
)

// The integration tests run the reconciler against a real kube-apiserver and etcd (envtest),
// with the etcd members themselves played by etcd.Fake: there is no kubelet here, so a small
// "kubelet" below gives pods their IPs and plays the PVC-protection controller.

var (
	testEnv *envtest.Environment
	cfg     *rest.Config
	k8s     client.Client
	scheme  = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run these tests with `make test`, which builds kube-apiserver and etcd from source")
		os.Exit(1)
	}
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	if cfg, err = testEnv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		os.Exit(1)
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = testEnv.Stop()
	os.Exit(code)
}

func zapLevel() zapcore.Level {
	if os.Getenv("QUORATE_TEST_VERBOSE") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// ownershipTerm is the claims' term in the tests: short, so that a takeover is quick.
var ownershipTerm = 6 * time.Second

var images = resources.Images{Launcher: "quorate/operator:test", EtcdRepository: "registry.local/etcd"}

// writeCounter counts the writes the operator makes to the API server.
type writeCounter struct {
	mu     sync.Mutex
	writes []string
	// stamped is every write with the moment it was sent, reset never.
	stamped []stampedWrite
}

// stampedWrite is one write and when it was sent.
type stampedWrite struct {
	at    time.Time
	write string
}

func (w *writeCounter) add(verb string, obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	write := fmt.Sprintf("%s %T %s", verb, obj, obj.GetName())
	w.writes = append(w.writes, write)
	w.stamped = append(w.stamped, stampedWrite{at: time.Now(), write: write})
}

// history is every write so far, with when it was sent.
func (w *writeCounter) history() []stampedWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.stamped)
}

func (w *writeCounter) snapshot() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

func (w *writeCounter) reset() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.writes
	w.writes = nil
	return out
}

// countingRecorder counts Events, which are writes too.
type countingRecorder struct {
	record.EventRecorder
	w *writeCounter
}

func (c countingRecorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	c.w.add("Event/"+reason, obj.(client.Object))
	c.EventRecorder.Eventf(obj, eventtype, reason, messageFmt, args...)
}

// noWatch adapts the manager's client to the interface the interceptor wraps.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("the reconciler does not watch through its client")
}

// operator is one running manager with the reconciler under test.
type operator struct {
	cancel context.CancelFunc
	done   chan struct{}
	writes *writeCounter
	passes atomic.Int64
	fake   *etcd.Fake
	rec    *Reconciler

	mu   sync.Mutex
	errs []error // what passes returned for backoff
}

// returned lists the errors passes returned so far.
func (op *operator) returned() []error {
	op.mu.Lock()
	defer op.mu.Unlock()
	return slices.Clone(op.errs)
}

// startOperator starts a manager watching namespace ns whose members are played by fake.
func startOperator(t *testing.T, ns string, fake *etcd.Fake) *operator {
	t.Helper()
	return startInstall(t, ns, fake, "test/"+ns)
}

// startInstall starts an operator install with its own identity.
func startInstall(t *testing.T, ns string, fake *etcd.Fake, identity string) *operator {
	t.Helper()
	return startWith(t, ns, fake, identity, planner.DefaultDeadlines)
}

// startWith starts an operator install with its own identity and deadlines.
func startWith(t *testing.T, ns string, fake *etcd.Fake, identity string, deadlines planner.Deadlines, configure ...func(*Reconciler)) *operator {
	t.Helper()
	op := &operator{done: make(chan struct{}), writes: &writeCounter{}, fake: fake}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Every test starts its own manager with a controller of the same name.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      managercache.Options(ns),
	})
	if err != nil {
		t.Fatal(err)
	}
	counted := interceptor.NewClient(noWatch{mgr.GetClient()}, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			switch obj.(type) {
			case *corev1.Service, *policyv1.PodDisruptionBudget, *networkingv1.NetworkPolicy:
				// The manager caches their metadata alone (Owns with OnlyMetadata): reading
				// the whole object through the cache would start a second informer.
				t.Errorf("the reconciler read %T %s through the cache, which holds the metadata alone of that kind (cachedMeta)", obj, key)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			op.writes.add("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			op.writes.add("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			op.writes.add("patch", obj)
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			op.writes.add("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			op.writes.add("patch/"+sub, obj)
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			op.writes.add("update/"+sub, obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	op.rec = &Reconciler{
		Client:       counted,
		APIReader:    mgr.GetAPIReader(),
		Scheme:       scheme,
		Recorder:     countingRecorder{mgr.GetEventRecorderFor("quorate"), op.writes}, //nolint:staticcheck // the operator records core/v1 Events, which kubectl describe shows
		Images:       images,
		EtcdFactory:  fake.Factory(),
		Expectations: expectations.New(time.Minute),
		ResyncPeriod: 500 * time.Millisecond,
		StepDelay:    50 * time.Millisecond,
		Settings:     Settings{Deadlines: deadlines},
		Ownership:    &ownership.Ownership{Identity: identity, Term: ownershipTerm},
		Operator:     resources.Operator{Namespace: "quorate-system", Labels: map[string]string{"control-plane": "controller-manager"}},
	}
	for _, f := range configure {
		f(op.rec)
	}
	counting := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		op.passes.Add(1)
		res, err := op.rec.Reconcile(ctx, req)
		if err != nil {
			op.mu.Lock()
			op.errs = append(op.errs, err)
			op.mu.Unlock()
		}
		return res, err
	})
	if err := op.rec.setup(mgr, 1, counting); err != nil {
		t.Fatal(err)
	}
	// Backups, schedules and drills run beside, as in the manager (cmd/main.go), with the
	// images (and proxy environment) the configuration gave the reconciler.
	recorder := mgr.GetEventRecorderFor("quorate") //nolint:staticcheck // as above
	if err := (&backup.BackupReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: scheme, Recorder: recorder,
		Images: op.rec.Images, Ownership: op.rec.Ownership, StoragePolicy: op.rec.StoragePolicy, RefusalGrace: time.Second}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	// The tests' schedules run every second.
	if err := (&backup.ScheduleReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: scheme, Recorder: recorder,
		Images: op.rec.Images, Ownership: op.rec.Ownership, MinInterval: time.Second, StoragePolicy: op.rec.StoragePolicy}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op.cancel = cancel
	go func() {
		defer close(op.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(op.stop)
	return op
}

func (op *operator) stop() {
	op.cancel()
	<-op.done
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "quorate-test-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// eventually polls cond until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
}
