// Package steps holds runner's built-in step types, one file each. Each type
// decodes and checks its own fields and adds itself to the list Register
// installs.
package steps

import "github.com/planrunner/runner/engine"

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
