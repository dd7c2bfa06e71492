package steps

import "github.com/planrunner/runner/internal/engine"

// The `plan` type (a sub-plan call) is the engine's own: the interpreter
// runs the callee's steps (internal/engine/subplan.go). It is registered here with
// the other built-in types so the schema, the reference and the editor
// hovers describe its fields.
func init() { add(engine.PlanType{}) }
