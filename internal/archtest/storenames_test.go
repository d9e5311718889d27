package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// storeNeutral are the packages whose rules hold for every desired store:
// they know a store outside the repository only by its reference
// (repoconfig.StoreRef) and by what its reader says of it (plan.Head).
var storeNeutral = []string{"internal/plan", "internal/lifecycle"}

// storeNames are the names of one store the store-neutral packages may
// not use, by package: a concrete store's configuration, its method and
// its revision syntax.
var storeNames = map[string][]string{
	"repoconfig": {"ConfigHub", "ConfigHubOf", "StoreConfigHub"},
	"receipt":    {"MethodConfigHubRevision", "ConfigHubRevision"},
}

// storeNamesExcused are the functions, file:Func, that may: reading a
// marker in the form a ConfigHub Unit's had before revisions named their
// store.
var storeNamesExcused = map[string]string{
	"internal/lifecycle/revision.go:UnmarshalJSON": "reads ConfigHub's earlier marker form",
}

// The planner and the lifecycle name no concrete store: not its
// configuration (a unit's ConfigHub field or type), not its method or
// revision syntax, so a new store is a reader and a writer behind their
// ports and no change to either.
func TestRulesNameNoStore(t *testing.T) {
	for _, p := range storeNamesIn(t, "../..") {
		t.Error(p)
	}
}

// The rule finds each way of naming a store, and none of the neutral
// names: testdata/storenames holds both, each line the rule must find
// marked `// found: why`.
func TestStoreNameRuleFindsEachForm(t *testing.T) {
	ruleFindsMarkedLines(t, filepath.Join("testdata", "storenames"), storeNamesIn)
}

// storeNamesIn lists, as file:line:column: message, each use of a store's
// name in the non-test files of the store-neutral packages under root.
func storeNamesIn(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	for _, dir := range storeNeutral {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			p := filepath.Join(root, dir, name)
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				if fn, ok := decl.(*ast.FuncDecl); ok && storeNamesExcused[dir+"/"+name+":"+fn.Name.Name] != "" {
					continue
				}
				ast.Inspect(decl, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if msg := storeName(sel); msg != "" {
						out = append(out, fset.Position(sel.Sel.Pos()).String()+": "+msg)
					}
					return true
				})
			}
		}
	}
	return out
}

// storeName says why sel names a concrete store, or "".
func storeName(sel *ast.SelectorExpr) string {
	if id, ok := sel.X.(*ast.Ident); ok {
		for _, n := range storeNames[id.Name] {
			if sel.Sel.Name == n {
				return id.Name + "." + n + " names one store: use the unit's StoreRef and its reader's Head"
			}
		}
		if storeNames[id.Name] != nil {
			return ""
		}
	}
	if sel.Sel.Name == "ConfigHub" {
		return ".ConfigHub names one store's configuration: use the unit's StoreRef"
	}
	return ""
}
