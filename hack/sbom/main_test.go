package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// binaryBOM is the shape of `cyclonedx-gomod bin -json` output for one binary: its main module
// as metadata.component, its build as metadata.properties, the modules it links as components.
func binaryBOM(main, name, gov string, mods ...string) obj {
	var comps, depsOn, unknown []any
	deps := []any{}
	for _, m := range mods {
		ref := "pkg:golang/" + m + "?type=module"
		comps = append(comps, obj{"bom-ref": ref, "type": "library", "name": strings.Split(m, "@")[0], "purl": ref})
		depsOn = append(depsOn, ref)
		unknown = append(unknown, ref)
		deps = append(deps, obj{"ref": ref})
	}
	mainRef := "pkg:golang/" + main + "?type=module#cmd/" + name
	return obj{
		"$schema": "http://cyclonedx.org/schema/bom-1.6.schema.json", "bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1.0,
		"metadata": obj{
			"tools":     []any{obj{"name": "cyclonedx-gomod", "version": "v1.10.0"}},
			"component": obj{"bom-ref": mainRef, "type": "application", "name": strings.Split(main, "@")[0]},
			"properties": []any{
				obj{"name": "cdx:gomod:binary:name", "value": name},
				obj{"name": "cdx:gomod:build:env:GOVERSION", "value": gov},
			},
		},
		"components":   comps,
		"dependencies": append([]any{obj{"ref": mainRef, "dependsOn": depsOn}}, deps...),
		"compositions": []any{obj{"aggregate": "complete", "dependencies": []any{mainRef}}, obj{"aggregate": "unknown", "dependencies": unknown}},
	}
}

func roundTrip(t *testing.T, v obj) obj {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out obj
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func refs(t *testing.T, bom obj, key string) []string {
	t.Helper()
	var out []string
	for _, c := range bom[key].([]any) {
		field := "bom-ref"
		if key == "dependencies" {
			field = "ref"
		}
		out = append(out, c.(obj)[field].(string))
	}
	return out
}

func dependsOn(bom obj, ref string) []string {
	for _, d := range bom["dependencies"].([]any) {
		if d.(obj)["ref"] == ref {
			return strSlice(d.(obj)["dependsOn"])
		}
	}
	return nil
}

func TestMergeOneImageOfTwoBinaries(t *testing.T) {
	op := binaryBOM("github.com/quorate-dev/quorate@v0.3.0", "quorate-operator", "go1.26.8", "golang.org/x/net@v0.61.0", "k8s.io/api@v0.35.0")
	ln := binaryBOM("github.com/quorate-dev/quorate@v0.3.0", "quorate-launcher", "go1.26.8", "golang.org/x/net@v0.61.0", "go.uber.org/zap@v1.27.0")
	o := options{name: "ghcr.io/quorate-dev/quorate-operator", version: "0.3.0", platform: "linux/arm64", digest: "sha256:abc", timestamp: "2026-11-28T20:00:00Z"}
	got, err := merge(o, []obj{op, ln})
	if err != nil {
		t.Fatal(err)
	}
	got = roundTrip(t, got)

	meta := got["metadata"].(obj)
	image := meta["component"].(obj)
	wantRef := "pkg:oci/quorate-operator@sha256%3Aabc?arch=arm64&os=linux&repository_url=ghcr.io%2Fquorate-dev%2Fquorate-operator"
	if image["bom-ref"] != wantRef || image["type"] != "container" || image["version"] != "0.3.0" {
		t.Fatalf("image component: %v", image)
	}
	if meta["timestamp"] != "2026-11-28T20:00:00Z" {
		t.Errorf("timestamp: %v", meta["timestamp"])
	}
	appOp := "pkg:golang/github.com/quorate-dev/quorate@v0.3.0?type=module#cmd/quorate-operator"
	appLn := "pkg:golang/github.com/quorate-dev/quorate@v0.3.0?type=module#cmd/quorate-launcher"
	wantComps := []string{appOp, appLn, "pkg:golang/stdlib@go1.26.8",
		"pkg:golang/golang.org/x/net@v0.61.0?type=module", "pkg:golang/k8s.io/api@v0.35.0?type=module", "pkg:golang/go.uber.org/zap@v1.27.0?type=module"}
	if c := refs(t, got, "components"); strings.Join(c, " ") != strings.Join(wantComps, " ") {
		t.Fatalf("components:\n got %v\nwant %v", c, wantComps)
	}
	// Each binary carries its own build properties.
	for _, c := range got["components"].([]any)[:2] {
		if property(anySlice(c.(obj)["properties"]), "cdx:gomod:binary:name") == "" {
			t.Errorf("%v has no binary name", c.(obj)["bom-ref"])
		}
	}
	if d := dependsOn(got, wantRef); strings.Join(d, " ") != appOp+" "+appLn {
		t.Errorf("the image depends on %v", d)
	}
	if d := dependsOn(got, appLn); strings.Join(d, " ") != "pkg:golang/stdlib@go1.26.8 pkg:golang/golang.org/x/net@v0.61.0?type=module pkg:golang/go.uber.org/zap@v1.27.0?type=module" {
		t.Errorf("the launcher depends on %v", d)
	}
	// Every ref that a dependency names is a component (or the image).
	known := map[string]bool{wantRef: true}
	for _, r := range refs(t, got, "components") {
		known[r] = true
	}
	for _, d := range got["dependencies"].([]any) {
		for _, r := range append([]string{d.(obj)["ref"].(string)}, strSlice(d.(obj)["dependsOn"])...) {
			if !known[r] {
				t.Errorf("dependency names %s, which is no component", r)
			}
		}
	}
	comp := got["compositions"].([]any)
	if c := strSlice(comp[0].(obj)["dependencies"]); comp[0].(obj)["aggregate"] != "complete" || strings.Join(c, " ") != wantRef+" "+appOp+" "+appLn {
		t.Errorf("complete composition: %v", comp[0])
	}
}

// etcd's server binary links the module whose root is etcdutl's main package: the etcdutl
// binary's component is named apart from that library, which stays what etcd depends on.
func TestMergeMainModuleThatIsAnotherBinarysLibrary(t *testing.T) {
	etcd := binaryBOM("go.etcd.io/etcd/server/v3@v3.5.35", "etcd", "go1.26.8", "go.etcd.io/etcd/etcdutl/v3@v3.5.35")
	utl := binaryBOM("go.etcd.io/etcd/etcdutl/v3@v3.5.35", "etcdutl", "go1.26.8", "go.uber.org/zap@v1.27.0")
	// cyclonedx-gomod names a main package at its module's root without a fragment.
	for _, b := range []obj{etcd, utl} {
		m := b["metadata"].(obj)["component"].(obj)
		old := m["bom-ref"].(string)
		m["bom-ref"] = strings.Split(old, "#")[0]
		b["dependencies"].([]any)[0].(obj)["ref"] = m["bom-ref"]
		b["compositions"].([]any)[0].(obj)["dependencies"] = []any{m["bom-ref"]}
	}
	o := options{name: "r/etcd", version: "v3.5.35", platform: "linux/amd64"}
	for _, order := range [][]obj{{etcd, utl}, {utl, etcd}} {
		got, err := merge(o, order)
		if err != nil {
			t.Fatal(err)
		}
		got = roundTrip(t, got)
		lib := "pkg:golang/go.etcd.io/etcd/etcdutl/v3@v3.5.35?type=module"
		app := lib + "#etcdutl"
		comps := refs(t, got, "components")
		if strings.Count(strings.Join(comps, " ")+" ", lib+" ") != 1 || strings.Count(strings.Join(comps, " ")+" ", app+" ") != 1 {
			t.Fatalf("components %v: want the library %s and the binary %s once each", comps, lib, app)
		}
		if d := dependsOn(got, "pkg:golang/go.etcd.io/etcd/server/v3@v3.5.35?type=module"); !strings.Contains(strings.Join(d, " "), lib) {
			t.Errorf("etcd depends on %v, not on the library %s", d, lib)
		}
		if d := dependsOn(got, app); strings.Join(d, " ") != "pkg:golang/stdlib@go1.26.8 pkg:golang/go.uber.org/zap@v1.27.0?type=module" {
			t.Errorf("the etcdutl binary depends on %v", d)
		}
		if d := dependsOn(got, lib); len(d) != 0 {
			t.Errorf("the etcdutl library took the binary's dependencies: %v", d)
		}
	}
}

func TestMergeRefuses(t *testing.T) {
	o := options{name: "r/quorate-workload", version: "0.3.0", platform: "linux/amd64"}
	w := binaryBOM("github.com/quorate-dev/quorate@v0.3.0", "quorate-workload", "go1.26.8")
	if _, err := merge(o, []obj{w, w}); err == nil || !strings.Contains(err.Error(), "same component") {
		t.Errorf("the same binary twice: %v", err)
	}
	if _, err := merge(o, []obj{{"bomFormat": "SPDX"}}); err == nil {
		t.Error("a BOM that is not CycloneDX was merged")
	}
	old := binaryBOM("x@v1", "x", "go1.26.8")
	old["specVersion"] = "1.4"
	if _, err := merge(o, []obj{w, old}); err == nil {
		t.Error("two spec versions were merged")
	}
	if _, err := merge(options{name: "r/x"}, []obj{w}); err == nil {
		t.Error("merged without a version and platform")
	}
	if _, err := merge(o, nil); err == nil {
		t.Error("merged nothing")
	}
}

// The command reads files and writes one; without --digest the image's purl names the version.
func TestRunWritesFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "w.cdx.json")
	b, _ := json.Marshal(binaryBOM("github.com/quorate-dev/quorate@v0.3.0", "quorate-workload", "go1.26.8", "golang.org/x/net@v0.61.0"))
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.cdx.json")
	if err := run(options{name: "localhost:5000/r/quorate-workload", version: "0.3.0", platform: "linux/amd64"}, []string{in}, out); err != nil {
		t.Fatal(err)
	}
	var got obj
	b, _ = os.ReadFile(out)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if ref := got["metadata"].(obj)["component"].(obj)["bom-ref"]; !strings.HasPrefix(ref.(string), "pkg:oci/quorate-workload@0.3.0?") {
		t.Errorf("image ref %v", ref)
	}
	if _, ok := got["metadata"].(obj)["timestamp"]; ok {
		t.Error("a timestamp without --timestamp")
	}
}

// A test binary's BOM has its main module alone: --modules adds what go list found it links.
func TestMergeModulesOfATestBinary(t *testing.T) {
	conf := binaryBOM("github.com/quorate-dev/quorate@v0.3.0", "quorate-conformance", "go1.26.8")
	props := conf["metadata"].(obj)["properties"].([]any)
	conf["metadata"].(obj)["properties"] = append(props, obj{"name": "cdx:gomod:build:env:GOOS", "value": "linux"}, obj{"name": "cdx:gomod:build:env:GOARCH", "value": "arm64"})
	mods, err := parseModules("github.com/quorate-dev/quorate\ngolang.org/x/net v0.61.0 h1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\nsigs.k8s.io/e2e-framework v0.6.0\n\n")
	if err != nil {
		t.Fatal(err)
	}
	o := options{name: "r/quorate-conformance", version: "0.3.0", platform: "linux/arm64", modules: map[string][]module{"quorate-conformance": mods}}
	got, err := merge(o, []obj{conf})
	if err != nil {
		t.Fatal(err)
	}
	got = roundTrip(t, got)
	app := "pkg:golang/github.com/quorate-dev/quorate@v0.3.0?type=module#cmd/quorate-conformance"
	net := "pkg:golang/golang.org/x/net@v0.61.0?type=module"
	e2e := "pkg:golang/sigs.k8s.io/e2e-framework@v0.6.0?type=module"
	if c := refs(t, got, "components"); strings.Join(c, " ") != strings.Join([]string{app, "pkg:golang/stdlib@go1.26.8", net, e2e}, " ") {
		t.Fatalf("components %v", c)
	}
	if d := dependsOn(got, app); strings.Join(d, " ") != "pkg:golang/stdlib@go1.26.8 "+net+" "+e2e {
		t.Errorf("the binary depends on %v", d)
	}
	for _, c := range got["components"].([]any) {
		if c.(obj)["bom-ref"] != net {
			continue
		}
		if c.(obj)["purl"] != "pkg:golang/golang.org/x/net@v0.61.0?goarch=arm64&goos=linux&type=module" {
			t.Errorf("purl %v", c.(obj)["purl"])
		}
		if h := c.(obj)["hashes"].([]any)[0].(obj)["content"]; h != "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" {
			t.Errorf("the h1: sum as SHA-256: %v", h)
		}
	}
	if _, err := parseModules("a v1 h1:x extra"); err == nil {
		t.Error("a line of four fields was read")
	}
}
