// Package engine is runner's interpreter: it compiles a plan against the
// registered step types and runs it against a blackboard.
//
// The pieces, and the files they live in:
//   - A Type (steptype.go) is a kind of step (command, llm, ...): it
//     decodes its own fields through a Decoder (decoder.go) and returns a
//     Step, which runs with a StepContext. Package steps holds the
//     built-in types; a Registry maps `type:` names to them.
//   - A Program (compile.go) is a plan checked and compiled: every step
//     decoded by its type into a Node, every expression compiled.
//   - A Runner (runner.go) runs a Program against a board.Board: the
//     step visits, their attempts, retries and records, the parallel
//     groups (group.go, eachgroup.go), for_each (foreach.go), needs
//     (needs.go), sub-plans (subplan.go), resumes (restore.go,
//     continue.go) and replays (script.go: what a recording decided).
//   - A Driver (interp.go) is what the interpreter needs from whoever
//     schedules the steps: this process (local.go: goroutines and
//     timers) or a Temporal workflow (module temporal). The interpreter
//     is written once against it, so both decide every step the same way.
//   - Expressions and templates (expr.go, template.go, scope.go): an Expr
//     is compiled against the plan's typed Scope (the steps, vars, env,
//     secrets a plan may name), so a misspelt name is refused when the
//     plan loads; a Template is text with ${{ }} parts. A shell script's
//     ${{ }} values go through package shellsafe (shellscript.go), which
//     keeps them data.
//
// It may import the board, the plan model (plans), the model clients
// (agents), its own subpackage shellsafe, the small helpers under
// internal (bigjson, jsonschema, sys/readlimit) and expr-lang/expr for
// expressions; never the step types (steps), the views, the servers or
// cmd, which import it (and plug step types in through the Registry).
package engine
