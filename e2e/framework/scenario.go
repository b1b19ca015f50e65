package framework

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/checker"
	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/e2e/localcluster"
	"github.com/quorate-dev/quorate/e2e/report"
	"github.com/quorate-dev/quorate/e2e/workload"
	"github.com/quorate-dev/quorate/e2e/workloadapi"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

// Scenario is one conformance scenario: a cluster of Replicas members under load while Steps
// act on it.
type Scenario struct {
	Name     string
	Labels   map[string]string
	Replicas int32
	// Class decides the availability budget (--budget-<class>); Budget is used only for a
	// scenario without a class, whose outage is of its own kind (power loss, NOSPACE).
	Class  Class
	Budget availability.Budget
	// Expect overrides the expected verdict of a checker (all are expected to pass): an
	// expected failure names the code the checker must fail with.
	Expect map[checker.Name]history.Expectation
	// BeforeLoad prepares the cluster with the workload pod ready, before the load and its
	// history start (filling a database, say, that the load must not see).
	BeforeLoad func(ctx context.Context, r *Run) error
	// Steps act on the cluster, in order, while the load runs; the load runs for the suite's
	// duration before and after them. The first that fails ends them, and the failure names
	// the scenario and the step.
	Steps []Step
	// Rate overrides the suite's operation rate.
	Rate float64
	// MinDuration is the shortest steady load before and after the steps, whatever --duration
	// says: a scenario whose steps cost a handful of operations (a leadership transfer drops
	// the proposals in flight) needs enough operations around them for the success ratio.
	MinDuration time.Duration
	// OpenLoop runs the workload open loop whatever --open-loop says.
	OpenLoop bool
	// ClientSecret names the Secret whose client certificate the workload uses (the cluster's
	// shared client certificate when nil): an application user's, say.
	ClientSecret func(cluster string) string
	// Version overrides the etcd version the cluster starts at (--etcd-version otherwise).
	Version string
	// Prepare readies what the EtcdCluster needs before it is created (volumes of an
	// enforced size, say); it runs after the namespace exists and Install ran.
	Prepare func(ctx context.Context, r *Run) error
	// Spec, when set, adjusts the EtcdCluster's spec before it is created.
	Spec func(*v1alpha1.EtcdClusterSpec)
	// NeedsNode: the scenario acts on the node (kills containers, wipes volumes), which only
	// the local provider can do.
	NeedsNode bool
	// Nodes is how many Ready nodes of the local cluster's etcd pool the scenario needs (its
	// members run there, its workload and the operator on node 1); 0: no node scenario.
	Nodes int
	// Needs are the scenario's prerequisites besides those NeedsNode and Nodes imply: the
	// suite looks for them first and skips the scenario, naming what is missing, when the
	// cluster lacks one (--missing-prerequisites=fail fails it instead).
	Needs []Prerequisite
	// Install, when set, installs the operator for this run (through OLM, say) after the run's
	// namespace exists and before the EtcdCluster is created.
	Install func(ctx context.Context, r *Run) error
	// External, when set, starts an etcd cluster outside Kubernetes in place of creating the
	// EtcdCluster: the load starts on the endpoints it returns (besides the EtcdCluster's
	// client Service), and Steps create the EtcdCluster (CreateEtcdCluster).
	External func(ctx context.Context, r *Run) (endpoints []string, err error)
	// Operator, when set, is the etcd operator the run creates its cluster with and whose
	// client the workload uses (the side-by-side benchmark, suite=peers); Quorate's own
	// actions otherwise. Setup then records the time from creation to the first acknowledged
	// write.
	Operator Operator
}

// Run is one execution of a scenario.
type Run struct {
	Suite     *Suite
	Scenario  Scenario
	Namespace string
	Cluster   string
	T         *testing.T

	// electionTimeout of the EtcdCluster, as the API server defaulted it.
	electionTimeout time.Duration
	// cutOff is the most request timeouts in a row one of the run's partitions allows (chaos.Fault.CutOff).
	cutOff int
	// pools: a node scenario's members run in the local cluster's etcd pool and its workload
	// on node 1, in the system pool (checkNodes).
	pools bool
	// started is when the load started.
	started time.Time
	// external are the client URLs of the external cluster (Scenario.External).
	external []string
	// transport reaches the workload in place of the API server's pod proxy (unit tests).
	transport workloadapi.Transport

	mu       sync.Mutex
	timings  []report.Timing
	events   []history.Event
	phase    string
	cleanups []func(context.Context) error
	// deferred run when the steps end (Defer).
	deferred []func()
}

// OnCleanup registers what teardown undoes besides deleting the run's namespace, newest first.
func (r *Run) OnCleanup(f func(context.Context) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append([]func(context.Context) error{f}, r.cleanups...)
}

// Event records a point event (an action or a membership change) on the timeline.
func (r *Run) Event(kind, name, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, history.Event{Time: time.Now().UnixNano(), Kind: kind, Name: name, Text: text})
}

// Declare puts an event the checkers read on the timeline as it is: a recovery
// (history.EventRecovery) with its time and revision, say.
func (r *Run) Declare(e history.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// Fault records the start of a fault and returns the function that records its end.
func (r *Run) Fault(name, text string) func() {
	r.mu.Lock()
	i := len(r.events)
	r.events = append(r.events, history.Event{Time: time.Now().UnixNano(), Kind: "fault", Name: name, Text: text})
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.events[i].End = time.Now().UnixNano()
			r.mu.Unlock()
		})
	}
}

// Op is the operator the run drives: the scenario's, or Quorate.
func (r *Run) Op() Operator {
	if r.Scenario.Operator != nil {
		return r.Scenario.Operator
	}
	return Quorate{}
}

// Converge waits until the operator reports the cluster converged (Operator.Converged) and
// records how long that took from since as the timing what, or why it timed out.
func (r *Run) Converge(ctx context.Context, what string, since time.Time, n int32, version string, timeout time.Duration) error {
	r.Phase("waiting for " + what)
	err := r.WaitFor(ctx, what, timeout, func() error { return r.Op().Converged(ctx, r, n, version) })
	r.Timing(what, since, err)
	return err
}

// Timing records how long reaching a state took from since, or err when it was not reached.
func (r *Run) Timing(what string, since time.Time, err error) {
	t := report.Timing{Name: what, Seconds: time.Since(since).Seconds()}
	if err != nil {
		t.Error = err.Error()
	}
	r.mu.Lock()
	r.timings = append(r.timings, t)
	r.mu.Unlock()
	r.Event("action", "converged", fmt.Sprintf("%s after %.1f s", what, t.Seconds))
}

// Phase names what the scenario is doing, for the progress line.
func (r *Run) Phase(p string) {
	r.mu.Lock()
	r.phase = p
	r.mu.Unlock()
}

// Feature turns a scenario into an e2e-framework feature labelled with its name and labels.
func (s *Suite) Feature(sc Scenario) features.Feature {
	b := features.New(sc.Name).WithLabel(label.Scenario, sc.Name)
	for k, v := range sc.Labels {
		b = b.WithLabel(k, v)
	}
	if sc.NeedsNode {
		b = b.WithLabel(label.Needs, label.NeedsNode)
	}
	key := runKey(sc.Name)
	return b.
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := &Run{Suite: s, Scenario: sc, T: t, Cluster: "etcd", Namespace: fmt.Sprintf("%s%s-%04d", s.Opts.NamespacePrefix, history.Slug(sc.Name), rand.Intn(10000))}
			missing, err := r.missingPrerequisites(ctx)
			if err == nil && len(missing) > 0 {
				if s.Opts.MissingPrerequisites == FailMissing {
					// A failure in every part of the report, not a skip.
					msg := fmt.Sprintf("a prerequisite is missing (--missing-prerequisites=%s): %s", FailMissing, strings.Join(missing, "; "))
					s.add(report.Scenario{Name: sc.Name, Labels: sc.Labels, Start: time.Now(), Error: msg, Skipped: missing, Budget: r.budget()})
					t.Fatalf("%s: %s", sc.Name, msg)
				}
				s.add(report.Scenario{Name: sc.Name, Labels: sc.Labels, Start: time.Now(), Skipped: missing, Budget: r.budget()})
				// Nothing was created: there is nothing to tear down.
				t.Skipf("%s skipped: %s", sc.Name, strings.Join(missing, "; "))
			}
			if err == nil {
				err = r.setup(ctx)
			}
			if err != nil {
				s.add(report.Scenario{Name: sc.Name, Labels: sc.Labels, Start: time.Now(), Error: err.Error(), Budget: r.budget(), Timings: r.timings})
				t.Errorf("setting up %s: %v", sc.Name, err)
				// A failed setup ends the feature before its teardown: clean up here, so that
				// what it installed does not disturb the next scenario.
				r.teardown(ctx, t)
				t.FailNow()
			}
			return context.WithValue(ctx, key, r)
		}).
		Assess("every checker reaches its expected verdict", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := ctx.Value(key).(*Run)
			r.T = t
			r.execute(ctx)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if r, ok := ctx.Value(key).(*Run); ok {
				r.teardown(ctx, t)
			}
			return ctx
		}).Feature()
}

// budget is the scenario's availability budget: its class's rule for the cluster's election
// timeout, or its own Budget.
func (r *Run) budget() availability.Budget {
	rule, ok := r.Suite.Opts.Budgets.Rule(r.Scenario.Class)
	if !ok {
		return r.Scenario.Budget
	}
	et := r.electionTimeout
	if et == 0 {
		et = time.Second // etcd's default, before the cluster exists
	}
	r.mu.Lock()
	cutOff := r.cutOff
	r.mu.Unlock()
	return partitionBudget(rule.Budget(et), rule, r.Scenario.Class, cutOff)
}

// partitionBudget: a client that sends to each member in turn, as etcd's clientv3 does, waits
// out its request timeout on every member a partition cut off, possibly one after another, so
// a partition of n members allows n request timeouts and the rule's duration, when that is
// longer than the class's budget.
func partitionBudget(b availability.Budget, rule BudgetRule, class Class, cutOff int) availability.Budget {
	if class != Partition {
		return b
	}
	if wait := time.Duration(cutOff)*workload.DefaultOpTimeout + rule.Gap; wait > b.MaxWriteGap {
		b.MaxWriteGap = wait
	}
	return b
}

// teardown runs the registered cleanups and deletes the run's namespace, unless the run failed
// and --keep-failed asks to keep it.
func (r *Run) teardown(ctx context.Context, t *testing.T) {
	if t.Failed() && r.Suite.Opts.KeepFailed {
		t.Logf("keeping namespace %s for inspection", r.Namespace)
		return
	}
	r.mu.Lock()
	cleanups := r.cleanups
	r.mu.Unlock()
	for _, f := range cleanups {
		if err := f(ctx); err != nil {
			t.Errorf("cleaning up after %s: %v", r.Scenario.Name, err)
		}
	}
	r.Suite.deleteNamespace(ctx, r.Namespace)
}

// CreateEtcdCluster creates the run's EtcdCluster as the scenario describes it.
func (r *Run) CreateEtcdCluster(ctx context.Context) error {
	version, image := r.Suite.Opts.EtcdVersion, r.Suite.Opts.EtcdImage
	if r.Scenario.Version != "" {
		if image != "" {
			return fmt.Errorf("%s starts at etcd %s and changes version, which an --etcd-image override (one image for every version) cannot do: drop --etcd-image, or leave this scenario out with --skip-labels=%s=%s", r.Scenario.Name, r.Scenario.Version, label.Scenario, r.Scenario.Name)
		}
		version = r.Scenario.Version
	}
	ec := &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: r.Cluster, Namespace: r.Namespace},
		Spec: v1alpha1.EtcdClusterSpec{Replicas: r.Scenario.Replicas, Version: version, Image: image,
			Storage: v1alpha1.StorageSpec{Size: resource.MustParse("256Mi")}},
	}
	r.Suite.Opts.Shape.Apply(&ec.Spec)
	if r.pools {
		if ec.Spec.PodTemplate == nil {
			ec.Spec.PodTemplate = &v1alpha1.PodTemplate{}
		}
		if ec.Spec.PodTemplate.NodeSelector == nil {
			ec.Spec.PodTemplate.NodeSelector = map[string]v1alpha1.LabelValue{}
		}
		ec.Spec.PodTemplate.NodeSelector[localcluster.PoolLabel] = localcluster.PoolEtcd
	}
	if r.Scenario.Spec != nil {
		r.Scenario.Spec(&ec.Spec)
	}
	if err := r.Suite.Client.Create(ctx, ec); err != nil {
		return fmt.Errorf("creating the EtcdCluster: %w", err)
	}
	r.electionTimeout = time.Duration(ec.Spec.Etcd.ElectionTimeoutMillis) * time.Millisecond
	return nil
}

type ctxKey string

func runKey(name string) ctxKey { return ctxKey("quorate-run-" + name) }

func (r *Run) setup(ctx context.Context) error {
	c := r.Suite.Client
	if err := r.CreateNamespace(ctx, r.Namespace); err != nil {
		return err
	}
	if r.Scenario.Install != nil {
		if err := r.Scenario.Install(ctx, r); err != nil {
			return fmt.Errorf("installing the operator: %w", err)
		}
	}
	if err := r.checkNodes(ctx); err != nil {
		return err
	}
	if r.Scenario.Prepare != nil {
		if err := r.Scenario.Prepare(ctx, r); err != nil {
			return fmt.Errorf("preparing the cluster: %w", err)
		}
	}
	if r.Scenario.Operator != nil {
		return r.createWithOperator(ctx)
	}
	if r.Scenario.External != nil {
		eps, err := r.Scenario.External(ctx, r)
		if err != nil {
			return fmt.Errorf("starting the external etcd cluster: %w", err)
		}
		r.external = eps
	} else {
		if err := r.CreateEtcdCluster(ctx); err != nil {
			return err
		}
		if err := r.WaitSettled(ctx, r.Scenario.Replicas, 5*time.Minute); err != nil {
			return err
		}
	}
	if err := c.Create(ctx, r.workloadPod()); err != nil {
		return fmt.Errorf("creating the workload: %w", err)
	}
	return r.waitWorkload(ctx)
}

func (r *Run) waitWorkload(ctx context.Context) error {
	return r.WaitFor(ctx, "the workload pod to be ready", 3*time.Minute, func() error {
		p := &corev1.Pod{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: "workload"}, p); err != nil {
			return err
		}
		if PodReady(p) {
			return nil
		}
		return fmt.Errorf("workload pod is %s", p.Status.Phase)
	})
}

// createWithOperator creates the cluster through the scenario's Operator with the workload
// pod beside it at once, and records the time from creation to the first write the cluster
// acknowledged (the workload's probe, retried) and to the operator's convergence.
func (r *Run) createWithOperator(ctx context.Context) error {
	version := r.Suite.Opts.EtcdVersion
	if r.Scenario.Version != "" {
		version = r.Scenario.Version
	}
	created := time.Now()
	if err := r.Op().Create(ctx, r, r.Scenario.Replicas, version); err != nil {
		return err
	}
	if err := r.Suite.Client.Create(ctx, r.workloadPod()); err != nil {
		return fmt.Errorf("creating the workload: %w", err)
	}
	timeout := r.Suite.Opts.ConvergeTimeout
	err := r.WaitFor(ctx, "the first acknowledged write", timeout, func() error {
		if err := r.waitWorkload(ctx); err != nil {
			return err
		}
		msg, err := r.Probe(ctx, "/quorate-first-write")
		if err == nil && msg != "" {
			err = errors.New(msg)
		}
		return err
	})
	r.Timing("first write after creation", created, err)
	if err != nil {
		return err
	}
	return r.Converge(ctx, fmt.Sprintf("%d members after creation", r.Scenario.Replicas), created, r.Scenario.Replicas, version, timeout)
}
