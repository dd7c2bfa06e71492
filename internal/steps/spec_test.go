package steps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/engine"
)

// Every built-in type describes itself completely and reads exactly the
// fields it describes: a field added to Decode and not to the spec (or
// the other way round), an undocumented result field or a missing example
// fails here.
func TestEveryTypeMatchesItsSpec(t *testing.T) {
	reg := Registry()
	for _, name := range reg.Names() {
		typ, _ := reg.Lookup(name)
		if err := engine.CheckType(typ); err != nil {
			t.Error(err)
		}
	}
}

// Each type's example compiles: the reference shows only plans that load.
func TestEveryTypeExampleCompiles(t *testing.T) {
	reg := Registry()
	// The plan type's example calls review.yaml beside it.
	dir := t.TempDir()
	callee := "version: 1\nvars: {package: x}\noutputs: {verdict: steps.look.output}\nsteps:\n  - {label: look, type: command, run: echo ok}\n"
	if err := os.WriteFile(filepath.Join(dir, "review.yaml"), []byte(callee), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range reg.Names() {
		typ, _ := reg.Lookup(name)
		spec := engine.SpecOf(typ)
		if spec == nil {
			continue // TestEveryTypeMatchesItsSpec reports it
		}
		src := engine.ExamplePlan(spec.Example)
		if _, err := engine.Compile(filepath.Join(dir, name+"-example.yaml"), []byte(src), reg); err != nil {
			t.Errorf("%s: the spec's example does not load: %v\n%s", name, err, src)
		}
	}
}

// A type that reads a field its spec does not describe fails every plan
// that uses it, with a message naming the type and the field.
func TestDecodeOfUndescribedFieldIsReported(t *testing.T) {
	reg := engine.NewRegistry()
	reg.Register(sloppyType{})
	_, err := engine.Compile("p.yaml", []byte("version: 1\nsteps:\n  - {label: a, type: sloppy, a: x}\n"), reg)
	if err == nil || !strings.Contains(err.Error(), `step type sloppy reads field "b", which its TypeSpec does not describe`) {
		t.Fatalf("got %v", err)
	}
	if err := engine.CheckType(sloppyType{}); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("CheckType: %v", err)
	}
}

type sloppyType struct{}

func (sloppyType) Name() string { return "sloppy" }
func (sloppyType) Result() any  { return struct{}{} }
func (sloppyType) Spec() *engine.TypeSpec {
	return &engine.TypeSpec{Doc: "Reads a field it does not describe.", Example: "- {label: a, type: sloppy, a: x}",
		Fields: []engine.Field{{Name: "a", Kind: engine.KindString, Doc: "A.", Examples: []any{"x"}}}}
}
func (sloppyType) Decode(d *engine.Decoder) engine.Step {
	d.String("a")
	d.String("b")
	return nil
}

// A field described but never read would be accepted by the schema and
// refused by the loader: CheckType catches it.
func TestDescribedFieldNotReadIsCaught(t *testing.T) {
	err := engine.CheckType(idleType{})
	if err == nil || !strings.Contains(err.Error(), "Decode reads [a], the spec describes [a c]") {
		t.Fatalf("CheckType: %v", err)
	}
}

type idleType struct{ sloppyType }

func (idleType) Spec() *engine.TypeSpec {
	return &engine.TypeSpec{Doc: "Describes a field it never reads.", Example: "- {label: a, type: sloppy, a: x}",
		Fields: []engine.Field{
			{Name: "a", Kind: engine.KindString, Doc: "A.", Examples: []any{"x"}},
			{Name: "c", Kind: engine.KindString, Doc: "C.", Examples: []any{"x"}}}}
}
func (idleType) Decode(d *engine.Decoder) engine.Step {
	d.String("a")
	return nil
}

// A described field the type skips after an earlier problem of the step
// is not also "unknown": one mistake, one message. Skipped with no
// problem at all, the type is wrong, and every plan giving the field says so.
func TestDescribedFieldNotReadAtLoad(t *testing.T) {
	_, err := engine.Compile("p.yaml", []byte("version: 1\nsteps:\n  - {label: a, type: board, op: burn, key: k}\n"), Registry())
	if err == nil || strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), `op: "burn" is not one of [write read delete lock unlock]`) {
		t.Errorf("board with a bad op: got %v, want only the op's problem", err)
	}
	reg := engine.NewRegistry()
	reg.Register(idleType{})
	_, err = engine.Compile("p.yaml", []byte("version: 1\nsteps:\n  - {label: a, type: sloppy, a: x, c: y}\n"), reg)
	if err == nil || !strings.Contains(err.Error(), `step type sloppy did not read field "c", which its TypeSpec describes (a bug in the step type)`) {
		t.Errorf("got %v", err)
	}
}
