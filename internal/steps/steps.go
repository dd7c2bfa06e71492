// Package steps holds runner's built-in step types, one file each. Each type
// decodes and checks its own fields and adds itself to the list Register
// installs.
//
// A new type is one file (command.go is a small one to copy) and its test:
//   - a Type (engine.Type: Name, Result, Decode) that also has
//     Spec() *engine.TypeSpec: its Doc, its Fields (engine.Field: name,
//     kind, required, default, doc, examples), an Example and its Results;
//   - Decode reads exactly the described fields through engine.Decoder;
//   - the Step's Run, and Describe (engine.Describer) for the dry run;
//   - func init() { add(theType{}) }.
//
// TestEveryTypeMatchesItsSpec (engine.CheckType) and
// TestEveryTypeExampleCompiles then hold the type to its description, and
// `go test ./cmd/runner -run TestGeneratedFilesAreCurrent -update`
// regenerates cmd/runner/plan.schema.json and docs/plan-reference.md
// from it (package plandoc).
package steps

import "github.com/planrunner/runner/internal/engine"

var builtin []engine.Type

// add is called from each type's file, in init.
func add(t engine.Type) { builtin = append(builtin, t) }

// Register installs every built-in step type into r.
func Register(r *engine.Registry) {
	for _, t := range builtin {
		r.Register(t)
	}
}

// Registry returns a registry holding the built-in step types.
func Registry() *engine.Registry {
	r := engine.NewRegistry()
	Register(r)
	return r
}
