package main

import (
	"io"

	"github.com/planrunner/runner/internal/engine"
)

// dryRun prints what a run would do, in order, and runs nothing; each step
// type says what it shows (engine.Describer).
func dryRun(w io.Writer, prog *engine.Program, vars map[string]any) {
	engine.DryRun(w, prog, vars)
}
