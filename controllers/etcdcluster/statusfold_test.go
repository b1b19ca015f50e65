package etcdcluster

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// foldWriters are the only functions that may write a status, by package directory: the fold
// of a pass's shares, the status write itself (onto a copy of the cluster as read), the
// certificates' Share.Fold, and RecordExpiry, which folds one Secret's expiry for the tests of
// the figures.
var foldWriters = map[string][]string{
	".":               {"fold", "writeStatus"},
	"../certificates": {"Fold", "RecordExpiry"},
}

// Nothing but the fold writes an EtcdCluster's status: no assignment (=, op=, ++, --) whose
// left side goes through a .Status, and no address taken of one (&c.Status.Conditions for
// meta.SetStatusCondition), outside foldWriters.
func TestStatusIsWrittenOnlyByTheFold(t *testing.T) {
	for dir, allowed := range foldWriters {
		for _, w := range statusWrites(t, dir) {
			if !slices.Contains(allowed, w.fn) {
				t.Errorf("%s: %s writes a status outside the fold: return a share and let the pass fold it (fold.go)", w.pos, w.fn)
			}
		}
	}
}

type statusWrite struct {
	pos string
	fn  string
}

// statusWrites lists the writes through .Status in the non-test Go files of dir.
func statusWrites(t *testing.T, dir string) []statusWrite {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []statusWrite
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			for _, e := range statusTargets(fd.Body) {
				out = append(out, statusWrite{pos: fset.Position(e.Pos()).String(), fn: fd.Name.Name})
			}
		}
	}
	return out
}

// statusTargets are the expressions under n that are written, or whose address is taken,
// through a .Status.
func statusTargets(n ast.Node) []ast.Expr {
	var out []ast.Expr
	ast.Inspect(n, func(n ast.Node) bool {
		var targets []ast.Expr
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE {
				targets = n.Lhs
			}
		case *ast.IncDecStmt:
			targets = []ast.Expr{n.X}
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				targets = []ast.Expr{n.X}
			}
		}
		for _, e := range targets {
			if throughStatus(e) {
				out = append(out, e)
			}
		}
		return true
	})
	return out
}

// throughStatus reports whether e reaches what it names through a field called Status.
func throughStatus(e ast.Expr) bool {
	for {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			if x.Sel.Name == "Status" {
				return true
			}
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		default:
			return false
		}
	}
}

// The check finds a write outside the fold (so it would fail on a status written by a part).
func TestStatusWritesAreFound(t *testing.T) {
	src := `package p
func part(c *T) {
	c.Status.ClusterID = "x"
	c.Status.Join.Remaining++
	meta.SetStatusCondition(&c.Status.Conditions, cond)
	c.Status.Members[0].Name = "m"
	st := c.Status
	_ = st
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := len(statusTargets(f))
	if found != 4 {
		t.Fatalf("found %d writes through .Status, want 4", found)
	}
}
