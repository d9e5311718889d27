package bot

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// The executor never calls back into the lifecycle while it carries out a
// chain: the only lifecycle names execute.go spells are the effect types
// and their constants, and the executor holds no lifecycle.Input nor the
// repository cycle that does, so every lifecycle method it can reach is
// one of an effect's own data.
func TestExecutorReachesTheLifecycleOnlyThroughEffects(t *testing.T) {
	for _, p := range executorProblems(t, "execute.go") {
		t.Error(p)
	}
}

// effectNames are the lifecycle identifiers the executor may name: the
// effect type, what it carries, and the kinds and recoveries it switches on.
var effectNames = []string{
	"Effect", "Pull", "Kind",
	"Open", "Update", "Keep", "Close", "Comment", "ArmAutoMerge", "Merge", "Skip", "Cleanup", "Check", "Disarm",
	"Prove", "Revert", "Wait", "Drift", "Record", "Review", "Label", "Unlabel",
	"LeaveAlone", "Reuse", "Rewrite",
}

func executorProblems(t *testing.T, file string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && id.Name == "lifecycle" && !slices.Contains(effectNames, n.Sel.Name) {
				out = append(out, fset.Position(n.Pos()).String()+": the executor reaches lifecycle."+n.Sel.Name+", not an effect type")
			}
		case *ast.Ident:
			if n.Name == "repoCycle" || n.Name == "Input" {
				out = append(out, fset.Position(n.Pos()).String()+": the executor reaches "+n.Name+", which decides")
			}
		case *ast.FuncDecl:
			if n.Recv != nil && !strings.Contains(typeNames(n.Recv), "executor") {
				out = append(out, fset.Position(n.Pos()).String()+": "+n.Name.Name+" is not the executor's")
			}
		}
		return true
	})
	return out
}

func typeNames(fl *ast.FieldList) string {
	var b strings.Builder
	for _, f := range fl.List {
		ast.Inspect(f.Type, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				b.WriteString(id.Name)
			}
			return true
		})
	}
	return b.String()
}
