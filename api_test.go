package runner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// stepTypeAliases are the internal types the API names on purpose: what a
// program writes a step type against.
var stepTypeAliases = []string{"Type", "Step", "Result", "StepContext", "Decoder", "Template", "Registry", "Caps", "Sched", "ReplayMode", "Shows"}

// packageFiles parses the package's own Go files in dir, tests left out.
func packageFiles(t *testing.T, dir string) []*ast.File {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// internalImports maps each internal package a file imports, by the name
// the file uses, to its path under internal/.
func internalImports(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		rest, ok := strings.CutPrefix(p, modulePath+"/internal/")
		if !ok {
			continue
		}
		name := path.Base(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		out[name] = rest
	}
	return out
}

// leaks lists the exported declarations of files whose signatures name a
// type of an internal package, each as "Decl: pkg.Type", except the
// aliases allowed.
func leaks(files []*ast.File, allowed []string) []string {
	var out []string
	for _, f := range files {
		internal := internalImports(f)
		check := func(where string, e ast.Expr) {
			if e == nil {
				return
			}
			ast.Inspect(e, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && internal[x.Name] != "" {
						out = append(out, where+": "+x.Name+"."+sel.Sel.Name)
					}
				}
				return true
			})
		}
		fields := func(where string, l *ast.FieldList) {
			if l == nil {
				return
			}
			for _, fl := range l.List {
				if len(fl.Names) == 0 || slices.ContainsFunc(fl.Names, func(n *ast.Ident) bool { return n.IsExported() }) {
					check(where, fl.Type)
				}
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				check(d.Name.Name, d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						name := s.Name.Name
						switch {
						case !s.Name.IsExported():
						case s.Assign.IsValid():
							if !slices.Contains(allowed, name) {
								check(name, s.Type)
							}
						default:
							switch ty := s.Type.(type) {
							case *ast.StructType:
								fields(name, ty.Fields)
							case *ast.InterfaceType:
								fields(name, ty.Methods)
							default:
								check(name, ty)
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								check(n.Name, s.Type)
							}
						}
					}
				}
			}
		}
	}
	return out
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	e := recv.List[0].Type
	if st, ok := e.(*ast.StarExpr); ok {
		e = st.X
	}
	id, ok := e.(*ast.Ident)
	return ok && id.IsExported()
}

func TestLeaksFindsInternalTypesInTheExportedAPI(t *testing.T) {
	const head = "package p\nimport \"github.com/planrunner/runner/internal/engine\"\n"
	cases := []struct {
		name, src string
		want      []string
	}{
		{"an exported function's result", "func Load() *engine.Program { return nil }", []string{"Load: engine.Program"}},
		{"an exported function's parameter", "func Run(r *engine.Runner) {}", []string{"Run: engine.Runner"}},
		{"an unexported function", "func load() *engine.Program { return nil }", nil},
		{"a function's body", "func Names() []string { return engine.NewRegistry().Names() }", nil},
		{"an exported method", "type P struct{}\nfunc (*P) Prog() *engine.Program { return nil }", []string{"Prog: engine.Program"}},
		{"a method of an unexported type", "type p struct{}\nfunc (*p) Prog() *engine.Program { return nil }", nil},
		{"an exported field", "type P struct{ Prog *engine.Program }", []string{"P: engine.Program"}},
		{"an unexported field", "type P struct{ prog *engine.Program }", nil},
		{"an embedded field", "type P struct{ *engine.Program }", []string{"P: engine.Program"}},
		{"an allowed alias", "type Step = engine.Step", nil},
		{"an alias not allowed", "type Runner = engine.Runner", []string{"Runner: engine.Runner"}},
		{"a defined type", "type Prog engine.Program", []string{"Prog: engine.Program"}},
		{"an exported variable", "var Default *engine.Registry", []string{"Default: engine.Registry"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := parser.ParseFile(token.NewFileSet(), "p.go", head+c.src, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := leaks([]*ast.File{f}, []string{"Step"}); !slices.Equal(got, c.want) {
				t.Errorf("leaks = %q, want %q", got, c.want)
			}
		})
	}
}

// The API names internal types only through the step-type aliases: a
// program never needs an internal package to call it.
func TestExportedAPINamesNoInternalTypeButTheStepTypeAliases(t *testing.T) {
	if got := leaks(packageFiles(t, "."), stepTypeAliases); len(got) > 0 {
		t.Errorf("the exported API names internal types:\n%s", strings.Join(got, "\n"))
	}
}

// The package wraps the internal packages the CLI runs plans with and no
// others, so the API and the CLI cannot drift and an embedder links only
// what it uses.
func TestImportsOnlyTheInternalPackagesItWraps(t *testing.T) {
	want := []string{"board", "engine", "plans", "replay", "runs", "steps"}
	var got []string
	for _, f := range packageFiles(t, ".") {
		for _, p := range internalImports(f) {
			if !slices.Contains(got, p) {
				got = append(got, p)
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("internal imports = %q, want %q", got, want)
	}
}
