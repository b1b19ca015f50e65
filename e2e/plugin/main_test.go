//go:build e2e

// Package plugin runs every command of the kubectl plugin (bin/kubectl-quorate, or $PLUGIN)
// against a real cluster under the conformance workload, as a user would: with the suite's
// kubeconfig, through the CRDs and port-forwards. `make e2e-plugin` builds and runs it on a
// local cluster with the S3 store (--install-s3) for the backup and restore.
package plugin

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/plugin"
)

var (
	testenv env.Environment
	suite   *framework.Suite
	opts    = framework.RegisterFlags()
)

func TestMain(m *testing.M) {
	var err error
	testenv, suite, err = framework.Setup(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(testenv.Run(m))
}

// TestPlugin runs the plugin scenario.
func TestPlugin(t *testing.T) {
	testenv.Test(t, []features.Feature{suite.Feature(Plugin())}...)
}

// binary is the plugin to run: $PLUGIN, or bin/kubectl-quorate of the repository.
func binary() string {
	if p := os.Getenv("PLUGIN"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "bin", "kubectl-quorate")
}

// quorate runs the plugin with the suite's kubeconfig in the run's namespace and returns its
// standard output; an exit status other than 0 is an error that holds its standard error.
func quorate(ctx context.Context, r *framework.Run, args ...string) (string, error) {
	// The connection flags go before "--", after which etcdctl's arguments follow.
	pre, post := args, []string(nil)
	if i := indexOf(args, "--"); i >= 0 {
		pre, post = args[:i], args[i:]
	}
	full := append(append([]string{}, pre...), "-n", r.Namespace)
	if kc := r.Suite.Kubeconfig(); kc != "" {
		full = append(full, "--kubeconfig", kc)
	}
	full = append(full, post...)
	cmd := exec.CommandContext(ctx, binary(), full...)
	if e := os.Getenv("ETCDCTL"); e != "" {
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(e)+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	r.Event("action", "kubectl quorate", strings.Join(args, " "))
	err := cmd.Run()
	transcribe(r, args, out.String(), errOut.String(), err)
	if err != nil {
		return out.String(), fmt.Errorf("kubectl quorate %s: %w\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// transcribe appends the command, its progress (stderr) and its output to transcript.md in
// the report directory: what docs/plugin.md shows is taken from there.
func transcribe(r *framework.Run, args []string, out, errOut string, runErr error) {
	dir := r.Suite.Opts.ReportDir
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.T.Logf("transcript: %v", err)
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, "transcript.md"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		r.T.Logf("transcript: %v", err)
		return
	}
	defer func() { _ = f.Close() }()
	var b strings.Builder
	fmt.Fprintf(&b, "```console\n$ kubectl quorate %s\n%s%s", strings.Join(args, " "), errOut, out)
	if runErr != nil {
		fmt.Fprintf(&b, "(%v)\n", runErr)
	}
	b.WriteString("```\n\n")
	if _, err := f.WriteString(b.String()); err != nil {
		r.T.Logf("transcript: %v", err)
	}
}

func indexOf(args []string, s string) int {
	for i, a := range args {
		if a == s {
			return i
		}
	}
	return -1
}

// Plugin: every command of the plugin against a 3-member cluster under load. Its changes
// go through the operator, so the cluster stays within the planned budget throughout.
func Plugin() framework.Scenario {
	var backup string
	report := filepath.Join(os.TempDir(), fmt.Sprintf("quorate-plugin-report-%d.zip", time.Now().UnixNano()))
	return framework.Scenario{Name: "plugin", Labels: map[string]string{label.Suite: "plugin"}, Replicas: 3, Class: framework.Planned,
		Steps: []framework.Step{
			{Name: "status -o json shows three healthy members with their revisions, a leader and the certificates", Do: func(ctx context.Context, r *framework.Run) error {
				out, err := quorate(ctx, r, "status", r.Cluster, "-o", "json")
				if err != nil {
					return err
				}
				var st plugin.Status
				if err := json.Unmarshal([]byte(out), &st); err != nil {
					return fmt.Errorf("status -o json: %w\n%s", err, out)
				}
				leaders := 0
				for _, m := range st.Members {
					if !m.Healthy || m.Revision == 0 || m.DBSizeInUse == 0 || m.Pod == "" || m.Node == "" {
						return fmt.Errorf("member %+v: want healthy, with a revision, DB in use, pod and node (problems: %v)", m, st.Problems)
					}
					if m.Role == plugin.RoleLeader {
						leaders++
					}
				}
				if len(st.Members) != 3 || leaders != 1 || st.Leader == "" || st.ClusterID == "" || len(st.Certificates) == 0 || len(st.Problems) > 0 {
					return fmt.Errorf("status: %d members, %d leaders, leader %q, cluster ID %q, %d certificates, problems %v", len(st.Members), leaders, st.Leader, st.ClusterID, len(st.Certificates), st.Problems)
				}
				_, err = quorate(ctx, r, "status", r.Cluster, "--color", "always")
				return err
			}},
			{Name: "etcdctl lists the members and writes a key", Do: func(ctx context.Context, r *framework.Run) error {
				out, err := quorate(ctx, r, "etcdctl", r.Cluster, "--", "member", "list")
				if err != nil {
					return err
				}
				if n := strings.Count(strings.TrimSpace(out), "\n") + 1; n != 3 {
					return fmt.Errorf("etcdctl member list: %d lines, want 3:\n%s", n, out)
				}
				if _, err := quorate(ctx, r, "etcdctl", r.Cluster, "--", "put", "/plugin-e2e", "v"); err != nil {
					return err
				}
				out, err = quorate(ctx, r, "etcdctl", r.Cluster, "--", "get", "/plugin-e2e", "--print-value-only")
				if err != nil {
					return err
				}
				if strings.TrimSpace(out) != "v" {
					return fmt.Errorf("etcdctl get /plugin-e2e: %q, want v", out)
				}
				return nil
			}},
			{Name: "pause, then resume", Do: func(ctx context.Context, r *framework.Run) error {
				if _, err := quorate(ctx, r, "pause", r.Cluster, "--timeout", "3m"); err != nil {
					return err
				}
				c, err := r.GetCluster(ctx)
				if err != nil {
					return err
				}
				if p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing); !c.Spec.Paused || p == nil || p.Reason != v1alpha1.ReasonPaused {
					return fmt.Errorf("after pause: spec.paused %t, Progressing %+v", c.Spec.Paused, p)
				}
				if _, err := quorate(ctx, r, "resume", r.Cluster, "--timeout", "3m"); err != nil {
					return err
				}
				if c, err = r.GetCluster(ctx); err != nil {
					return err
				}
				if p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing); c.Spec.Paused || p == nil || p.Reason == v1alpha1.ReasonPaused {
					return fmt.Errorf("after resume: spec.paused %t, Progressing %+v", c.Spec.Paused, p)
				}
				return nil
			}},
			{Name: "renew-certificates renews every leaf certificate", Do: func(ctx context.Context, r *framework.Run) error {
				before := &corev1.Secret{}
				if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: r.Cluster + "-server-tls"}, before); err != nil {
					return err
				}
				if _, err := quorate(ctx, r, "renew-certificates", r.Cluster, "--token", "plugin-e2e", "--timeout", "5m"); err != nil {
					return err
				}
				c, err := r.GetCluster(ctx)
				if err != nil {
					return err
				}
				after := &corev1.Secret{}
				if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: r.Cluster + "-server-tls"}, after); err != nil {
					return err
				}
				if c.Status.TLS == nil || c.Status.TLS.RenewedToken != "plugin-e2e" || bytes.Equal(before.Data["tls.crt"], after.Data["tls.crt"]) {
					return fmt.Errorf("after renew-certificates: status.tls %+v; server certificate changed: %t", c.Status.TLS, !bytes.Equal(before.Data["tls.crt"], after.Data["tls.crt"]))
				}
				return r.WaitSettled(ctx, 3, 5*time.Minute)
			}},
			{Name: "backup --to the S3 store", Do: func(ctx context.Context, r *framework.Run) error {
				if err := r.UseS3(ctx); err != nil {
					return err
				}
				s := framework.Storage("backups")
				out, err := quorate(ctx, r, "backup", r.Cluster, "--to", s.BucketURL, "--credentials-secret", s.CredentialsSecret, "--timeout", "5m")
				if err != nil {
					return err
				}
				name, _, ok := strings.Cut(strings.TrimPrefix(out, "backup "), ":")
				if !ok {
					return fmt.Errorf("backup printed %q", out)
				}
				b := &v1alpha1.EtcdBackup{}
				if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: name}, b); err != nil {
					return err
				}
				if b.Status.Phase != v1alpha1.BackupCompleted {
					return fmt.Errorf("EtcdBackup %s is %s", name, b.Status.Phase)
				}
				backup = name
				return nil
			}},
			{Name: "restore the backup into a new cluster", Do: func(ctx context.Context, r *framework.Run) error {
				restored := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: "restored"}}
				r.OnCleanup(func(ctx context.Context) error { return r.DeleteAndWait(ctx, restored) })
				b := &v1alpha1.EtcdBackup{}
				if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: backup}, b); err != nil {
					return err
				}
				// A revision no backup holds is refused, and nothing is created.
				if _, err := quorate(ctx, r, "restore", backup, "--into", "restored", "--to-revision", strconv.FormatInt(b.Status.Revision+1, 10), "--storage-size", "256Mi"); err == nil {
					return fmt.Errorf("restore --to-revision %d (backup %s holds %d) went ahead", b.Status.Revision+1, backup, b.Status.Revision)
				}
				if err := r.Suite.Client.Get(ctx, client.ObjectKeyFromObject(restored), restored); !apierrors.IsNotFound(err) {
					return fmt.Errorf("a refused restore left EtcdCluster restored behind (%v)", err)
				}
				if _, err := quorate(ctx, r, "restore", backup, "--into", "restored", "--to-revision", strconv.FormatInt(b.Status.Revision, 10), "--storage-size", "256Mi", "--timeout", "10m"); err != nil {
					return err
				}
				out, err := quorate(ctx, r, "etcdctl", "restored", "--", "get", "/plugin-e2e", "--print-value-only")
				if err != nil {
					return err
				}
				if strings.TrimSpace(out) != "v" {
					return fmt.Errorf("the restored cluster holds %q at /plugin-e2e, want v", out)
				}
				return nil
			}},
			{Name: "hibernate the restored cluster, then wake it", Do: func(ctx context.Context, r *framework.Run) error {
				if _, err := quorate(ctx, r, "hibernate", "restored", "--timeout", "5m"); err != nil {
					return err
				}
				var pods corev1.PodList
				if err := r.Suite.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels{names.LabelCluster: "restored"}); err != nil {
					return err
				}
				if len(pods.Items) != 0 {
					return fmt.Errorf("hibernated, the restored cluster still has %d pods", len(pods.Items))
				}
				if _, err := quorate(ctx, r, "wake", "restored", "--timeout", "5m"); err != nil {
					return err
				}
				out, err := quorate(ctx, r, "etcdctl", "restored", "--", "get", "/plugin-e2e", "--print-value-only")
				if err != nil {
					return err
				}
				if strings.TrimSpace(out) != "v" {
					return fmt.Errorf("the woken cluster holds %q at /plugin-e2e, want v", out)
				}
				return nil
			}},
			{Name: "fence a follower of the loaded cluster, then unfence it", Do: func(ctx context.Context, r *framework.Run) error {
				c, err := r.GetCluster(ctx)
				if err != nil {
					return err
				}
				follower := ""
				for _, m := range c.Status.Members {
					if !m.IsLeader && follower == "" {
						follower = m.Name
					}
				}
				if follower == "" {
					return fmt.Errorf("no follower in %+v", c.Status.Members)
				}
				fenced := func(want bool) error {
					c, err := r.GetCluster(ctx)
					if err != nil {
						return err
					}
					for _, m := range c.Status.Members {
						if m.Name == follower && m.Fenced == want {
							return nil
						}
					}
					return fmt.Errorf("member %s is not fenced=%t: %+v", follower, want, c.Status.Members)
				}
				if _, err := quorate(ctx, r, "fence", r.Cluster, follower, "--timeout", "5m"); err != nil {
					return err
				}
				if err := fenced(true); err != nil {
					return err
				}
				if _, err := quorate(ctx, r, "unfence", r.Cluster, follower, "--timeout", "5m"); err != nil {
					return err
				}
				return fenced(false)
			}},
			{Name: "report: a zip with the CRs, logs and etcd's view, and no Secret value", Do: func(ctx context.Context, r *framework.Run) error {
				defer func() { _ = os.Remove(report) }()
				if _, err := quorate(ctx, r, "report", r.Cluster, "-f", report, "--operator-namespace", r.Suite.Opts.OperatorNS); err != nil {
					return err
				}
				files, err := readZip(report)
				if err != nil {
					return err
				}
				for _, f := range []string{"cluster/etcdcluster.yaml", "cluster/events.yaml", "cluster/secrets.yaml", "etcd/members.json", "etcd/endpoint-status.json"} {
					if _, ok := files[f]; !ok {
						return fmt.Errorf("the report has no %s", f)
					}
				}
				var sl corev1.SecretList
				if err := r.Suite.Client.List(ctx, &sl, client.InNamespace(r.Namespace)); err != nil {
					return err
				}
				for name, data := range files {
					for _, s := range sl.Items {
						for k, v := range s.Data {
							if len(v) >= 8 && (bytes.Contains(data, v) || bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString(v)))) {
								return fmt.Errorf("%s of the report holds the value of Secret %s key %s", name, s.Name, k)
							}
						}
					}
				}
				op := report + ".operator.zip"
				defer func() { _ = os.Remove(op) }()
				_, err = quorate(ctx, r, "report", "operator", "-f", op, "--operator-namespace", r.Suite.Opts.OperatorNS)
				return err
			}},
			{Name: "disk-check measures the default StorageClass", Do: func(ctx context.Context, r *framework.Run) error {
				out, err := quorate(ctx, r, "disk-check", "--timeout", "5m", "--operator-namespace", r.Suite.Opts.OperatorNS)
				// The verdict depends on the machine's disk; the measurement must be there.
				if !strings.Contains(out, "fdatasync p99") {
					return fmt.Errorf("disk-check printed no measurement: %q (%v)", out, err)
				}
				var pl corev1.PodList
				if err := r.Suite.Client.List(ctx, &pl, client.InNamespace(r.Namespace), client.HasLabels{plugin.LabelDiskCheck}); err != nil {
					return err
				}
				if len(pl.Items) != 0 {
					return fmt.Errorf("the disk-check pod %s was left behind", pl.Items[0].Name)
				}
				return nil
			}},
			{Name: "defrag defragments every member once, under load", Do: func(ctx context.Context, r *framework.Run) error {
				before, err := r.GetCluster(ctx)
				if err != nil {
					return err
				}
				if _, err := quorate(ctx, r, "defrag", r.Cluster, "--timeout", "5m"); err != nil {
					return err
				}
				c, err := r.GetCluster(ctx)
				if err != nil {
					return err
				}
				if c.Status.Maintenance == nil {
					return fmt.Errorf("no status.maintenance after defrag")
				}
				d := c.Status.Maintenance.Defrag
				if d == nil || d.Token != c.Spec.Maintenance.DefragNow || d.CompletionTime == nil {
					return fmt.Errorf("status.maintenance.defrag %+v does not record spec.maintenance.defragNow %q as completed", d, c.Spec.Maintenance.DefragNow)
				}
				var want []string
				for _, m := range before.Status.Members {
					want = append(want, m.Name)
				}
				got := slices.Clone(d.Defragmented)
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					return fmt.Errorf("defragmented %v, want every member once: %v", d.Defragmented, want)
				}
				// The order (followers first, the leader after leadership moved away) is the
				// planner's and the envtest's to show: under load the leader may change by itself.
				return r.WaitSettled(ctx, 3, 5*time.Minute)
			}},
			{Name: "move-leader --to a follower, then to a name that is no member (refused)", Do: func(ctx context.Context, r *framework.Run) error {
				c, err := r.GetCluster(ctx)
				if err != nil {
					return err
				}
				to := ""
				for _, m := range c.Status.Members {
					if !m.IsLeader && m.Healthy && to == "" {
						to = m.Name
					}
				}
				if to == "" {
					return fmt.Errorf("no healthy follower in %+v", c.Status.Members)
				}
				if _, err := quorate(ctx, r, "move-leader", r.Cluster, "--to", to, "--timeout", "5m"); err != nil {
					return err
				}
				if c, err = r.GetCluster(ctx); err != nil {
					return err
				}
				if c.Status.Maintenance == nil || c.Status.Maintenance.MoveLeader == nil {
					return fmt.Errorf("no status.maintenance.moveLeader after move-leader")
				}
				if ml := c.Status.Maintenance.MoveLeader; ml.Result != v1alpha1.LeaderMoveMoved || ml.To != to {
					return fmt.Errorf("status.maintenance.moveLeader %+v, want Moved to %s", ml, to)
				}
				if err := r.WaitFor(ctx, to+" leading", time.Minute, func() error {
					c, err := r.GetCluster(ctx)
					if err != nil {
						return err
					}
					if c.Status.Leader != to {
						return fmt.Errorf("leader %s", c.Status.Leader)
					}
					return nil
				}); err != nil {
					return err
				}
				if _, err := quorate(ctx, r, "move-leader", r.Cluster, "--to", r.Cluster+"-9", "--token", "e2e-refused", "--timeout", "2m"); err == nil {
					return fmt.Errorf("move-leader --to %s-9 succeeded, want it refused", r.Cluster)
				}
				if c, err = r.GetCluster(ctx); err != nil {
					return err
				}
				if ml := c.Status.Maintenance.MoveLeader; ml == nil || ml.Token != "e2e-refused" || ml.Result != v1alpha1.LeaderMoveRefused {
					return fmt.Errorf("status.maintenance.moveLeader %+v, want Refused", ml)
				}
				return r.WaitSettled(ctx, 3, 5*time.Minute)
			}},
		}}
}

func readZip(path string) (map[string][]byte, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = zr.Close() }()
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			return nil, err
		}
		files[f.Name] = data
	}
	return files, nil
}
