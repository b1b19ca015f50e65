// Package release tests hack/release.sh's refusals: a version that is not semantic, a dirty tree.
package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// script runs hack/release.sh (copied into dir/hack with lib.sh when dir is not empty) with
// RELEASE_DRY_RUN=true, which stops after the checks; it returns the output and the exit error.
func script(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	path := filepath.Join("..", "release.sh")
	if dir != "" {
		path = filepath.Join(dir, "hack", "release.sh")
	}
	cmd := exec.Command("bash", append([]string{path}, args...)...)
	cmd.Env = append(os.Environ(), "RELEASE_DRY_RUN=true")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=test", "-c", "user.email=test@example.com"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestRefusesVersionsThatAreNotSemantic(t *testing.T) {
	for _, v := range []string{"", "v0.3.0", "0.3", "0.3.0.1", "01.2.3", "0.3.0-rc.01", "0.3.0+build.1", "0.3.0-", "latest"} {
		out, err := script(t, "", v)
		if err == nil {
			t.Errorf("release.sh %q passed its checks:\n%s", v, out)
			continue
		}
		if !strings.Contains(out, "usage:") && !strings.Contains(out, "is not a semantic version") {
			t.Errorf("release.sh %q: %s", v, out)
		}
	}
}

func TestRefusesADirtyTree(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"release.sh", "lib.sh"} {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hack", f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitignore", "/dist/\n/bin/\n")
	write("README.md", "a release\n")
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "first")

	// Ignored files (what builds leave in bin/ and dist/) are no change.
	write("dist/quorate.yaml", "old\n")
	if out, err := script(t, dir, "0.3.0-rc.0"); err != nil || !strings.Contains(out, "would release 0.3.0-rc.0") {
		t.Fatalf("a clean tree with ignored files was refused: %v\n%s", err, out)
	}
	for _, change := range []struct {
		name string
		do   func()
		undo func()
	}{
		{"a modified file", func() { write("README.md", "changed\n") }, func() { git(t, dir, "checkout", "README.md") }},
		{"an untracked file", func() { write("new.go", "package x\n") }, func() { _ = os.Remove(filepath.Join(dir, "new.go")) }},
		{"a staged change", func() { write("README.md", "staged\n"); git(t, dir, "add", "README.md") }, func() { git(t, dir, "reset", "-q", "--hard") }},
	} {
		change.do()
		out, err := script(t, dir, "0.3.0")
		if err == nil || !strings.Contains(out, "the tree is dirty") {
			t.Errorf("%s: release.sh did not refuse: %v\n%s", change.name, err, out)
		}
		change.undo()
	}
}
