package modelapi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/modelapi"
)

// TestNoSwitchOnAPINames fails when code outside the registry's own
// packages compares a value with the name of a registered API or provider
// (case "openai":, x == "anthropic", != "scripted"): that is a second list
// of APIs, which drifts from the registry and decides for a name the
// registry does not know. Ask modelapi.Lookup / LookupWire instead. The
// packages that name themselves (a client's Error.Provider) or another
// program's provider (an importer reading a foreign transcript) assign
// names, which is allowed; only comparisons are flagged.
func TestNoSwitchOnAPINames(t *testing.T) {
	names := map[string]bool{}
	for _, a := range modelapi.All() {
		names[a.Name], names[a.Provider] = true, true
		if a.Wire != nil {
			for _, r := range a.Wire.Routes() {
				names[r.API] = true
			}
		}
	}
	// "messages" and "models" are also plain JSON keys and words; a
	// comparison with them is flagged only in a switch on a provider or
	// api value, which the check below cannot tell apart, so they are
	// left out: their wires are found through routes, never by name.
	delete(names, "messages")
	delete(names, "models")
	root := filepath.Join("..", "..")
	allowed := []string{
		filepath.Join("internal", "modelapi") + string(filepath.Separator),
	}
	fset := token.NewFileSet()
	var found []string
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			for _, a := range allowed {
				if strings.HasPrefix(rel, a) {
					return nil
				}
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			isName := func(e ast.Expr) bool {
				lit, ok := e.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return false
				}
				s, err := strconv.Unquote(lit.Value)
				return err == nil && names[s]
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CaseClause:
					for _, e := range n.List {
						if isName(e) {
							found = append(found, fset.Position(e.Pos()).String())
						}
					}
				case *ast.BinaryExpr:
					if (n.Op == token.EQL || n.Op == token.NEQ) && (isName(n.X) || isName(n.Y)) {
						found = append(found, fset.Position(n.Pos()).String())
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range found {
		t.Errorf("%s: compares with a model API's name; ask the registry (modelapi.Lookup, LookupWire) instead", f)
	}
}
