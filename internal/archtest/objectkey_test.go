package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// keySyntax are the files allowed to split or join at `|` by hand: the
// object key's one reading and printing (observe.ObjectKey,
// ParseObjectPattern) and the policy's segment matcher, which matches any
// key of `|`-separated segments (environments are keys of one) without
// allocating.
var keySyntax = []string{"internal/observe/model.go", "internal/policy/glob.go"}

// The object key travels as observe.ObjectKey: it is read once
// (ParseObjectPattern, ParseObjectKey) and printed once (String), never
// split or joined at `|` by hand elsewhere.
func TestObjectKeysAreNotSplitByHand(t *testing.T) {
	for _, p := range handSplitKeys(t, "../..") {
		t.Error(p)
	}
}

func handSplitKeys(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if matchAny(keySyntax, filepath.ToSlash(rel)) {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !isIdent(sel.X, "strings") || !splitsOrJoins(sel.Sel.Name) || len(call.Args) < 2 {
					return true
				}
				if lit, ok := call.Args[1].(*ast.BasicLit); ok && lit.Value == `"|"` {
					out = append(out, fset.Position(call.Pos()).String()+": strings."+sel.Sel.Name+
						` at "|": read or print an object key with observe.ObjectKey`)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func splitsOrJoins(name string) bool {
	switch name {
	case "Split", "SplitN", "SplitAfter", "SplitAfterN", "Cut", "Join":
		return true
	}
	return false
}
