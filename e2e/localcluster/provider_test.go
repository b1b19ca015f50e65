package localcluster

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestCopyContainerLogs(t *testing.T) {
	root, dest := t.TempDir(), t.TempDir()
	for f, content := range map[string]string{
		"quorate-system_quorate-operator-7d9_u1/manager/0.log":                    "first\n",
		"quorate-system_quorate-operator-7d9_u1/manager/1.log":                    "after a restart\n",
		"operators_peer-manager-5c_u2/manager/0.log":                              "peer\n",
		"demo_etcd-0_u3/etcd/0.log":                                               "member\n",
		"quorate-system_quorate-operator-7d9_u1/manager/0.log.20261126-101010.gz": "rotated\n",
	} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyContainerLogs(root, "manager", dest); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	err := filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dest, p)
		got[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"quorate-system_quorate-operator-7d9_u1/manager/0.log": "first\n",
		"quorate-system_quorate-operator-7d9_u1/manager/1.log": "after a restart\n",
		"operators_peer-manager-5c_u2/manager/0.log":           "peer\n",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("copied %v, want %v", got, want)
	}
}
