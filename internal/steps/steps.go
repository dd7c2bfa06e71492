// Package steps holds runner's built-in step types, one file each. Each type
// decodes and checks its own fields and adds itself to the list Register
// installs.
//
// A new type is one file (command.go is a small one to copy) and its test:
//   - a Type (engine.Type: Name, Result, Decode) that also has
//     Spec() *engine.TypeSpec: its Doc, its Fields (engine.Field: name,
//     kind, required, default, doc, examples), an Example and its Results;
//   - Caps() engine.Caps (engine.Capable): what it is for everything that
//     does not run it. Declare nothing and it touches the world: a
//     replay serves it from its recording offline, --reuse --offline from
//     the reused run, Temporal runs it as an activity. Declare
//     ReplayRerun only if it is a function of the board, the clock and
//     the recorded model answers; SchedPure only if it reads and writes
//     nothing but the board; and in Shows the kinds of result it has
//     (tests, an edit, a model's answer...), which the report, eval,
//     traces, JUnit and GitHub Actions output show as such, by kind;
//   - Decode reads exactly the described fields through engine.Decoder;
//   - the Step's Run, and Describe (engine.Describer) for the dry run;
//   - func init() { add(theType{}) }.
//
// No code outside a type's file asks for a type by its name: it asks the
// type (engine.CapsOf, or Registry.Caps for a saved run's type name).
//
// TestEveryTypeMatchesItsSpec (engine.CheckType) and
// TestEveryTypeExampleCompiles then hold the type to its description, and
// `go test ./cmd/runner -run TestGeneratedFilesAreCurrent -update`
// regenerates cmd/runner/plan.schema.json and docs/plan-reference.md
// from it (package plandoc).
//
// It imports engine, plans, board and what the types run (agents, patch,
// testrun, the sys packages); never runs, replay or the views, which
// import it.
package steps

import (
	"slices"
	"sync"

	"github.com/planrunner/runner/internal/engine"
)

var builtin []engine.Type

// add is called from each type's file, in init.
func add(t engine.Type) { builtin = append(builtin, t) }

var (
	plugMu  sync.Mutex
	plugged []*plug
)

// plug is one Plug call, told apart from another of an equal type.
type plug struct{ t engine.Type }

// Plug adds a type defined outside this package (a test's) to those
// Register installs, until unplug is called: every run, replay and view
// that asks this package for its types then knows it.
func Plug(t engine.Type) (unplug func()) {
	plugMu.Lock()
	defer plugMu.Unlock()
	p := &plug{t}
	plugged = append(plugged, p)
	return func() {
		plugMu.Lock()
		defer plugMu.Unlock()
		if i := slices.Index(plugged, p); i >= 0 {
			plugged = slices.Delete(plugged, i, i+1)
		}
	}
}

// Register installs every built-in step type, and those plugged in, into r.
func Register(r *engine.Registry) {
	for _, t := range builtin {
		r.Register(t)
	}
	plugMu.Lock()
	defer plugMu.Unlock()
	for _, p := range plugged {
		r.Register(p.t)
	}
}

// Registry returns a registry holding the built-in step types.
func Registry() *engine.Registry {
	r := engine.NewRegistry()
	Register(r)
	return r
}
