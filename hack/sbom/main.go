// Command sbom writes the CycloneDX SBOM of one container image of one platform from the SBOMs
// of the Go binaries in it, each made by `cyclonedx-gomod bin` from the module list Go embeds in
// the binary (hack/release.sh):
//
//	go run ./hack/sbom --name REGISTRY/quorate-operator --version 0.3.0 --platform linux/arm64 \
//	  --digest sha256:... --out operator.cdx.json quorate-operator.cdx.json quorate-launcher.cdx.json ...
//
// The image is the BOM's metadata.component (a container, named by digest when --digest is
// given); each binary is an application component that the image depends on, with its build
// properties (platform, Go release, hashes of the binary); the modules of all binaries are
// library components, once each, and each Go release a binary was built with is the library
// component pkg:golang/stdlib@<release>, which cyclonedx-gomod leaves out (the standard library
// is linked into every binary, and its vulnerabilities are the binary's).
//
// A test binary (go test -c: quorate-conformance) records its main module and none of the
// modules it links (golang/go#33976): --modules NAME=FILE adds, to the binary NAME, the modules
// FILE lists, one "path version [h1:sum]" a line, as `go list -deps -test` of its package finds
// them (hack/release.sh).
package main

import (
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
)

// obj is a JSON object as read: fields this tool does not know pass through unchanged.
type obj = map[string]any

type options struct {
	name, version, platform, digest, timestamp string
	// modules: the modules each binary (by name) links that its BOM lacks (a test binary's).
	modules map[string][]module
}

// module is one line of a --modules file.
type module struct{ path, version, sum string }

func main() {
	var o options
	out := flag.String("out", "-", "file to write (- for stdout)")
	flag.StringVar(&o.name, "name", "", "the image's repository, e.g. ghcr.io/quorate-dev/quorate-operator")
	flag.StringVar(&o.version, "version", "", "the release, e.g. 0.3.0")
	flag.StringVar(&o.platform, "platform", "", "the image's platform, os/arch (linux/arm64)")
	flag.StringVar(&o.digest, "digest", "", "the image's digest (sha256:...), when known")
	flag.StringVar(&o.timestamp, "timestamp", "", "metadata.timestamp (RFC 3339; the commit's time keeps the SBOM reproducible); empty: none")
	flag.Func("modules", "BINARY=FILE: the modules (lines of path, version, h1: sum) the binary of that name links, for a test binary whose build info lists none (repeat)", func(v string) error {
		name, file, ok := strings.Cut(v, "=")
		if !ok {
			return errors.New("want BINARY=FILE")
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		mods, err := parseModules(string(b))
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if o.modules == nil {
			o.modules = map[string][]module{}
		}
		o.modules[name] = append(o.modules[name], mods...)
		return nil
	})
	flag.Parse()
	if err := run(o, flag.Args(), *out); err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

func run(o options, inputs []string, out string) error {
	var boms []obj
	for _, f := range inputs {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var bom obj
		if err := json.Unmarshal(b, &bom); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		boms = append(boms, bom)
	}
	merged, err := merge(o, boms)
	if err != nil {
		return err
	}
	var w io.Writer = os.Stdout
	if out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		w = f
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(merged)
}

// imagePURL is the image's package URL (purl spec, type oci): pkg:oci/<name>@<digest> with the
// repository and platform as qualifiers; without a digest, the version stands in.
func imagePURL(o options) string {
	repo := strings.TrimSuffix(o.name, "/")
	name := repo[strings.LastIndex(repo, "/")+1:]
	v := o.digest
	if v == "" {
		v = o.version
	}
	// The spec's own examples encode the digest's colon: pkg:oci/debian@sha256%3A244fd47e07d1...
	v = strings.ReplaceAll(url.PathEscape(v), ":", "%3A")
	q := url.Values{}
	q.Set("repository_url", repo)
	if goos, arch, ok := strings.Cut(o.platform, "/"); ok {
		q.Set("os", goos)
		q.Set("arch", arch)
	}
	return "pkg:oci/" + name + "@" + v + "?" + q.Encode()
}

// merger builds the image's BOM from the binaries' BOMs, one binary at a time.
type merger struct {
	o          options
	apps, libs []any
	seen       map[string]bool
	deps       map[string][]string
	depOrder   []string
	appRefs    []string
	complete   []string
	unknown    []string
	tools      any
	// Main modules' bom-refs by how many binaries have them, and every library's bom-ref.
	mainCount map[string]int
	libRefs   map[string]bool
}

func merge(o options, boms []obj) (obj, error) {
	if o.name == "" || o.version == "" || o.platform == "" {
		return nil, errors.New("--name, --version and --platform are required")
	}
	if len(boms) == 0 {
		return nil, errors.New("no binary SBOM to merge")
	}
	spec, _ := boms[0]["specVersion"].(string)
	m := &merger{o: o, seen: map[string]bool{}, deps: map[string][]string{}, mainCount: map[string]int{}, libRefs: map[string]bool{}}
	m.count(boms)
	for i, bom := range boms {
		if f, _ := bom["bomFormat"].(string); f != "CycloneDX" {
			return nil, fmt.Errorf("input %d is not a CycloneDX BOM (bomFormat %q)", i+1, f)
		}
		if v, _ := bom["specVersion"].(string); v != spec {
			return nil, fmt.Errorf("input %d is CycloneDX %s, the first %s", i+1, v, spec)
		}
		if err := m.add(i, bom); err != nil {
			return nil, err
		}
	}
	return m.bom(boms[0]["$schema"], spec), nil
}

// count notes the bom-refs of main modules and libraries: a binary's main module can be another
// binary's library (etcd links etcdutl's module) or another binary's main module too, and such
// a binary's component gets its name in its bom-ref.
func (m *merger) count(boms []obj) {
	for _, bom := range boms {
		meta, _ := bom["metadata"].(obj)
		app, _ := meta["component"].(obj)
		if ref, _ := app["bom-ref"].(string); ref != "" {
			m.mainCount[ref]++
		}
		for _, c := range anySlice(bom["components"]) {
			cm, _ := c.(obj)
			if r, _ := cm["bom-ref"].(string); r != "" {
				m.libRefs[r] = true
			}
		}
	}
}

func (m *merger) addDeps(ref string, on []string) {
	if _, ok := m.deps[ref]; !ok {
		m.depOrder = append(m.depOrder, ref)
		m.deps[ref] = []string{}
	}
	for _, d := range on {
		if !slices.Contains(m.deps[ref], d) {
			m.deps[ref] = append(m.deps[ref], d)
		}
	}
}

// add takes the binary of the i-th BOM: its component, its modules, their dependencies.
func (m *merger) add(i int, bom obj) error {
	meta, _ := bom["metadata"].(obj)
	app, _ := meta["component"].(obj)
	ref, _ := app["bom-ref"].(string)
	if ref == "" {
		return fmt.Errorf("input %d has no metadata.component with a bom-ref (not made by cyclonedx-gomod bin?)", i+1)
	}
	props, _ := meta["properties"].([]any)
	binName := property(props, "cdx:gomod:binary:name")
	app = clone(app)
	oldRef := ref
	if m.mainCount[ref] > 1 || m.libRefs[ref] {
		sep := "#"
		if strings.Contains(ref, "#") {
			sep = ":"
		}
		ref += sep + cmp.Or(binName, fmt.Sprint(i+1))
		app["bom-ref"] = ref
	}
	if m.seen[ref] {
		return fmt.Errorf("two binaries are the same component %s", ref)
	}
	m.seen[ref] = true
	rename := func(refs []string) []string {
		for j := range refs {
			if refs[j] == oldRef {
				refs[j] = ref
			}
		}
		return refs
	}
	if m.tools == nil {
		m.tools = meta["tools"]
	}
	// The binary's own properties (its name, hashes, GOOS, GOARCH, Go release) are the
	// metadata's in a BOM of one binary: here they go with its component.
	if len(props) > 0 {
		app["properties"] = append(anySlice(app["properties"]), props...)
	}
	m.appRefs = append(m.appRefs, ref)
	m.addStdlib(ref, property(props, "cdx:gomod:build:env:GOVERSION"))
	comps := anySlice(bom["components"])
	if extra := m.o.modules[binName]; len(extra) > 0 {
		comps = append(comps, moduleComponents(extra, property(props, "cdx:gomod:build:env:GOOS"), property(props, "cdx:gomod:build:env:GOARCH"))...)
		var on []string
		for _, c := range comps {
			if r, _ := c.(obj)["bom-ref"].(string); r != "" && r != oldRef {
				on = append(on, r)
				m.unknown = appendNew(m.unknown, r)
			}
		}
		m.addDeps(ref, on)
		app["properties"] = append(anySlice(app["properties"]), obj{"name": "quorate:sbom:modules",
			"value": "go list -deps -test: a test binary's build info lists no module it links"})
	}
	m.apps = append(m.apps, app)
	for _, c := range comps {
		cm, _ := c.(obj)
		m.addLib(cm)
	}
	for _, d := range anySlice(bom["dependencies"]) {
		dm, _ := d.(obj)
		r, _ := dm["ref"].(string)
		m.addDeps(rename([]string{r})[0], rename(strSlice(dm["dependsOn"])))
	}
	for _, c := range anySlice(bom["compositions"]) {
		cm, _ := c.(obj)
		refs := rename(strSlice(cm["dependencies"]))
		if cm["aggregate"] == "complete" {
			m.complete = appendNew(m.complete, refs...)
		} else {
			m.unknown = appendNew(m.unknown, refs...)
		}
	}
	return nil
}

// addStdlib adds the Go standard library of release gov (if known) and ref's dependency on it.
func (m *merger) addStdlib(ref, gov string) {
	if gov == "" {
		return
	}
	std := "pkg:golang/stdlib@" + gov
	m.addLib(obj{"bom-ref": std, "type": "library", "name": "stdlib", "version": gov, "purl": std,
		"description": "the Go standard library, linked into the binaries built with " + gov})
	m.addDeps(std, nil)
	m.addDeps(ref, []string{std})
}

// addLib adds a library component once.
func (m *merger) addLib(c obj) {
	r, _ := c["bom-ref"].(string)
	if r == "" || m.seen[r] {
		return
	}
	m.seen[r] = true
	m.libs = append(m.libs, c)
}

// bom is the merged BOM: the image as its metadata.component, depending on its binaries.
func (m *merger) bom(schema any, spec string) obj {
	o := m.o
	imageRef := imagePURL(o)
	image := obj{"bom-ref": imageRef, "type": "container", "name": o.name, "version": o.version, "purl": imageRef,
		"properties": []any{obj{"name": "quorate:image:platform", "value": o.platform}}}
	if o.digest != "" {
		image["hashes"] = []any{obj{"alg": "SHA-256", "content": strings.TrimPrefix(o.digest, "sha256:")}}
	}
	dependencies := []any{obj{"ref": imageRef, "dependsOn": toAny(m.appRefs)}}
	for _, r := range m.depOrder {
		dependencies = append(dependencies, obj{"ref": r, "dependsOn": toAny(m.deps[r])})
	}
	meta := obj{"component": image}
	if o.timestamp != "" {
		meta["timestamp"] = o.timestamp
	}
	if m.tools != nil {
		meta["tools"] = m.tools
	}
	out := obj{
		"$schema":      schema,
		"bomFormat":    "CycloneDX",
		"specVersion":  spec,
		"version":      1,
		"metadata":     meta,
		"components":   append(m.apps, m.libs...),
		"dependencies": dependencies,
	}
	// What each binary links is known completely (Go records every module it builds in); the
	// modules' own dependencies are not (a binary records no module graph), as cyclonedx-gomod says.
	var comp []any
	if len(m.complete) > 0 {
		comp = append(comp, obj{"aggregate": "complete", "dependencies": toAny(append([]string{imageRef}, m.complete...))})
	}
	if len(m.unknown) > 0 {
		comp = append(comp, obj{"aggregate": "unknown", "dependencies": toAny(m.unknown)})
	}
	if comp != nil {
		out["compositions"] = comp
	}
	return out
}

// parseModules reads a --modules file: "path version [h1:sum]" a line; blank lines and the main
// module (no version) are skipped.
func parseModules(text string) ([]module, error) {
	var mods []module
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || len(f) == 1:
			continue
		case len(f) > 3:
			return nil, fmt.Errorf("line %d: want path, version and an optional h1: sum, got %q", i+1, line)
		}
		m := module{path: f[0], version: f[1]}
		if len(f) == 3 {
			m.sum = f[2]
		}
		mods = append(mods, m)
	}
	return mods, nil
}

// moduleComponents are library components of modules, as cyclonedx-gomod writes them: the
// bom-ref a purl without the platform, the purl with it, the h1: sum as its SHA-256.
func moduleComponents(mods []module, goos, goarch string) []any {
	var out []any
	for _, m := range mods {
		ref := "pkg:golang/" + m.path + "@" + m.version + "?type=module"
		purl := ref
		if goos != "" && goarch != "" {
			purl = "pkg:golang/" + m.path + "@" + m.version + "?goarch=" + goarch + "&goos=" + goos + "&type=module"
		}
		c := obj{"bom-ref": ref, "type": "library", "name": m.path, "version": m.version, "scope": "required", "purl": purl}
		if h, ok := strings.CutPrefix(m.sum, "h1:"); ok {
			if b, err := base64.StdEncoding.DecodeString(h); err == nil {
				c["hashes"] = []any{obj{"alg": "SHA-256", "content": hex.EncodeToString(b)}}
			}
		}
		out = append(out, c)
	}
	return out
}

func property(props []any, name string) string {
	for _, p := range props {
		pm, _ := p.(obj)
		if pm["name"] == name {
			v, _ := pm["value"].(string)
			return v
		}
	}
	return ""
}

func clone(m obj) obj {
	c := make(obj, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func anySlice(v any) []any { s, _ := v.([]any); return s }

func strSlice(v any) []string {
	var out []string
	for _, x := range anySlice(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

func appendNew(s []string, xs ...string) []string {
	for _, x := range xs {
		if !slices.Contains(s, x) {
			s = append(s, x)
		}
	}
	return s
}
