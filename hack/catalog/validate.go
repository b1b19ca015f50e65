package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/blang/semver/v4"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Validate checks a file-based catalog the way OLM's resolver relies on it: one package whose
// default channel exists, every channel entry backed by an olm.bundle of the package with an
// olm.package property of the right name and a semver version, replaces edges that stay inside
// the channel, valid skipRanges, and exactly one channel head.
func Validate(catalog []byte) error {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(catalog), 4096)
	var pkgs []Package
	var chans []Channel
	bundles := map[string]Bundle{}
	for {
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var head struct {
			Schema string `json:"schema"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return err
		}
		switch head.Schema {
		case "olm.package":
			var p Package
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
			pkgs = append(pkgs, p)
		case "olm.channel":
			var c Channel
			if err := json.Unmarshal(raw, &c); err != nil {
				return err
			}
			chans = append(chans, c)
		case "olm.bundle":
			var b Bundle
			if err := json.Unmarshal(raw, &b); err != nil {
				return err
			}
			if _, dup := bundles[b.Name]; dup {
				return fmt.Errorf("bundle %s is declared twice", b.Name)
			}
			bundles[b.Name] = b
		default:
			return fmt.Errorf("unknown schema %q", head.Schema)
		}
	}
	if len(pkgs) != 1 {
		return fmt.Errorf("want exactly one olm.package, found %d", len(pkgs))
	}
	pkg := pkgs[0]
	found := false
	for _, c := range chans {
		if c.Package != pkg.Name {
			return fmt.Errorf("channel %s belongs to package %q, not %q", c.Name, c.Package, pkg.Name)
		}
		found = found || c.Name == pkg.DefaultChannel
		if err := validateChannel(c, bundles, pkg.Name); err != nil {
			return fmt.Errorf("channel %s: %w", c.Name, err)
		}
	}
	if !found {
		return fmt.Errorf("default channel %q of package %s has no olm.channel", pkg.DefaultChannel, pkg.Name)
	}
	for name, b := range bundles {
		if b.Package != pkg.Name {
			return fmt.Errorf("bundle %s belongs to package %q", name, b.Package)
		}
		if b.Image == "" {
			return fmt.Errorf("bundle %s has no image", name)
		}
		if _, err := bundleVersion(b, pkg.Name); err != nil {
			return fmt.Errorf("bundle %s: %w", name, err)
		}
	}
	return nil
}

func bundleVersion(b Bundle, pkg string) (semver.Version, error) {
	for _, p := range b.Properties {
		if p.Type != "olm.package" {
			continue
		}
		m, _ := p.Value.(map[string]any)
		if m["packageName"] != pkg {
			return semver.Version{}, fmt.Errorf("olm.package property names package %v", m["packageName"])
		}
		v, _ := m["version"].(string)
		return semver.Parse(v)
	}
	return semver.Version{}, errors.New("no olm.package property")
}

func validateChannel(c Channel, bundles map[string]Bundle, pkg string) error {
	if len(c.Entries) == 0 {
		return errors.New("no entries")
	}
	in := map[string]bool{}
	for _, e := range c.Entries {
		if _, ok := bundles[e.Name]; !ok {
			return fmt.Errorf("entry %s has no olm.bundle", e.Name)
		}
		in[e.Name] = true
	}
	replaced := map[string]bool{}
	for _, e := range c.Entries {
		if e.Replaces != "" {
			if !in[e.Replaces] {
				return fmt.Errorf("%s replaces %s, which is not in the channel", e.Name, e.Replaces)
			}
			if e.Replaces == e.Name {
				return fmt.Errorf("%s replaces itself", e.Name)
			}
			replaced[e.Replaces] = true
		}
		if e.SkipRange != "" {
			r, err := semver.ParseRange(e.SkipRange)
			if err != nil {
				return fmt.Errorf("%s: skipRange %q: %w", e.Name, e.SkipRange, err)
			}
			v, _ := bundleVersion(bundles[e.Name], pkg)
			if r(v) {
				return fmt.Errorf("%s: skipRange %q includes its own version %s", e.Name, e.SkipRange, v)
			}
		}
	}
	var heads []string
	for _, e := range c.Entries {
		if !replaced[e.Name] {
			heads = append(heads, e.Name)
		}
	}
	if len(heads) != 1 {
		return fmt.Errorf("want one channel head (an entry nothing replaces), found %v", heads)
	}
	return nil
}
