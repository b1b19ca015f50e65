// Command catalog writes Quorate's file-based catalog (olm.package, olm.channel, olm.bundle)
// from bundle directories, one per release, oldest first:
//
//	go run ./hack/catalog --out catalog/quorate/catalog.yaml \
//	  --bundle 0.1.0=bundle-0.1.0=IMAGE --bundle 0.2.0=bundle=IMAGE
//
// Each olm.bundle carries the properties OLM resolves on (olm.package, olm.gvk for every owned
// CRD) and the bundle's related images; the channel chains each release to the one before it
// (replaces) and lets every earlier release skip to it (its olm.skipRange).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"
)

const (
	packageName = "quorate"
	channel     = "candidate"
)

type bundleFlag []string

func (b *bundleFlag) String() string     { return strings.Join(*b, " ") }
func (b *bundleFlag) Set(v string) error { *b = append(*b, v); return nil }

// Property, Bundle, Channel, Package are the file-based catalog schemas.
type Property struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type RelatedImage struct {
	Name  string `json:"name,omitempty"`
	Image string `json:"image"`
}

type Bundle struct {
	Schema        string         `json:"schema"`
	Name          string         `json:"name"`
	Package       string         `json:"package"`
	Image         string         `json:"image"`
	Properties    []Property     `json:"properties"`
	RelatedImages []RelatedImage `json:"relatedImages,omitempty"`
}

type ChannelEntry struct {
	Name      string `json:"name"`
	Replaces  string `json:"replaces,omitempty"`
	SkipRange string `json:"skipRange,omitempty"`
}

type Channel struct {
	Schema  string         `json:"schema"`
	Name    string         `json:"name"`
	Package string         `json:"package"`
	Entries []ChannelEntry `json:"entries"`
}

type Package struct {
	Schema         string `json:"schema"`
	Name           string `json:"name"`
	DefaultChannel string `json:"defaultChannel"`
	Description    string `json:"description,omitempty"`
	Icon           *Icon  `json:"icon,omitempty"`
}

type Icon struct {
	Data      string `json:"base64data"`
	MediaType string `json:"mediatype"`
}

func main() {
	var bundles bundleFlag
	out := flag.String("out", "catalog/quorate/catalog.yaml", "catalog file to write")
	flag.Var(&bundles, "bundle", "VERSION=DIR=IMAGE of a release, oldest first (repeat)")
	flag.Parse()
	if err := run(*out, bundles); err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

func run(out string, bundles []string) error {
	if len(bundles) == 0 {
		return fmt.Errorf("at least one --bundle is needed")
	}
	var docs []any
	ch := Channel{Schema: "olm.channel", Name: channel, Package: packageName}
	var pkg *Package
	var bs []any
	for _, spec := range bundles {
		parts := strings.SplitN(spec, "=", 3)
		if len(parts) != 3 {
			return fmt.Errorf("--bundle %q: want VERSION=DIR=IMAGE", spec)
		}
		csv, err := readCSV(parts[1])
		if err != nil {
			return err
		}
		if got := csv.Spec.Version.String(); got != parts[0] {
			return fmt.Errorf("%s holds version %s, not %s", parts[1], got, parts[0])
		}
		if pkg == nil {
			pkg = &Package{Schema: "olm.package", Name: packageName, DefaultChannel: channel, Description: csv.Annotations["description"]}
		}
		if len(csv.Spec.Icon) > 0 {
			pkg.Icon = &Icon{Data: csv.Spec.Icon[0].Data, MediaType: csv.Spec.Icon[0].MediaType}
		}
		props := []Property{{Type: "olm.package", Value: map[string]string{"packageName": packageName, "version": parts[0]}}}
		for _, crd := range csv.Spec.CustomResourceDefinitions.Owned {
			group := crd.Name[strings.Index(crd.Name, ".")+1:]
			props = append(props, Property{Type: "olm.gvk", Value: map[string]string{"group": group, "kind": crd.Kind, "version": crd.Version}})
		}
		b := Bundle{Schema: "olm.bundle", Name: csv.Name, Package: packageName, Image: parts[2], Properties: props,
			RelatedImages: []RelatedImage{{Name: "bundle", Image: parts[2]}}}
		for _, ri := range csv.Spec.RelatedImages {
			b.RelatedImages = append(b.RelatedImages, RelatedImage{Name: ri.Name, Image: ri.Image})
		}
		bs = append(bs, b)
		ch.Entries = append(ch.Entries, ChannelEntry{Name: csv.Name, Replaces: csv.Spec.Replaces, SkipRange: csv.Annotations["olm.skipRange"]})
	}
	// The oldest release in the catalog replaces nothing that the catalog holds.
	ch.Entries[0].Replaces = ""
	docs = append(docs, pkg, ch)
	docs = append(docs, bs...)
	var buf bytes.Buffer
	for _, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			return err
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

func readCSV(dir string) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifests", packageName+".clusterserviceversion.yaml"))
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, err
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	return csv, json.Unmarshal(j, csv)
}
