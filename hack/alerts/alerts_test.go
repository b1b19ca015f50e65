// Package alerts tests the monitoring Quorate ships (config/prometheus, config/grafana) against
// real tools and real metrics: promtool checks and unit-tests every alert, and every metric the
// alerts and the dashboard name must be one that etcd, the operator or controller-runtime
// really exports.
package alerts

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

const (
	rulesFile      = "../../config/prometheus/rules.yaml"
	dashboardFile  = "../../config/grafana/quorate-dashboard.json"
	podMonitorFile = "../../config/prometheus/podmonitor.yaml"
	runbooksFile   = "../../docs/runbooks.md"
	// runbookBase is where each alert's runbook_url points, followed by #<alert in lower case>
	// (GitHub's anchor of the runbook's heading).
	runbookBase = "https://github.com/quorate-dev/quorate/blob/main/docs/runbooks.md"
)

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert,omitempty"`
			Record      string            `json:"record,omitempty"`
			Expr        string            `json:"expr"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"rules"`
	} `json:"groups"`
}

func promtool(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PROMTOOL")
	if p == "" {
		t.Fatal("PROMTOOL is not set: run `make test`, which builds promtool from the module proxy and sets it")
	}
	return p
}

// rules writes the PrometheusRule's groups as a Prometheus rule file in dir.
func rules(t *testing.T, dir string) ruleFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Kind string   `json:"kind"`
		Spec ruleFile `json:"spec"`
	}
	var raw struct {
		Spec map[string]any `json:"spec"` // written out whole: labels, annotations, for
	}
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if obj.Kind != "PrometheusRule" || len(obj.Spec.Groups) == 0 {
		t.Fatalf("%s is not a PrometheusRule with groups", rulesFile)
	}
	out, err := yaml.Marshal(raw.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	return obj.Spec
}

func run(t *testing.T, dir, tool string, args ...string) {
	t.Helper()
	cmd := exec.Command(tool, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("promtool %s: %v", strings.Join(args, " "), err)
	}
}

// TestAlerts checks the rules and runs their unit tests with promtool; every alert must have
// a test case where it fires and one where it stays silent.
func TestAlerts(t *testing.T) {
	tool := promtool(t)
	dir := t.TempDir()
	rf := rules(t, dir)
	tests, err := os.ReadFile("alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, tool, "check", "rules", "rules.yaml")
	run(t, dir, tool, "test", "rules", "alerts_test.yaml")

	var suite struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &suite); err != nil {
		t.Fatal(err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range suite.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	var alerts []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r.Alert)
			}
		}
	}
	for _, a := range alerts {
		if !fires[a] || !silent[a] {
			t.Errorf("alert %s needs a test where it fires (%v) and one where it stays silent (%v)", a, fires[a], silent[a])
		}
	}
	if want := []string{
		"QuorateEtcdNoLeader", "QuorateEtcdClusterUnavailable", "QuorateEtcdQuorumAtRisk", "QuorateEtcdMemberUnhealthy", "QuorateEtcdMemberFencedForLong",
		"QuorateEtcdFrequentLeaderChanges", "QuorateEtcdDatabaseNearQuota", "QuorateEtcdNoSpace", "QuorateEtcdCorrupt",
		"QuorateEtcdMemberDivergent", "QuorateEtcdDataInconsistent",
		"QuorateEtcdHighFsyncDurations", "QuorateEtcdHighCommitDurations",
		"QuorateOperatorDown", "QuorateCertificateExpiringSoon", "QuorateCertificateExpiring", "QuorateBackupTooOld", "QuorateRestoreDrillFailed", "QuorateArchiveBehind",
		"QuorateReconcileErrors",
	}; !slices.Equal(alerts, want) {
		t.Errorf("alerts\n %v\nwant\n %v", alerts, want)
	}
}

// TestRunbooks: every alert links its runbook, a section of docs/runbooks.md headed by the
// alert's name, and every section says what the alert means, what it costs, how to find the
// cause and what to do; no section is left for an alert that is gone.
func TestRunbooks(t *testing.T) {
	b, err := os.ReadFile(runbooksFile)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	var current string
	for _, line := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok {
			current = strings.TrimSpace(name)
			sections[current] = ""
			continue
		}
		if current != "" {
			sections[current] += line + "\n"
		}
	}
	alerts := map[string]bool{}
	for _, g := range rules(t, t.TempDir()).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts[r.Alert] = true
			if want := runbookBase + "#" + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
			}
			body, ok := sections[r.Alert]
			if !ok {
				t.Errorf("alert %s has no section `## %s` in %s", r.Alert, r.Alert, runbooksFile)
				continue
			}
			for _, part := range []string{"Meaning", "Impact", "Diagnosis", "Mitigation"} {
				if !strings.Contains(body, "### "+part+"\n") {
					t.Errorf("runbook of %s has no `### %s`", r.Alert, part)
				}
			}
		}
	}
	for name := range sections {
		if strings.HasPrefix(name, "Quorate") && !alerts[name] {
			t.Errorf("%s has a runbook for %s, which is no alert", runbooksFile, name)
		}
	}
}

// bareCluster finds a label named plainly `cluster` in a query or a template: a selector, a
// grouping, a label_values argument, $labels.cluster or {{cluster}}.
var bareCluster = regexp.MustCompile(`(?:[{(,]\s*|\$labels\.|\{\{\s*)cluster\b`)

// TestClusterLabel: the EtcdCluster's label is metrics.ClusterLabel everywhere: the PodMonitor
// gives it to the members' series, and no alert or dashboard query looks for a label named
// `cluster` (which multi-cluster Prometheus setups reserve).
func TestClusterLabel(t *testing.T) {
	b, err := os.ReadFile(podMonitorFile)
	if err != nil {
		t.Fatal(err)
	}
	var pm struct {
		Spec struct {
			PodMetricsEndpoints []struct {
				Relabelings []struct {
					SourceLabels []string `json:"sourceLabels"`
					TargetLabel  string   `json:"targetLabel"`
				} `json:"relabelings"`
			} `json:"podMetricsEndpoints"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &pm); err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, e := range pm.Spec.PodMetricsEndpoints {
		for _, r := range e.Relabelings {
			if slices.Contains(r.SourceLabels, "__meta_kubernetes_pod_label_etcd_quorate_dev_cluster") {
				targets = append(targets, r.TargetLabel)
			}
		}
	}
	if !slices.Equal(targets, []string{metrics.ClusterLabel}) {
		t.Errorf("the PodMonitor copies the pods' cluster label to %v, want [%s]", targets, metrics.ClusterLabel)
	}
	for _, g := range rules(t, t.TempDir()).Groups {
		for _, r := range g.Rules {
			for _, text := range append([]string{r.Expr}, r.Annotations["summary"], r.Annotations["description"]) {
				if m := bareCluster.FindString(text); m != "" {
					t.Errorf("rule %s%s uses the label cluster (%q), not %s", r.Alert, r.Record, m, metrics.ClusterLabel)
				}
			}
		}
	}
	d, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range bareCluster.FindAllString(string(d), -1) {
		t.Errorf("the dashboard uses the label cluster (%q), not %s", m, metrics.ClusterLabel)
	}
}

type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Title      string `json:"title"`
		Type       string `json:"type"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ H, W, X, Y int } `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// TestDashboard checks the dashboard's structure, and its queries with promtool (each one as a
// recording rule).
func TestDashboard(t *testing.T) {
	tool := promtool(t)
	d := loadDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Error("the dashboard needs a title and a uid")
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	if !slices.Equal(vars, []string{"datasource", "namespace", "cluster"}) {
		t.Errorf("template variables %v, want datasource, namespace, cluster", vars)
	}
	var titles []string
	ids := map[int]bool{}
	var rf strings.Builder
	rf.WriteString("groups:\n- name: dashboard\n  rules:\n")
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		if p.Title == "" || p.Type == "" || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %d %q lacks a title, type, the datasource variable, targets or a size", p.ID, p.Title)
		}
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		for _, tg := range p.Targets {
			// The template variables become regular expressions that match anything.
			expr := strings.NewReplacer("$namespace", ".*", "$cluster", ".*").Replace(tg.Expr)
			fmt.Fprintf(&rf, "  - record: panel_%d_%s\n    expr: %q\n", p.ID, tg.RefID, expr)
		}
	}
	for _, want := range []string{"Cluster available", "Leader changes (1h)", "Disk latency p99", "Database size against quota", "Operator work queue"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q among %v", want, titles)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yaml"), []byte(rf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, tool, "check", "rules", "dashboard.yaml")
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

var metricName = regexp.MustCompile(`\b((?:etcd|quorate|workqueue|controller_runtime)_[a-z_]+)\b`)

// TestMetricsExist: every metric the alerts and the dashboard use is exported by a real etcd
// (scraped from the release the tests run), by the operator's metrics package, or by the
// controller-runtime this module builds with.
func TestMetricsExist(t *testing.T) {
	used := map[string]bool{}
	rf := rules(t, t.TempDir())
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			for _, m := range metricName.FindAllString(r.Expr, -1) {
				used[m] = true
			}
		}
	}
	for _, p := range loadDashboard(t).Panels {
		for _, tg := range p.Targets {
			for _, m := range metricName.FindAllString(tg.Expr, -1) {
				used[m] = true
			}
		}
	}
	// The EtcdCluster's label has a metric's prefix; it is no metric.
	delete(used, metrics.ClusterLabel)
	var names, etcdNames []string
	for m := range used {
		names = append(names, m)
		if strings.HasPrefix(m, "etcd_") {
			etcdNames = append(etcdNames, m)
		}
	}
	sort.Strings(names)
	etcdMetrics := scrapeEtcd(t, etcdNames)
	ours := operatorMetrics()
	crSource := controllerRuntimeSource(t)
	for _, m := range names {
		var ok bool
		switch {
		case strings.HasPrefix(m, "etcd_"):
			ok = etcdMetrics[m]
		case strings.HasPrefix(m, "quorate_"):
			ok = ours[m]
		default:
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
			ok = strings.Contains(crSource, `"`+base+`"`) || strings.Contains(crSource, `"`+strings.TrimPrefix(base, "workqueue_")+`"`)
		}
		if !ok {
			t.Errorf("metric %s is used by the alerts or the dashboard but nothing exports it", m)
		}
	}
	if len(names) < 10 {
		t.Errorf("only %d metrics found in the alerts and the dashboard: %v", len(names), names)
	}
}

// operatorMetrics are the names of the metrics package's collectors.
func operatorMetrics() map[string]bool {
	out := map[string]bool{}
	for _, c := range metrics.Collectors() {
		ch := make(chan *prometheus.Desc, 8)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			if name, _ := testsupport.DescName(d); name != "" {
				out[name] = true
			}
		}
	}
	return out
}

// controllerRuntimeSource is the text of controller-runtime's metrics code in the module cache
// (the workqueue and reconcile metrics are registered there).
func controllerRuntimeSource(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/controller-runtime").Output()
	if err != nil {
		t.Fatalf("locating controller-runtime: %v", err)
	}
	root := strings.TrimSpace(string(out))
	var text strings.Builder
	for _, pattern := range []string{"pkg/metrics/*.go", "pkg/internal/controller/metrics/*.go"} {
		files, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			text.Write(b)
		}
	}
	if text.Len() == 0 {
		t.Fatalf("no controller-runtime metrics source under %s", root)
	}
	return text.String()
}

// scrapeEtcd starts a two-member cluster of the etcd release the tests use
// (KUBEBUILDER_ASSETS), so that peer metrics have series too, and returns the metric names on
// its metrics ports once every name in want is there, or at the deadline.
func scrapeEtcd(t *testing.T, want []string) map[string]bool {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test`, which builds etcd and sets it")
	}
	dir := t.TempDir()
	port := func() string { return fmt.Sprintf("http://127.0.0.1:%d", testsupport.FreePort(t)) }
	type member struct{ name, client, peer, metrics string }
	members := []member{{"a", port(), port(), port()}, {"b", port(), port(), port()}}
	initial := "a=" + members[0].peer + ",b=" + members[1].peer
	ctx, cancel := context.WithCancel(context.Background())
	var cmds []*exec.Cmd
	t.Cleanup(func() {
		cancel()
		for _, c := range cmds {
			_ = c.Wait()
		}
	})
	for _, m := range members {
		cmd := exec.CommandContext(ctx, filepath.Join(assets, "etcd"), "--name="+m.name, "--data-dir="+filepath.Join(dir, m.name), "--log-level=error",
			"--listen-client-urls="+m.client, "--advertise-client-urls="+m.client, "--listen-peer-urls="+m.peer,
			"--initial-advertise-peer-urls="+m.peer, "--initial-cluster="+initial, "--listen-metrics-urls="+m.metrics)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	names := map[string]bool{}
	deadline := time.Now().Add(time.Minute)
	for {
		var err error
		for _, m := range members {
			err = errors.Join(err, scrape(m.metrics+"/metrics", names))
		}
		missing := slices.DeleteFunc(slices.Clone(want), func(n string) bool { return names[n] })
		if err == nil && len(missing) == 0 {
			return names
		}
		if time.Now().After(deadline) {
			t.Logf("etcd's metrics after a minute: %v; not among them: %v", err, missing)
			return names
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func scrape(url string, into map[string]bool) error {
	resp, err := http.Get(url) //nolint:gosec,noctx // a local etcd started by the test
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		into[name] = true
	}
	return sc.Err()
}
