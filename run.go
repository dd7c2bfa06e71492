package runner

import (
	"context"
	"errors"
	"runtime/debug"

	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/runs"
	"github.com/rs/zerolog"
)

// Options say how to run a plan: the flags of `runner run`. The zero
// value runs in the current directory with the plan's own vars and
// agents, logging nothing.
type Options struct {
	// Workdir is the directory steps run in; "": the current directory.
	Workdir string
	// Vars set the plan's vars by name (--var NAME=VALUE); each is
	// checked against the var's type.
	Vars map[string]string
	// Agents change the plan's agents for this run, each
	// "NAME.FIELD=VALUE" as --agent takes it (FIELD: provider, model,
	// base_url or api_key_env). They are saved with the run.
	Agents []string
	// Out is where blackboard.json is written; "":
	// WORKDIR/.runner/runs/<run id>/blackboard.json.
	Out string
	// Logger receives the run's events; the zero Logger logs nothing.
	Logger zerolog.Logger
	// Types are the step types the plan may use; nil: the built-in ones.
	Types *Registry
}

// Run runs the plan file at plan to its end, as `runner run` does, and
// returns its blackboard. Cancel ctx to stop it: the run ends as
// interrupted, its blackboard saved.
//
// A run that could not start (a plan with [Problems], a bad var or agent,
// a missing API key) returns a nil Blackboard and why. A run that started
// returns its Blackboard, and an error when it did not succeed, the same
// as [Blackboard.Err].
func Run(ctx context.Context, plan string, o Options) (*Blackboard, error) {
	agents := plans.AgentOverrides{}
	for _, a := range o.Agents {
		if err := agents.Set(a); err != nil {
			return nil, err
		}
	}
	r, err := runs.New(runs.Options{Plan: plan, Vars: o.Vars, Agents: agents, Workdir: o.Workdir,
		Board: o.Out, Version: version(), Registry: o.Types})
	if err != nil {
		return nil, startError(err)
	}
	res, err := r.Execute(ctx, runs.Env{Log: o.Logger})
	if err != nil {
		return nil, startError(err)
	}
	return &Blackboard{b: res.Board, err: res.Err}, res.Err
}

// startError is why a run or replay did not start: a plan's problems as
// Problems.
func startError(err error) error {
	var pe *runs.PlanError
	if errors.As(err, &pe) {
		return planError(pe.Err)
	}
	return err
}

// modulePath is this module's import path, to find its version in the
// program's build information.
const modulePath = "github.com/planrunner/runner"

// version is the version of runner built into the program, saved with
// each run as the runner that made it; "" when the build does not say.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if bi.Main.Path == modulePath {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			return d.Version
		}
	}
	return ""
}
