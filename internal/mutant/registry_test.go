package mutant

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every mutant is described and placed: a unique name, a class, scenarios to kill it, and
// exactly the names the code asks On for.
func TestRegistry(t *testing.T) {
	if len(Registry) < 15 {
		t.Fatalf("%d mutants; issue 45 asks for at least 15", len(Registry))
	}
	seen := map[string]bool{}
	for _, m := range Registry {
		if seen[m.Name] {
			t.Errorf("mutant %s twice", m.Name)
		}
		seen[m.Name] = true
		if m.Class == "" || m.Where == "" || m.Description == "" || len(m.Scenarios) == 0 {
			t.Errorf("mutant %s: class, place, description and scenarios are all needed: %+v", m.Name, m)
		}
	}
	used := map[string]bool{}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == ".git" || p == filepath.Join(root, "internal", "mutant")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, part := range strings.Split(string(b), `mutant.On("`)[1:] {
			name, _, _ := strings.Cut(part, `"`)
			if !seen[name] {
				t.Errorf("%s asks for mutant %q, which the registry does not list", p, name)
			}
			used[name] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Registry {
		if !used[m.Name] {
			t.Errorf("mutant %s is in the registry but no code asks for it", m.Name)
		}
	}
}
