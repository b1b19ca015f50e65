package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCatalogValidates(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "catalog", "quorate", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(b); err != nil {
		t.Fatalf("catalog/quorate/catalog.yaml: %v", err)
	}
	// The current bundle is the channel head and upgrades from the previous one.
	csv, err := readCSV(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "name: "+csv.Name) || !strings.Contains(string(b), "replaces: "+csv.Spec.Replaces) {
		t.Errorf("the catalog does not hold bundle/ (%s replacing %s): run make catalog", csv.Name, csv.Spec.Replaces)
	}
}

func TestValidateRejectsBrokenCatalogs(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("..", "..", "catalog", "quorate", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ from, to, want string }{
		"replaces outside the channel": {"replaces: quorate.v0.1.0", "replaces: quorate.v0.0.9", "not in the channel"},
		"missing default channel":      {"defaultChannel: candidate", "defaultChannel: stable", "default channel"},
		"bad skipRange":                {"skipRange: '>=0.0.1 <0.2.0'", "skipRange: 'soon'", "skipRange"},
		"bundle of another package":    {"package: quorate\nproperties", "package: other\nproperties", "belongs to package"},
	} {
		t.Run(name, func(t *testing.T) {
			bad := strings.Replace(string(good), tc.from, tc.to, 1)
			if bad == string(good) {
				t.Fatalf("the catalog has no %q to break", tc.from)
			}
			if err := Validate([]byte(bad)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one about %q", err, tc.want)
			}
		})
	}
}
