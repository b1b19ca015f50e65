package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"github.com/quorate-dev/quorate/e2e/checker/linearizability"
	"github.com/quorate-dev/quorate/e2e/checker/lostwrites"
	"github.com/quorate-dev/quorate/e2e/checker/splitbrain"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/report"
	"github.com/quorate-dev/quorate/internal/names"
)

// Scenario is one conformance scenario: a cluster of Replicas members under load while Steps
// act on it.
type Scenario struct {
	Name     string
	Labels   map[string]string
	Replicas int32
	Budget   availability.Budget
	// Expect overrides the expected verdict of a checker (all are expected to pass).
	Expect map[string]bool
	// ExpectReason: a part of the reason a checker must give (for expected failures).
	ExpectReason map[string]string
	// Steps act on the cluster while the load runs; the load runs for the suite's duration
	// before and after them.
	Steps func(ctx context.Context, r *Run) error
	// Rate overrides the suite's operation rate.
	Rate float64
	// Version overrides the etcd version the cluster starts at (--etcd-version otherwise).
	Version string
	// Install, when set, installs the operator for this run (through OLM, say) after the run's
	// namespace exists and before the EtcdCluster is created.
	Install func(ctx context.Context, r *Run) error
}

// Run is one execution of a scenario.
type Run struct {
	Suite     *Suite
	Scenario  Scenario
	Namespace string
	Cluster   string
	T         *testing.T

	mu       sync.Mutex
	events   []history.Event
	phase    string
	cleanups []func(context.Context) error
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

// Phase names what the scenario is doing, for the progress line.
func (r *Run) Phase(p string) {
	r.mu.Lock()
	r.phase = p
	r.mu.Unlock()
}

// Feature turns a scenario into an e2e-framework feature labelled with its name and labels.
func (s *Suite) Feature(sc Scenario) features.Feature {
	b := features.New(sc.Name).WithLabel("scenario", sc.Name)
	for k, v := range sc.Labels {
		b = b.WithLabel(k, v)
	}
	key := runKey(sc.Name)
	return b.
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := &Run{Suite: s, Scenario: sc, T: t, Cluster: "etcd", Namespace: fmt.Sprintf("qc-%s-%04d", sanitize(sc.Name), rand.Intn(10000))}
			if err := r.setup(ctx); err != nil {
				s.add(report.Scenario{Name: sc.Name, Labels: sc.Labels, Start: time.Now(), Error: err.Error(), Budget: sc.Budget})
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
	_ = r.Suite.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Namespace}})
}

type ctxKey string

func runKey(name string) ctxKey { return ctxKey("quorate-run-" + name) }

func sanitize(s string) string {
	return strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(s)), "-")
}

func (r *Run) setup(ctx context.Context) error {
	c := r.Suite.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Namespace, Labels: map[string]string{"quorate.dev/conformance": r.Scenario.Name}}}); err != nil {
		return err
	}
	if r.Scenario.Install != nil {
		if err := r.Scenario.Install(ctx, r); err != nil {
			return fmt.Errorf("installing the operator: %w", err)
		}
	}
	version, image := r.Suite.Opts.EtcdVersion, r.Suite.Opts.EtcdImage
	if r.Scenario.Version != "" {
		if image != "" {
			return fmt.Errorf("%s starts at etcd %s and changes version, which an --etcd-image override (one image for every version) cannot do: drop --etcd-image, or leave this scenario out with --skip-labels=scenario=%s", r.Scenario.Name, r.Scenario.Version, r.Scenario.Name)
		}
		version = r.Scenario.Version
	}
	ec := &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: r.Cluster, Namespace: r.Namespace},
		Spec: v1alpha1.EtcdClusterSpec{Replicas: r.Scenario.Replicas, Version: version, Image: image,
			Storage: v1alpha1.StorageSpec{Size: resource.MustParse("256Mi")}},
	}
	if err := c.Create(ctx, ec); err != nil {
		return fmt.Errorf("creating the EtcdCluster: %w", err)
	}
	if err := r.WaitSettled(ctx, r.Scenario.Replicas, 5*time.Minute); err != nil {
		return err
	}
	if err := c.Create(ctx, r.workloadPod()); err != nil {
		return fmt.Errorf("creating the workload: %w", err)
	}
	return r.waitFor(ctx, "the workload pod to be ready", 3*time.Minute, func() error {
		p := &corev1.Pod{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: "workload"}, p); err != nil {
			return err
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("workload pod is %s", p.Status.Phase)
	})
}

func (r *Run) workloadPod() *corev1.Pod {
	rate := r.Suite.Opts.Rate
	if r.Scenario.Rate > 0 {
		rate = r.Scenario.Rate
	}
	clientHost := names.ClientHost(r.Cluster, r.Namespace)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "workload", Namespace: r.Namespace, Labels: map[string]string{"app": "quorate-workload"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "workload",
				Image: r.Suite.Opts.WorkloadImage,
				Args: []string{
					"--endpoints=https://" + clientHost + ":2379",
					"--tls-dir=/tls",
					"--server-name=" + clientHost,
					"--peer-service=" + names.PeerService(r.Cluster) + "." + r.Namespace + ".svc",
					fmt.Sprintf("--clients=%d", r.Suite.Opts.Clients),
					fmt.Sprintf("--rate=%g", rate),
				},
				Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 2},
				VolumeMounts:   []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532)},
			}},
			Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: names.ClientSecret(r.Cluster)}}}},
		},
	}
}

// call invokes the workload through the API server's pod proxy.
func (r *Run) call(ctx context.Context, method, path string, out any) error {
	req := r.Suite.Clientset.CoreV1().RESTClient().Verb(method).Namespace(r.Namespace).Resource("pods").Name("workload:8080").SubResource("proxy").Suffix(path)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	body, err := req.DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("workload %s %s: %w", method, path, err)
	}
	if out != nil {
		return json.Unmarshal(body, out)
	}
	return nil
}

// wait blocks for d while the load runs (a measurement window, not a wait for a condition).
func wait(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (r *Run) progress(ctx context.Context, start time.Time) {
	if r.Suite.Opts.Quiet {
		return
	}
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			var st struct{ OK, Fail, Unknown, Samples int }
			if err := r.call(ctx, "GET", "stats", &st); err != nil {
				continue
			}
			r.mu.Lock()
			phase := r.phase
			r.mu.Unlock()
			fmt.Fprintf(os.Stderr, "[%s] %4.0fs ok=%d fail=%d unknown=%d samples=%d  %s\n", r.Scenario.Name, time.Since(start).Seconds(), st.OK, st.Fail, st.Unknown, st.Samples, phase)
		}
	}
}

func (r *Run) execute(ctx context.Context) {
	t, sc := r.T, r.Scenario
	res := report.Scenario{Name: sc.Name, Labels: sc.Labels, Start: time.Now(), Budget: sc.Budget, Expected: map[string]bool{}}
	for _, c := range report.Checkers {
		res.Expected[c] = true
	}
	for c, want := range sc.Expect {
		res.Expected[c] = want
	}
	defer func() { res.Duration = time.Since(res.Start); r.Suite.add(res) }()

	if err := r.call(ctx, "POST", "start", nil); err != nil {
		res.Error = err.Error()
		t.Fatal(err)
	}
	pctx, stopProgress := context.WithCancel(ctx)
	go r.progress(pctx, res.Start)
	r.Phase("steady load before the scenario")
	wait(ctx, r.Suite.Opts.Duration)
	var stepErr error
	if sc.Steps != nil {
		stepErr = sc.Steps(ctx, r)
	}
	r.Phase("steady load after the scenario")
	wait(ctx, r.Suite.Opts.Duration)
	stopProgress()
	if err := r.call(ctx, "POST", "stop", nil); err != nil {
		res.Error = err.Error()
		t.Fatal(err)
	}
	var h history.History
	if err := r.call(ctx, "GET", "history", &h); err != nil {
		res.Error = err.Error()
		t.Fatal(err)
	}
	var final history.Final
	if err := r.call(ctx, "POST", "final", &final); err != nil {
		final = history.Final{Error: err.Error()}
	}
	h.Final, h.Scenario = &final, sc.Name
	h.Events = append(r.clusterEvents(ctx), r.events...)
	sort.Slice(h.Events, func(i, j int) bool { return h.Events[i].Time < h.Events[j].Time })
	res.Events = h.Events
	if stepErr != nil {
		res.Error = "scenario steps failed: " + stepErr.Error()
		t.Errorf("%s: %v", sc.Name, stepErr)
	}

	dir := r.Suite.Opts.ReportDir
	_ = os.MkdirAll(dir, 0o755)
	res.History = "history-" + sanitize(sc.Name) + ".json"
	if err := h.Save(filepath.Join(dir, res.History)); err != nil {
		t.Logf("saving the history: %v", err)
	}
	lin := linearizability.Check(&h, 3*time.Minute, dir)
	av, stats := availability.Check(&h, sc.Budget)
	res.Verdicts = []history.Verdict{lin, lostwrites.Check(&h), av, splitbrain.Check(&h, splitbrain.DefaultBounds)}
	res.Stats = stats
	res.AddLatencies(&h, 4000)
	for i, v := range res.Verdicts {
		want := res.Expected[v.Checker]
		t.Logf("%s (expected %s)", v, map[bool]string{true: "pass", false: "fail"}[want])
		if v.Pass != want {
			// Name the faults that were active: during the longest write gap for availability,
			// during the run for the others.
			var from, to int64
			if v.Checker == "availability" {
				from, to = stats.GapStart, stats.GapEnd
			}
			if active := faultsDuring(h.Events, from, to); len(active) > 0 {
				v.Details = append(v.Details, "faults active: "+strings.Join(active, "; "))
				res.Verdicts[i] = v
			}
			t.Errorf("%s: %s verdict %v, expected pass=%v: %s %v", sc.Name, v.Checker, v.Pass, want, v.Reason, v.Details)
		}
		if part, ok := sc.ExpectReason[v.Checker]; ok && !strings.Contains(v.Reason, part) {
			t.Errorf("%s: %s verdict gives the reason %q, expected one about %q", sc.Name, v.Checker, v.Reason, part)
			res.Error = fmt.Sprintf("%s verdict for the wrong reason: %s", v.Checker, v.Reason)
		}
	}
}

// clusterEvents turns the operator's Events about the EtcdCluster into timeline events.
func (r *Run) clusterEvents(ctx context.Context) []history.Event {
	var list corev1.EventList
	if err := r.Suite.Client.List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
		return nil
	}
	var out []history.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != "EtcdCluster" {
			continue
		}
		switch e.Reason {
		case "MemberAdded", "MemberPromoted", "MemberRemoved", "LeaderMoved", "MemberRestarting", "ClusterBootstrapped":
		default:
			continue
		}
		ts := e.EventTime.Time
		if ts.IsZero() {
			ts = e.FirstTimestamp.Time
		}
		if e.LastTimestamp.After(ts) {
			ts = e.LastTimestamp.Time
		}
		out = append(out, history.Event{Time: ts.UnixNano(), Kind: "membership", Name: e.Reason, Text: e.Message})
	}
	return out
}

// GetCluster reads the EtcdCluster.
func (r *Run) GetCluster(ctx context.Context) (*v1alpha1.EtcdCluster, error) {
	ec := &v1alpha1.EtcdCluster{}
	return ec, r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: r.Cluster}, ec)
}

func (r *Run) waitFor(ctx context.Context, what string, timeout time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = cond(); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s waiting for %s: %v", timeout, what, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// WaitSettled waits until the cluster has n healthy voting members and nothing in progress.
func (r *Run) WaitSettled(ctx context.Context, n int32, timeout time.Duration) error {
	return r.waitFor(ctx, fmt.Sprintf("%d healthy members and no change in progress", n), timeout, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		if ec.Status.ObservedGeneration != ec.Generation {
			return fmt.Errorf("status is for generation %d of %d", ec.Status.ObservedGeneration, ec.Generation)
		}
		a := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionAvailable)
		p := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionProgressing)
		if a == nil || a.Status != metav1.ConditionTrue || p == nil || p.Status != metav1.ConditionFalse || ec.Status.ReadyMembers != n || ec.Status.Replicas != n {
			return fmt.Errorf("ready %d/%d, Available %v, Progressing %v", ec.Status.ReadyMembers, n, a, p)
		}
		return nil
	})
}

// Scale changes the number of members and waits until the cluster settles.
func (r *Run) Scale(ctx context.Context, n int32) error {
	if err := r.SetReplicas(ctx, n); err != nil {
		return err
	}
	return r.WaitSettled(ctx, n, 5*time.Minute)
}

// SetReplicas asks for n members without waiting for them.
func (r *Run) SetReplicas(ctx context.Context, n int32) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	from := ec.Spec.Replicas
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Replicas = n
	r.Phase(fmt.Sprintf("scaling %d -> %d", from, n))
	r.Event("action", "scale", fmt.Sprintf("replicas %d -> %d", from, n))
	return r.Suite.Client.Patch(ctx, ec, patch)
}

// UpgradeEtcd changes the cluster's etcd version and waits until every member reports it (as
// etcd itself does, in status.members) and the cluster has settled. Each member's pod must have
// been replaced once, and announced with a MemberRestarting event: the operator rolls the
// members one at a time, the leader last.
func (r *Run) UpgradeEtcd(ctx context.Context, to string) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	before, err := r.memberPods(ctx)
	if err != nil {
		return err
	}
	from, n := ec.Spec.Version, ec.Spec.Replicas
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Version = to
	r.Phase(fmt.Sprintf("upgrading etcd %s -> %s", from, to))
	r.Event("action", "etcd-upgrade", fmt.Sprintf("version %s -> %s", from, to))
	if err := r.Suite.Client.Patch(ctx, ec, patch); err != nil {
		return err
	}
	err = r.waitFor(ctx, fmt.Sprintf("every member to run etcd %s", to), 10*time.Minute, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		var behind []string
		for _, m := range ec.Status.Members {
			if m.Version != to {
				behind = append(behind, m.Name+"="+m.Version)
			}
		}
		if len(behind) > 0 || ec.Status.CurrentVersion != to {
			return fmt.Errorf("current version %q, members not at %s: %v", ec.Status.CurrentVersion, to, behind)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.WaitSettled(ctx, n, 5*time.Minute); err != nil {
		return err
	}
	problems, err := r.podProblems(ctx, before, func(m string, b, a memberPod, announced bool) string {
		switch {
		case a.UID == b.UID:
			return m + "'s pod was not replaced, yet it runs " + to
		case !announced:
			return m + "'s pod was replaced without a MemberRestarting event"
		}
		return ""
	})
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("etcd upgrade %s -> %s: %s", from, to, strings.Join(problems, "; "))
	}
	r.T.Logf("etcd %s -> %s: all %d members replaced one at a time, each announced", from, to, len(before))
	return nil
}

// Leader returns the name of the current leader.
func (r *Run) Leader(ctx context.Context) (string, error) {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return "", err
	}
	if ec.Status.Leader == "" {
		return "", fmt.Errorf("no leader in status")
	}
	return ec.Status.Leader, nil
}

// Follower returns the name of a member that is not the leader.
func (r *Run) Follower(ctx context.Context) (string, error) {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return "", err
	}
	for _, m := range ec.Status.Members {
		if !m.IsLeader && !m.Learner {
			return m.Name, nil
		}
	}
	return "", fmt.Errorf("no follower in status")
}

// DeletePod deletes a member's pod (as a node failure or an eviction would) and waits until
// the cluster has n healthy members again.
func (r *Run) DeletePod(ctx context.Context, member string, n int32) error {
	r.Phase("deleting pod " + member)
	end := r.Fault("pod-deleted", "deleted the pod of member "+member)
	err := r.Suite.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: member}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	// The fault lasts until the member's new pod is ready.
	err = r.waitFor(ctx, "the pod of "+member+" to come back", 5*time.Minute, func() error {
		p := &corev1.Pod{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: member}, p); err != nil {
			return err
		}
		if !p.DeletionTimestamp.IsZero() {
			return fmt.Errorf("old pod still terminating")
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("pod not ready")
	})
	end()
	if err != nil {
		return err
	}
	return r.WaitSettled(ctx, n, 5*time.Minute)
}

// DeleteVolume deletes a member's PVC, as losing its disk would; the operator must replace
// the member. It waits until the cluster has n healthy members and the member is gone.
func (r *Run) DeleteVolume(ctx context.Context, member string, n int32) error {
	r.Phase("deleting the volume of " + member)
	end := r.Fault("volume-lost", "deleted the PersistentVolumeClaim of member "+member)
	defer end()
	err := r.Suite.Client.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: member}})
	if err != nil {
		return err
	}
	err = r.waitFor(ctx, member+" to be replaced", 5*time.Minute, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		for _, m := range ec.Status.Members {
			if m.Name == member {
				return fmt.Errorf("%s is still a member", member)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return r.WaitSettled(ctx, n, 5*time.Minute)
}

// StopMember deletes a member's pod without waiting for it to come back (with the operator
// paused, it does not).
func (r *Run) StopMember(ctx context.Context, member string) error {
	err := r.Suite.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: member}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return r.waitFor(ctx, "the pod of "+member+" to be gone", 2*time.Minute, func() error {
		err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: member}, &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// Hold keeps a fault in place for d while the load runs.
func (r *Run) Hold(ctx context.Context, d time.Duration) { wait(ctx, d) }

// SetPaused pauses or resumes the operator's changes to the cluster.
func (r *Run) SetPaused(ctx context.Context, paused bool) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Paused = paused
	r.Event("action", "paused", fmt.Sprintf("spec.paused = %v", paused))
	return r.Suite.Client.Patch(ctx, ec, patch)
}
