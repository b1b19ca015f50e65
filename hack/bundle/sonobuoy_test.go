package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The Sonobuoy plugin (config/sonobuoy/quorate-plugin.yaml) runs the images the CSV lists, by
// digest, as the conformance Job does (TestConformanceJobImagesByDigest): a release that
// rebuilt them fails here until the plugin names them too. And it keeps Sonobuoy's contract:
// the report under the results volume, the done file naming it.
func TestSonobuoyPluginImagesByDigest(t *testing.T) {
	want := suiteImages(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "sonobuoy", "quorate-plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Config struct {
			Driver       string   `json:"driver"`
			PluginName   string   `json:"plugin-name"`
			ResultFormat string   `json:"result-format"`
			ResultFiles  []string `json:"result-files"`
		} `json:"sonobuoy-config"`
		Spec corev1.Container `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"quorate-conformance": p.Spec.Image}
	for _, e := range p.Spec.Env {
		if e.Name == "QUORATE_WORKLOAD_IMAGE" {
			got["quorate-workload"] = e.Value
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("config/sonobuoy runs %v, want the CSV's related images %v", got, want)
	}
	if p.Config.Driver != "Job" || p.Config.PluginName != "quorate-conformance" || p.Config.ResultFormat != "junit" ||
		!slices.Equal(p.Config.ResultFiles, []string{"junit.xml"}) {
		t.Errorf("sonobuoy-config is %+v, want a Job plugin quorate-conformance reading junit.xml", p.Config)
	}
	const results = "/tmp/sonobuoy/results"
	var reportDir, doneFile string
	for _, a := range p.Spec.Args {
		if v, ok := strings.CutPrefix(a, "--report-dir="); ok {
			reportDir = v
		}
		if v, ok := strings.CutPrefix(a, "--done-file="); ok {
			doneFile = v
		}
	}
	if doneFile != results+"/done" || !strings.HasPrefix(reportDir, results+"/") {
		t.Errorf("the plugin writes its report to %q and the done file to %q: want both under %s, the done file %s/done", reportDir, doneFile, results, results)
	}
	mounted := false
	for _, m := range p.Spec.VolumeMounts {
		mounted = mounted || (m.Name == "results" && m.MountPath == results)
	}
	if !mounted {
		t.Errorf("the plugin does not mount Sonobuoy's results volume at %s", results)
	}
}
