package plugin

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

// ReportOptions: where the operator runs (for `report operator`, and to find its pods when a
// cluster names none), and how much of each log to take.
type ReportOptions struct {
	OperatorNamespace string
	LogLines          int64
}

// OperatorSelector selects the operator's pods as config/manager deploys them.
var OperatorSelector = names.OperatorLabels()

// SecretSummary is what a report says of a Secret: never its data.
type SecretSummary struct {
	Name   string            `json:"name"`
	Type   string            `json:"type"`
	Keys   []string          `json:"keys"`
	Owners []string          `json:"owners,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// bundle collects the report's files and the secret values that must not appear in them.
// Structured files are kept as trees until the zip is written, so that each string in them is
// scrubbed before encoding (an encoder escapes what it quotes, and an escaped value would no
// longer match its secret).
type bundle struct {
	names    []string
	files    map[string][]byte
	trees    map[string]tree
	secrets  [][]byte
	problems []string
}

// tree is a structured file: a generic JSON value, written as JSON or YAML.
type tree struct {
	v      any
	asJSON bool
}

func newBundle() *bundle { return &bundle{files: map[string][]byte{}, trees: map[string]tree{}} }

func (b *bundle) register(name string) {
	if _, ok := b.files[name]; ok {
		return
	}
	if _, ok := b.trees[name]; ok {
		return
	}
	b.names = append(b.names, name)
}

func (b *bundle) add(name string, data []byte) {
	b.register(name)
	b.files[name] = data
}

func (b *bundle) addTree(name string, v any, asJSON bool) {
	raw, err := json.Marshal(v)
	if err != nil {
		b.problem("encoding %s: %v", name, err)
		return
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		b.problem("encoding %s: %v", name, err)
		return
	}
	b.register(name)
	b.trees[name] = tree{v: generic, asJSON: asJSON}
}

func (b *bundle) addYAML(name string, v any) { b.addTree(name, v, false) }

func (b *bundle) addJSON(name string, v any) { b.addTree(name, v, true) }

// scrubTree scrubs every string of a generic JSON value, map keys too.
func scrubTree(v any, pieces [][]byte) any {
	switch t := v.(type) {
	case string:
		return string(scrub([]byte(t), pieces))
	case []any:
		for i := range t {
			t[i] = scrubTree(t[i], pieces)
		}
		return t
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[string(scrub([]byte(k), pieces))] = scrubTree(x, pieces)
		}
		return out
	}
	return v
}

func (t tree) encode(pieces [][]byte) ([]byte, error) {
	v := scrubTree(t.v, pieces)
	if t.asJSON {
		data, err := json.MarshalIndent(v, "", "  ")
		return append(data, '\n'), err
	}
	return yaml.Marshal(v)
}

func (b *bundle) problem(format string, args ...any) {
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

// learnSecret remembers a Secret's values so that the report can scrub them wherever they
// turn up (a log line, an environment variable, a command line).
func (b *bundle) learnSecret(s *corev1.Secret) {
	for _, v := range s.Data {
		b.secrets = append(b.secrets, v)
	}
	for _, v := range s.StringData {
		b.secrets = append(b.secrets, []byte(v))
	}
}

// Redacted replaces what a report leaves out.
const Redacted = "[REDACTED]"

var privateKeyPEM = regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----`)

// scrubPieces are the byte strings of the known secret values to remove: each value, its
// base64 form, and each line of a multi-line value (a PEM body), long enough not to be a
// common word.
func scrubPieces(secrets [][]byte) [][]byte {
	seen := map[string]bool{}
	var out [][]byte
	add := func(p []byte) {
		p = bytes.TrimSpace(p)
		if len(p) < 8 || seen[string(p)] {
			return
		}
		seen[string(p)] = true
		out = append(out, p)
	}
	for _, v := range secrets {
		add(v)
		add([]byte(base64.StdEncoding.EncodeToString(v)))
		for _, line := range bytes.Split(v, []byte("\n")) {
			if len(bytes.TrimSpace(line)) >= 16 && !bytes.HasPrefix(line, []byte("-----")) {
				add(line)
			}
		}
	}
	// Longest first, so that a value is removed whole before a line of it.
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// scrub removes private keys and every known secret value from data.
func scrub(data []byte, pieces [][]byte) []byte {
	data = privateKeyPEM.ReplaceAll(data, []byte(Redacted))
	for _, p := range pieces {
		data = bytes.ReplaceAll(data, p, []byte(Redacted))
	}
	return data
}

// write scrubs every file and writes the zip: the strings of structured files before they
// are encoded, and every file's bytes as written.
func (b *bundle) write(w io.Writer, now time.Time) error {
	if len(b.problems) > 0 {
		b.add("problems.txt", []byte(strings.Join(b.problems, "\n")+"\n"))
	}
	pieces := scrubPieces(b.secrets)
	zw := zip.NewWriter(w)
	for _, n := range b.names {
		data, ok := b.files[n]
		if !ok {
			var err error
			if data, err = b.trees[n].encode(pieces); err != nil {
				return fmt.Errorf("encoding %s: %w", n, err)
			}
		}
		f, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate, Modified: now})
		if err != nil {
			return err
		}
		if _, err := f.Write(scrub(data, pieces)); err != nil {
			return err
		}
	}
	return zw.Close()
}

// redactBucketURL drops the query parameters of a bucket URL that could carry credentials
// (the CRD refuses the usual names; this is a second guard).
func redactBucketURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return Redacted
	}
	u.User = nil
	q := u.Query()
	for k := range q {
		if secretishParam.MatchString(k) {
			q.Set(k, Redacted)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func redactStorage(s *v1alpha1.BackupStorage) {
	if s != nil {
		s.BucketURL = redactBucketURL(s.BucketURL)
	}
}

var secretishParam = regexp.MustCompile(`(?i)key|secret|pass|token|credential|sig`)

var secretishEnv = regexp.MustCompile(`(?i)pass|secret|token|key|credential|auth`)

// cleanPod drops managed fields and the values of environment variables whose names suggest
// credentials (their valueFrom references stay: they name a Secret, not its data).
func cleanPod(p *corev1.Pod) {
	p.ManagedFields = nil
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			for j := range cs[i].Env {
				if cs[i].Env[j].Value != "" && secretishEnv.MatchString(cs[i].Env[j].Name) {
					cs[i].Env[j].Value = Redacted
				}
			}
		}
	}
}

func summarize(s *corev1.Secret) SecretSummary {
	sum := SecretSummary{Name: s.Name, Type: string(s.Type), Labels: s.Labels}
	for k := range s.Data {
		sum.Keys = append(sum.Keys, k)
	}
	slices.Sort(sum.Keys)
	for _, o := range s.OwnerReferences {
		sum.Owners = append(sum.Owners, o.Kind+"/"+o.Name)
	}
	return sum
}

// Report writes a support bundle (zip) of a cluster, or of the operator with target
// "operator", to w. What it cannot read is listed in problems.txt; it fails only when the
// cluster itself cannot be read.
func (e *Env) Report(ctx context.Context, target string, o ReportOptions, w io.Writer) error {
	if o.OperatorNamespace == "" {
		o.OperatorNamespace = "quorate-system"
	}
	if o.LogLines == 0 {
		o.LogLines = 5000
	}
	b := newBundle()
	// Every Secret of the namespaces the report reads is learnt first, so that its values are
	// scrubbed wherever they turn up.
	namespaces := []string{o.OperatorNamespace}
	var c *v1alpha1.EtcdCluster
	if target != "operator" {
		var err error
		if c, err = e.cluster(ctx, target); err != nil {
			return err
		}
		namespaces = append([]string{c.Namespace}, namespaces...)
	}
	for _, ns := range namespaces {
		var sl corev1.SecretList
		if err := e.Client.List(ctx, &sl, client.InNamespace(ns)); err != nil {
			b.problem("listing the Secrets of %s (only their names, keys and types are reported; their values are read to scrub them): %v", ns, err)
			continue
		}
		for i := range sl.Items {
			b.learnSecret(&sl.Items[i])
		}
	}
	b.addJSON("report.json", map[string]string{"target": target, "namespace": e.Namespace, "time": e.Now().UTC().Format(time.RFC3339), "tool": "kubectl-quorate"})
	if c != nil {
		e.reportCluster(ctx, c, o, b)
	}
	e.reportOperator(ctx, c, o, b)
	return b.write(w, e.Now())
}

func (e *Env) reportCluster(ctx context.Context, c *v1alpha1.EtcdCluster, o ReportOptions, b *bundle) {
	cc := c.DeepCopy()
	cc.ManagedFields = nil
	if cc.Spec.Bootstrap != nil && cc.Spec.Bootstrap.FromBackup != nil {
		redactStorage(cc.Spec.Bootstrap.FromBackup.Storage)
	}
	b.addYAML("cluster/etcdcluster.yaml", cc)

	var bl v1alpha1.EtcdBackupList
	if err := e.Client.List(ctx, &bl, client.InNamespace(c.Namespace)); err != nil {
		b.problem("listing EtcdBackups: %v", err)
	}
	var backups []v1alpha1.EtcdBackup
	credSecrets := map[string]bool{}
	for _, x := range bl.Items {
		if x.Spec.ClusterName == c.Name {
			x.ManagedFields = nil
			credSecrets[x.Spec.Storage.CredentialsSecret] = true
			redactStorage(&x.Spec.Storage)
			backups = append(backups, x)
		}
	}
	b.addYAML("cluster/etcdbackups.yaml", backups)
	var sl v1alpha1.EtcdBackupScheduleList
	if err := e.Client.List(ctx, &sl, client.InNamespace(c.Namespace)); err != nil {
		b.problem("listing EtcdBackupSchedules: %v", err)
	}
	var schedules []v1alpha1.EtcdBackupSchedule
	for _, x := range sl.Items {
		if x.Spec.ClusterName == c.Name {
			x.ManagedFields = nil
			credSecrets[x.Spec.Storage.CredentialsSecret] = true
			redactStorage(&x.Spec.Storage)
			schedules = append(schedules, x)
		}
	}
	b.addYAML("cluster/etcdbackupschedules.yaml", schedules)
	e.reportSecrets(ctx, c, credSecrets, b)
	e.reportPods(ctx, c, o, b)
	b.addYAML("cluster/events.yaml", e.events(ctx, c.Namespace, func(ev *corev1.Event) bool {
		n := ev.InvolvedObject.Name
		return n == c.Name || strings.HasPrefix(n, c.Name+"-")
	}, b))
	e.reportEtcd(ctx, c, b)
}

// reportSecrets records the cluster's and its backups' Secrets: names, types, keys, labels
// and owners.
func (e *Env) reportSecrets(ctx context.Context, c *v1alpha1.EtcdCluster, credSecrets map[string]bool, b *bundle) {
	wanted := map[string]bool{}
	for _, cas := range []names.CASecrets{names.CASecretsOf(c.Name), names.LegacyCASecretsOf(c.Name)} {
		for _, n := range certSecrets(c, cas) {
			wanted[n] = true
		}
	}
	for n := range credSecrets {
		if n != "" {
			wanted[n] = true
		}
	}
	var secrets []SecretSummary
	var all corev1.SecretList
	if err := e.Client.List(ctx, &all, client.InNamespace(c.Namespace)); err == nil {
		for i := range all.Items {
			s := &all.Items[i]
			if wanted[s.Name] || s.Labels[names.LabelCluster] == c.Name {
				secrets = append(secrets, summarize(s))
			}
		}
	} else {
		for n := range wanted {
			s := &corev1.Secret{}
			if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: n}, s); err != nil {
				b.problem("reading Secret %s: %v", n, err)
				continue
			}
			b.learnSecret(s)
			secrets = append(secrets, summarize(s))
		}
	}
	slices.SortFunc(secrets, func(x, y SecretSummary) int { return strings.Compare(x.Name, y.Name) })
	b.addYAML("cluster/secrets.yaml", secrets)
}

// reportPods records the cluster's pods with their logs, and its volumes.
func (e *Env) reportPods(ctx context.Context, c *v1alpha1.EtcdCluster, o ReportOptions, b *bundle) {
	var pl corev1.PodList
	if err := e.Client.List(ctx, &pl, client.InNamespace(c.Namespace), client.MatchingLabels{names.LabelCluster: c.Name}); err != nil {
		b.problem("listing the cluster's pods: %v", err)
	}
	for i := range pl.Items {
		p := &pl.Items[i]
		cleanPod(p)
		b.addYAML("pods/"+p.Name+".yaml", p)
		e.reportLogs(ctx, p, o, b)
	}
	var vl corev1.PersistentVolumeClaimList
	if err := e.Client.List(ctx, &vl, client.InNamespace(c.Namespace), client.MatchingLabels{names.LabelCluster: c.Name}); err != nil {
		b.problem("listing the cluster's volumes: %v", err)
	}
	for i := range vl.Items {
		vl.Items[i].ManagedFields = nil
	}
	b.addYAML("cluster/pvcs.yaml", vl.Items)
}

func (e *Env) events(ctx context.Context, ns string, keep func(*corev1.Event) bool, b *bundle) []corev1.Event {
	var el corev1.EventList
	if err := e.Client.List(ctx, &el, client.InNamespace(ns)); err != nil {
		b.problem("listing the Events of %s: %v", ns, err)
		return nil
	}
	var out []corev1.Event
	for _, ev := range el.Items {
		if keep(&ev) {
			ev.ManagedFields = nil
			out = append(out, ev)
		}
	}
	slices.SortStableFunc(out, func(x, y corev1.Event) int { return eventTime(x).Compare(eventTime(y)) })
	return out
}

func eventTime(ev corev1.Event) time.Time {
	if !ev.LastTimestamp.IsZero() {
		return ev.LastTimestamp.Time
	}
	if !ev.EventTime.IsZero() {
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

func (e *Env) reportLogs(ctx context.Context, p *corev1.Pod, o ReportOptions, b *bundle) {
	if e.Kube == nil {
		b.problem("logs of %s: no API server connection for logs", p.Name)
		return
	}
	containers := append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...)
	for _, ct := range containers {
		for _, previous := range []bool{false, true} {
			raw, err := e.Kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: ct.Name, Previous: previous, TailLines: ptr.To(o.LogLines)}).DoRaw(ctx)
			if err != nil {
				if !previous {
					b.problem("logs of %s/%s: %v", p.Name, ct.Name, err)
				}
				continue
			}
			name := fmt.Sprintf("logs/%s/%s.log", p.Name, ct.Name)
			if previous {
				name = fmt.Sprintf("logs/%s/%s.previous.log", p.Name, ct.Name)
			}
			b.add(name, raw)
		}
	}
}

// EndpointStatus is one member's etcd status in a report.
type EndpointStatus struct {
	Member      string   `json:"member"`
	ID          string   `json:"id"`
	Leader      string   `json:"leader"`
	RaftTerm    uint64   `json:"raftTerm"`
	Revision    int64    `json:"revision"`
	Version     string   `json:"version"`
	DBSize      int64    `json:"dbSize"`
	DBSizeInUse int64    `json:"dbSizeInUse"`
	IsLearner   bool     `json:"isLearner"`
	Errors      []string `json:"errors,omitempty"`
	HashKV      uint32   `json:"hashKV"`
	HashKVRev   int64    `json:"hashKVRevision"`
}

// reportEtcd records the member list, each member's status and keyspace hash.
func (e *Env) reportEtcd(ctx context.Context, c *v1alpha1.EtcdCluster, b *bundle) {
	if e.Etcd == nil {
		b.problem("etcd: no way to reach the members")
		return
	}
	var statuses []EndpointStatus
	listed := false
	for _, m := range c.Status.Members {
		conn, err := e.Etcd.Open(ctx, c, m.Name)
		if err != nil {
			b.problem("etcd: reaching %s: %v", m.Name, err)
			continue
		}
		if !listed {
			if id, members, err := conn.MemberList(ctx); err != nil {
				b.problem("etcd: member list through %s: %v", m.Name, err)
			} else {
				type row struct {
					ID         string   `json:"id"`
					Name       string   `json:"name"`
					PeerURLs   []string `json:"peerURLs"`
					ClientURLs []string `json:"clientURLs"`
					IsLearner  bool     `json:"isLearner"`
				}
				rows := make([]row, len(members))
				for i, x := range members {
					rows[i] = row{ID: names.FormatID(x.ID), Name: x.Name, PeerURLs: x.PeerURLs, ClientURLs: x.ClientURLs, IsLearner: x.IsLearner}
				}
				b.addJSON("etcd/members.json", map[string]any{"clusterID": names.FormatID(id), "members": rows})
				listed = true
			}
			if alarms, err := conn.Alarms(ctx); err != nil {
				b.problem("etcd: alarms through %s: %v", m.Name, err)
			} else {
				b.addJSON("etcd/alarms.json", alarms)
			}
		}
		es := EndpointStatus{Member: m.Name}
		if s, err := conn.Status(ctx); err != nil {
			b.problem("etcd: status of %s: %v", m.Name, err)
		} else {
			es.ID, es.Leader, es.RaftTerm, es.Revision, es.Version = names.FormatID(s.MemberID), names.FormatID(s.Leader), s.RaftTerm, s.Revision, s.Version
			es.DBSize, es.DBSizeInUse, es.IsLearner, es.Errors = s.DBSize, s.DBSizeInUse, s.IsLearner, s.Errors
		}
		if h, rev, err := conn.HashKV(ctx); err != nil {
			b.problem("etcd: hashkv of %s: %v", m.Name, err)
		} else {
			es.HashKV, es.HashKVRev = h, rev
		}
		_ = conn.Close()
		statuses = append(statuses, es)
	}
	b.addJSON("etcd/endpoint-status.json", statuses)
}

// reportOperator records the operator's pods, logs and metrics: the pod holding the
// cluster's claim (status.operator), and the pods of the operator's namespace.
func (e *Env) reportOperator(ctx context.Context, c *v1alpha1.EtcdCluster, o ReportOptions, b *bundle) {
	pods := map[string]*corev1.Pod{}
	if c != nil && c.Status.Operator != "" {
		if ns, name, ok := strings.Cut(c.Status.Operator, "/"); ok {
			p := &corev1.Pod{}
			if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
				b.problem("reading the operator pod %s holding the claim: %v", c.Status.Operator, err)
			} else {
				pods[ns+"/"+name] = p
			}
		}
	}
	var pl corev1.PodList
	if err := e.Client.List(ctx, &pl, client.InNamespace(o.OperatorNamespace), client.MatchingLabels(OperatorSelector)); err != nil {
		b.problem("listing the operator's pods in %s: %v", o.OperatorNamespace, err)
	}
	for i := range pl.Items {
		pods[pl.Items[i].Namespace+"/"+pl.Items[i].Name] = &pl.Items[i]
	}
	keys := make([]string, 0, len(pods))
	for k := range pods {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := pods[k]
		cleanPod(p)
		b.addYAML("operator/pods/"+p.Name+".yaml", p)
		e.reportLogs(ctx, p, o, b)
		e.reportMetrics(ctx, p, b)
	}
	if len(pods) == 0 {
		b.problem("no operator pod found in %s (selector %v): give the operator's namespace with --operator-namespace", o.OperatorNamespace, OperatorSelector)
	}
	if c == nil {
		var cl v1alpha1.EtcdClusterList
		if err := e.Client.List(ctx, &cl); err != nil {
			b.problem("listing EtcdClusters in every namespace: %v", err)
		}
		type row struct {
			Cluster    string         `json:"cluster"`
			ClaimedBy  string         `json:"claimedBy,omitempty"`
			Conditions []ConditionRow `json:"conditions,omitempty"`
		}
		var rows []row
		for _, x := range cl.Items {
			r := row{Cluster: x.Namespace + "/" + x.Name, ClaimedBy: x.Status.Operator}
			for _, t := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded} {
				if cond := meta.FindStatusCondition(x.Status.Conditions, t); cond != nil {
					r.Conditions = append(r.Conditions, ConditionRow{Type: cond.Type, Status: string(cond.Status), Reason: cond.Reason, Message: cond.Message, Since: cond.LastTransitionTime})
				}
			}
			rows = append(rows, r)
		}
		b.addYAML("operator/etcdclusters.yaml", rows)
		b.addYAML("operator/events.yaml", e.events(ctx, o.OperatorNamespace, func(*corev1.Event) bool { return true }, b))
	}
}

// reportMetrics reads the operator's metrics through the API server's pod proxy. The
// operator serves them with authentication (--metrics-secure) that the proxy may not pass:
// then the report says so.
func (e *Env) reportMetrics(ctx context.Context, p *corev1.Pod, b *bundle) {
	if e.Kube == nil {
		b.problem("metrics of %s: no API server connection", p.Name)
		return
	}
	var errs []string
	for _, try := range []struct{ scheme, port string }{{"https", "8443"}, {"http", "8080"}} {
		raw, err := e.Kube.CoreV1().Pods(p.Namespace).ProxyGet(try.scheme, p.Name, try.port, "/metrics", nil).DoRaw(ctx)
		if err == nil {
			b.add("operator/metrics/"+p.Name+".txt", raw)
			return
		}
		errs = append(errs, fmt.Sprintf("%s:%s: %v", try.scheme, try.port, err))
	}
	b.problem("metrics of %s through the pod proxy: %s", p.Name, strings.Join(errs, "; "))
}
