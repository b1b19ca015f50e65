// Package apitest runs the plugin against a real API server (envtest): the patches of pause,
// resume and renew-certificates as the API server applies and validates them, and the
// redaction of a support report built from real Secrets.
package apitest

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/plugin"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// The envtest API server is started by the first test that needs it and stopped by TestMain.
var (
	apiOnce sync.Once
	apiEnv  *envtest.Environment
	apiCfg  *rest.Config
	apiErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if apiEnv != nil {
		_ = apiEnv.Stop()
	}
	os.Exit(code)
}

// apiServer returns a client of a real API server with Quorate's CRDs, and a fresh namespace.
func apiServer(t *testing.T) (client.Client, string) {
	t.Helper()
	apiOnce.Do(func() {
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			apiErr = fmt.Errorf("KUBEBUILDER_ASSETS is not set: run these tests with `make test`, or set it to the envtest binaries")
			return
		}
		apiEnv = &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
		apiCfg, apiErr = apiEnv.Start()
	})
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	cl, err := client.New(apiCfg, client.Options{Scheme: plugin.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plugin-"}}
	if err := cl.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return cl, ns.Name
}

func realEnv(t *testing.T, ns string) (*plugin.Env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	env, err := plugin.EnvFor(apiCfg, ns, out, errOut)
	if err != nil {
		t.Fatal(err)
	}
	env.Poll = 10 * time.Millisecond
	return env, out, errOut
}

func newCluster(ns, name string) *v1alpha1.EtcdCluster {
	return &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.EtcdClusterSpec{Replicas: 3, Version: "3.6.16", Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}}}
}

// playOperator answers a change of the cluster once until(c) holds: it records the cluster's
// generation as observed and lets act change the status, as the operator would.
func playOperator(t *testing.T, cl client.Client, key client.ObjectKey, until func(*v1alpha1.EtcdCluster) bool, act func(*v1alpha1.EtcdCluster)) chan error {
	done := make(chan error, 1)
	go func() {
		done <- wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			c := &v1alpha1.EtcdCluster{}
			if err := cl.Get(ctx, key, c); err != nil {
				return false, err
			}
			if !until(c) {
				return false, nil
			}
			c.Status.ObservedGeneration = c.Generation
			act(c)
			return true, cl.Status().Update(ctx, c)
		})
	}()
	return done
}

func TestPauseResumeAgainstAPIServer(t *testing.T) {
	cl, ns := apiServer(t)
	ctx := context.Background()
	c := newCluster(ns, "a")
	if err := cl.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(c)
	env, _, _ := realEnv(t, ns)
	progressing := func(reason string) func(*v1alpha1.EtcdCluster) {
		return func(c *v1alpha1.EtcdCluster) {
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: reason, Message: "m", ObservedGeneration: c.Generation})
		}
	}

	op := playOperator(t, cl, key, func(c *v1alpha1.EtcdCluster) bool { return c.Spec.Paused }, progressing(v1alpha1.ReasonPaused))
	if err := env.SetPaused(ctx, "a", true, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := <-op; err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	if !c.Spec.Paused || c.Generation != 2 {
		t.Errorf("after pause: spec.paused %t, generation %d; want true, 2", c.Spec.Paused, c.Generation)
	}

	op = playOperator(t, cl, key, func(c *v1alpha1.EtcdCluster) bool { return !c.Spec.Paused }, progressing(v1alpha1.ReasonSettled))
	if err := env.SetPaused(ctx, "a", false, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := <-op; err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.Paused || c.Generation != 3 {
		t.Errorf("after resume: spec.paused %t, generation %d; want false, 3", c.Spec.Paused, c.Generation)
	}
}

func TestRenewCertificatesAgainstAPIServer(t *testing.T) {
	cl, ns := apiServer(t)
	ctx := context.Background()
	c := newCluster(ns, "a")
	if err := cl.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	env, out, _ := realEnv(t, ns)
	env.Now = func() time.Time { return now }
	op := playOperator(t, cl, client.ObjectKeyFromObject(c), func(c *v1alpha1.EtcdCluster) bool { return c.Spec.TLS.RenewCertificates != "" }, func(c *v1alpha1.EtcdCluster) {
		c.Status.TLS = &v1alpha1.TLSStatus{RenewedToken: c.Spec.TLS.RenewCertificates}
	})
	// The token the plugin makes up passes the CRD's pattern.
	if err := env.RenewCertificates(ctx, "a", "", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := <-op; err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.TLS.RenewCertificates != "renew-20261128-120000" {
		t.Errorf("spec.tls.renewCertificates = %q", c.Spec.TLS.RenewCertificates)
	}
	if got := out.String(); got != "every generated leaf certificate was renewed\n" {
		t.Errorf("output %q", got)
	}
}

// A report holds no byte of any Secret's value: the cluster's certificates and keys made by
// internal/pki, a bucket's credentials, and the same values leaked into an Event, a pod's
// environment and a bucket URL.
func TestReportRedactsSecrets(t *testing.T) {
	cl, ns := apiServer(t)
	ctx := context.Background()
	opNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "operator-"}}
	if err := cl.Create(ctx, opNS); err != nil {
		t.Fatal(err)
	}

	ca, err := pki.NewCA("a-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Issue(names.ServerCN("a"), []string{"a-client"}, nil, pki.ServerAndClient, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	operator, err := ca.Sign(pki.Request{CommonName: names.OperatorCN, Usage: pki.ClientOnly}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secrets := []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: names.CASecretsOf("a").Cluster, Labels: names.ClusterLabels("a")}, Data: map[string][]byte{pki.KeyCACert: ca.CertPEM, pki.KeyCAKey: ca.KeyPEM}},
		{ObjectMeta: metav1.ObjectMeta{Name: names.ServerSecret("a"), Labels: names.ClusterLabels("a")}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{pki.KeyCert: server.CertPEM, pki.KeyKey: server.KeyPEM, pki.KeyCACert: ca.CertPEM}},
		{ObjectMeta: metav1.ObjectMeta{Name: names.OperatorSecret("a"), Labels: names.ClusterLabels("a")}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{pki.KeyCert: operator.CertPEM, pki.KeyKey: operator.KeyPEM, pki.KeyCACert: ca.CertPEM}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bucket-creds"}, Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("AKIAEXAMPLEKEYID1234"), "AWS_SECRET_ACCESS_KEY": []byte("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")}},
	}
	for _, s := range secrets {
		s.Namespace = ns
		if err := cl.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	c := newCluster(ns, "a")
	if err := cl.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Status.Operator = opNS.Name + "/quorate-op"
	c.Status.Members = []v1alpha1.MemberStatus{{Name: "a-0", Healthy: true, IsLeader: true}}
	if err := cl.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	backup := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a-b1"}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "a",
		Storage: v1alpha1.BackupStorage{BucketURL: "s3://bucket?region=eu", CredentialsSecret: "bucket-creds"}}}
	if err := cl.Create(ctx, backup); err != nil {
		t.Fatal(err)
	}
	leak := string(secrets[3].Data["AWS_SECRET_ACCESS_KEY"])
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a-0", Labels: names.MemberLabels("a", "a-0")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd", Env: []corev1.EnvVar{
			{Name: "AWS_SECRET_ACCESS_KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "bucket-creds"}, Key: "AWS_SECRET_ACCESS_KEY"}}},
			{Name: "LEAKED", Value: leak},
		}}}}}
	opPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: opNS.Name, Name: "quorate-op", Labels: plugin.OperatorSelector},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "quorate", Args: []string{"--key=" + string(operator.KeyPEM)}}}}}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a.1"}, InvolvedObject: corev1.ObjectReference{Kind: "EtcdCluster", Namespace: ns, Name: "a"},
		Reason: "Test", Message: "a message that leaks " + string(ca.KeyPEM) + " and " + base64.StdEncoding.EncodeToString([]byte(leak)), Type: corev1.EventTypeWarning}
	for _, o := range []client.Object{pod, opPod, ev} {
		if err := cl.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	env, _, _ := realEnv(t, ns)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var buf bytes.Buffer
	if err := env.Report(ctx, "a", plugin.ReportOptions{OperatorNamespace: opNS.Name}, &buf); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name] = data
	}

	// Every secret value, its base64 form, and every line of a PEM value.
	var forbidden []string
	for _, s := range secrets {
		for _, v := range s.Data {
			forbidden = append(forbidden, string(v), base64.StdEncoding.EncodeToString(v))
			for _, line := range strings.Split(string(v), "\n") {
				if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
					forbidden = append(forbidden, line)
				}
			}
		}
	}
	for name, data := range files {
		for _, f := range forbidden {
			if bytes.Contains(data, []byte(f)) {
				t.Errorf("%s holds secret material %.20q...", name, f)
			}
		}
		if bytes.Contains(data, []byte("PRIVATE KEY")) {
			t.Errorf("%s holds a private key block", name)
		}
	}

	// What the report does say of the Secrets: names, types, keys and owners.
	var got []plugin.SecretSummary
	if err := yaml.Unmarshal(files["cluster/secrets.yaml"], &got); err != nil {
		t.Fatal(err)
	}
	labels := names.ClusterLabels("a")
	want := []plugin.SecretSummary{
		{Name: "a-operator-tls", Type: "kubernetes.io/tls", Keys: []string{"ca.crt", "tls.crt", "tls.key"}, Labels: labels},
		{Name: "a-server-tls", Type: "kubernetes.io/tls", Keys: []string{"ca.crt", "tls.crt", "tls.key"}, Labels: labels},
		{Name: "a.ca", Type: "Opaque", Keys: []string{"ca.crt", "ca.key"}, Labels: labels},
		{Name: "bucket-creds", Type: "Opaque", Keys: []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("secrets.yaml (-want +got):\n%s", diff)
	}
	for _, f := range []string{"report.json", "cluster/etcdcluster.yaml", "cluster/etcdbackups.yaml", "cluster/events.yaml", "pods/a-0.yaml",
		"operator/pods/quorate-op.yaml", "etcd/endpoint-status.json", "problems.txt"} {
		if _, ok := files[f]; !ok {
			t.Errorf("the report has no %s", f)
		}
	}
	if !bytes.Contains(files["cluster/events.yaml"], []byte("a message that leaks "+plugin.Redacted)) {
		t.Errorf("the Event's message is not in the report with its secret redacted:\n%s", files["cluster/events.yaml"])
	}
}

// memberConn is a MemberConn to a real etcd on this machine, with the credentials it trusts.
type memberConn struct {
	endpoint string
	creds    plugin.Credentials
}

func (m memberConn) Endpoint() string                              { return m.endpoint }
func (m memberConn) Credentials() plugin.Credentials               { return m.creds }
func (m memberConn) Close() error                                  { return nil }
func (m memberConn) Status(context.Context) (etcd.Status, error)   { return etcd.Status{}, nil }
func (m memberConn) Alarms(context.Context) ([]etcd.Alarm, error)  { return nil, nil }
func (m memberConn) HashKV(context.Context) (uint32, int64, error) { return 0, 0, nil }
func (m memberConn) MemberList(context.Context) (uint64, []etcd.Member, error) {
	return 0, nil, nil
}

type opener struct{ conn memberConn }

func (o opener) Open(context.Context, *v1alpha1.EtcdCluster, string) (plugin.MemberConn, error) {
	return o.conn, nil
}

// etcdctl, from PATH, reaches a member that demands client certificates with the
// credentials the plugin read, written to a temporary directory that is gone afterwards.
func TestEtcdctlWithClientCertificates(t *testing.T) {
	cl, ns := apiServer(t)
	ctx := context.Background()
	t.Setenv("PATH", os.Getenv("KUBEBUILDER_ASSETS")+string(os.PathListSeparator)+os.Getenv("PATH"))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	ca, err := pki.NewCA("a-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// As the operator issues them: the server certificate covers 127.0.0.1, which a
	// port-forward's local end is.
	server, err := ca.Issue(names.ServerCN("a"), []string{names.ClientHost("a", ns)}, []net.IP{net.IPv4(127, 0, 0, 1)}, pki.ServerAndClient, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	operator, err := ca.Sign(pki.Request{CommonName: names.OperatorCN, Usage: pki.ClientOnly}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for n, data := range map[string][]byte{"ca.crt": ca.CertPEM, "server.crt": server.CertPEM, "server.key": server.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	member := testsupport.StartEtcdWith(t, "a-0", testsupport.EtcdOptions{TLS: true, Args: []string{"--client-cert-auth",
		"--trusted-ca-file=" + filepath.Join(dir, "ca.crt"), "--cert-file=" + filepath.Join(dir, "server.crt"), "--key-file=" + filepath.Join(dir, "server.key")}})

	c := newCluster(ns, "a")
	if err := cl.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Status.Members = []v1alpha1.MemberStatus{{Name: "a-0", Healthy: true, IsLeader: true}}
	if err := cl.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	env, out, _ := realEnv(t, ns)
	env.Etcd = opener{memberConn{endpoint: member.ClientURL, creds: plugin.Credentials{From: "a-operator-tls", CertPEM: operator.CertPEM, KeyPEM: operator.KeyPEM, CAPEM: ca.CertPEM}}}
	if code, err := env.Etcdctl(ctx, "a", "", []string{"put", "/k", "v"}); err != nil || code != 0 {
		t.Fatalf("etcdctl put: exit %d, %v", code, err)
	}
	out.Reset()
	if code, err := env.Etcdctl(ctx, "a", "", []string{"get", "/k", "--print-value-only"}); err != nil || code != 0 {
		t.Fatalf("etcdctl get: exit %d, %v", code, err)
	}
	if got := out.String(); got != "v\n" {
		t.Errorf("etcdctl get printed %q, want v", got)
	}
	// etcdctl's own failure is its exit code.
	if code, err := env.Etcdctl(ctx, "a", "", []string{"no-such-command"}); err != nil || code == 0 {
		t.Errorf("etcdctl no-such-command: exit %d, %v; want a non-zero exit", code, err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the credentials' temporary directory was left behind: %v", left)
	}
}
