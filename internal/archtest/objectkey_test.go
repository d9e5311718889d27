package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
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
// split or joined at `|` by hand elsewhere, by strings.Split or Join or by
// concatenating "|" (an index keyed on part of a key takes a struct, as
// observe.AuditName does).
func TestObjectKeysAreNotSplitByHand(t *testing.T) {
	for _, p := range handSplitKeys(t, "../..") {
		t.Error(p)
	}
}

// The rule finds each way of splitting or joining at `|` by hand, and none
// of the other uses of a `|`: testdata/handsplit holds a module's worth of
// both, each line the rule must find marked `// found: why`.
func TestHandSplitRuleFindsEachForm(t *testing.T) {
	ruleFindsMarkedLines(t, filepath.Join("testdata", "handsplit"), handSplitKeys)
}

// ruleFindsMarkedLines checks that rule, run over the module-shaped tree
// at root, finds exactly the lines marked `// found: why` (at least four,
// so every form is there) and nothing else; findings are file:line:column:
// message.
func ruleFindsMarkedLines(t *testing.T, root string, rule func(*testing.T, string) []string) {
	t.Helper()
	want := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "// found: ") {
				want[fmt.Sprintf("%s:%d", p, i+1)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 4 {
		t.Fatalf("%s marks %d lines, want every form", root, len(want))
	}
	got := map[string]bool{}
	for _, p := range rule(t, root) {
		f := strings.SplitN(p, ":", 3)
		got[f[0]+":"+f[1]] = true
		if !want[f[0]+":"+f[1]] {
			t.Errorf("found a line not marked found: %s", p)
		}
	}
	for l := range want {
		if !got[l] {
			t.Errorf("%s: marked found, not found", l)
		}
	}
}

func handSplitKeys(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir // not built, as the go tool ignores it
			}
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
				if b, ok := n.(*ast.BinaryExpr); ok && b.Op == token.ADD && (isBar(b.X) || isBar(b.Y)) {
					out = append(out, fset.Position(b.OpPos).String()+
						`: "|" concatenated: print an object key with observe.ObjectKey, key an index on a struct`)
					return false // one finding for a + "|" + b + "|" + c
				}
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !isIdent(sel.X, "strings") || !splitsOrJoins(sel.Sel.Name) || len(call.Args) < 2 {
					return true
				}
				if isBar(call.Args[1]) {
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

// isBar says whether e is the string literal "|".
func isBar(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	return ok && lit.Kind == token.STRING && (lit.Value == `"|"` || lit.Value == "`|`")
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
