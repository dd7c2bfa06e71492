// Package runner runs declarative workflows from Go: the API the runner
// command line is built on, for a program that embeds it.
//
// A plan is a YAML file of steps (run a command, ask a model, write a
// key, branch, wait for a person...). [Load] reads and checks one: every
// problem, from the YAML to a misspelt name in an expression, comes back
// at once as [Problems], each at its file:line:col.
//
// A run is one execution of a plan. [Run] starts it and returns when it
// ends (succeeded, failed, interrupted by cancelling its context, or
// waiting for a person's answer). Everything the run does is written to
// its blackboard: the steps it ran and what each returned, the keys its
// steps and agents wrote, and every model answer. The blackboard is saved
// as blackboard.json as the run goes, so a killed run loses nothing.
//
// A saved run is read with [Open], and replayed with [Replay]: offline,
// each model answer (and, by default, each command's result) taken from
// the recording, so a replay of an unchanged plan matches it exactly, and
// a changed plan shows the first step where it would go another way (a
// [Divergence]).
//
// A program adds its own step types: implement [Type] and [Step], add
// them to a [Registry] from [NewRegistry], and pass it in
// [Options].Types.
//
// A run from Go, as `runner run plan.yaml --var who=you` does:
//
//	bb, err := runner.Run(ctx, "plan.yaml", runner.Options{
//		Vars: map[string]string{"who": "you"},
//	})
//	if bb == nil {
//		log.Fatal(err) // it did not start: a plan's Problems, a bad var, a missing API key...
//	}
//	fmt.Println(bb.Status(), bb.Path()) // succeeded WORKDIR/.runner/runs/<id>/blackboard.json
//	for _, s := range bb.Steps() {
//		fmt.Println(s.Label, s.Status, s.Output)
//	}
//	greeting, ok := bb.Get("greeting") // a key the plan wrote
//
// The root package imports the engine (internal/engine), the built-in
// step types (internal/steps), plans (internal/plans), the blackboard
// (internal/board), runs as the CLI sets them up (internal/runs) and
// replay (internal/replay); only the step-type aliases name their types.
package runner
