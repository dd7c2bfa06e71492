// Package engine compiles a plan into a program of steps and runs it
// against a board: scheduling, retries, loops, groups, expressions and the
// record of every step visit. It knows step types only through Type and
// the Caps a type declares (steptype.go); the types themselves are in
// package steps. It may import plans, board, agents and the sys packages,
// never steps, runs, replay or the views.
package engine

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
	"github.com/rs/zerolog"
)

// A Type is a kind of step (command, llm, apply_diff, ...). The engine knows
// types only through this interface, so packages plug new ones in by name.
type Type interface {
	// Name is the value of `type:` in a plan.
	Name() string
	// Result returns a zero value of the type's result struct. Its exported
	// fields with `json` tags are the type's result fields: they are what
	// `steps.<label>.<field>` may name in an expression (checked at load
	// time) and how the result is saved in blackboard.json.
	Result() any
	// Decode reads and checks the type's own fields from the step's YAML
	// mapping. Problems go to d (with line:col); the returned Step is used
	// only when the whole plan is free of problems.
	Decode(d *Decoder) Step
}

// Capable is a Type that declares its Caps. A type that does not has the
// zero Caps, which are the safe ones: it touches the world, so a replay
// serves it from its recording offline, --reuse --offline from the reused
// run, and Temporal runs it as an activity; no view shows it as more than
// a step.
type Capable interface {
	Caps() Caps
}

// Caps are what a step type is for everything that treats types
// differently without running them: the schedulers, replay and reuse,
// which read a program, and the views, which read a saved run, where a
// step's type is only its name (Registry.Caps).
type Caps struct {
	// Sched is where a scheduler that does not run every step alike runs
	// it (Temporal: inline, waiting durably, or as an activity).
	Sched Sched
	// Replay is how a replay and --reuse --offline treat its visits.
	Replay Replay
	// Bounded: its own timeout bounds everything it does (it stops its
	// process then), so a step with a short one may run where a lost
	// worker is noticed only by that timeout (a Temporal local activity).
	Bounded bool
	// Shows are the kinds of result it has, which the views show as such
	// whatever the type's name.
	Shows Shows
}

// Replay is how a replay treats a step type's visits.
type Replay int

const (
	// ReplayWorld: the result depends on the world outside the board
	// (files, processes). A replay in a workdir runs it for real; an
	// offline one, and --reuse --offline, serve its recorded result. The
	// default.
	ReplayWorld Replay = iota
	// ReplayRerun: the result is a function of the board, the clock and
	// the model answers, which a replay serves from the recording; so the
	// step is run again, offline too.
	ReplayRerun
	// ReplayRecorded: the result comes from a person: every replay takes
	// it from the recording, and a timeout's default where it was taken.
	ReplayRecorded
)

// Shows is a set of kinds of result, for the views.
type Shows uint

const (
	// ShowsModel: the output is one agent's answer, and the result's
	// `agent` names the agent (its edits are counted, its span is the
	// agent's invocation).
	ShowsModel Shows = 1 << iota
	// ShowsAgents: several agents' turns, told apart in its result.
	ShowsAgents
	// ShowsEdit: it applied the diff given as its `diff` field; the
	// result's `files` are the files it changed (path, op, added, removed).
	ShowsEdit
	// ShowsTests: its result is a test run's (testrun.Result: outcome,
	// counts, failures, build errors).
	ShowsTests
	// ShowsProcess: it ran one process; the result has its exit_code,
	// stdout and stderr.
	ShowsProcess
	// ShowsAsk: it asks a person; the result's `answer` is what they said.
	ShowsAsk
	// ShowsRoute: its output says where the run went next, not what it
	// made (so it is no run's last output).
	ShowsRoute
)

// Has reports whether s holds every kind in k.
func (s Shows) Has(k Shows) bool { return s&k == k && k != 0 }

// Any reports whether s holds one of the kinds in k.
func (s Shows) Any(k Shows) bool { return s&k != 0 }

// CapsOf is what t declares: its Caps, the zero ones for a type that
// declares none or for nil (a group).
func CapsOf(t Type) Caps {
	if c, ok := t.(Capable); ok {
		return c.Caps()
	}
	return Caps{}
}

// Sched is where a scheduler that does not run every step the same way
// runs a step: a Temporal workflow runs pure steps inline (replaying them
// is deterministic), waits durably for a person's answer, and sends
// everything else to a worker as an activity. In one process every step
// runs alike.
type Sched int

const (
	// SchedWorld: the step touches the world (processes, files, models):
	// it runs where the work is. The default.
	SchedWorld Sched = iota
	// SchedPure: the step only reads and writes the board.
	SchedPure
	// SchedWaits: the step waits for a person's answer (ErrWaiting until
	// there is one).
	SchedWaits
)

// SchedOf is how t is scheduled (Caps.Sched): SchedWorld unless it says
// otherwise.
func SchedOf(t Type) Sched { return CapsOf(t).Sched }

// OutputTyper is a Type whose steps' output always has one Go type (a
// zero value of it: "" for text). Expressions on steps.<label>.output of
// such a step are then checked at load: `if: steps.build.output` is refused
// before any step runs, not when it is reached.
type OutputTyper interface {
	OutputType() any
}

// A Step is one decoded step of a plan, ready to run any number of times.
type Step interface {
	// Run performs the step. The returned Result's Fields must be a value
	// (or pointer) of the type's Result() struct, or nil. An error fails the
	// step; Result may still carry what was learned (exit code, output).
	Run(ctx context.Context, sc *StepContext) (Result, error)
}

// Result is what a step returns.
type Result struct {
	// Output is `steps.<label>.output`: text, or a JSON value for llm json.
	Output any
	// Fields is the type's result struct (see Type.Result).
	Fields any
	// Goto, set by a branch, is the top-level label to go to next, or
	// "end" or "fail".
	Goto string
	// Write is a key-value write (or delete) the step makes. The engine
	// commits it together with the step's record, so a run killed and
	// resumed never makes it twice; a failed compare-and-set fails the step.
	Write *board.WriteOp
	// TimedOut is set by the engine when the step's timeout stopped it:
	// saved as the result's timed_out, read as steps.<label>.timed_out.
	TimedOut bool
	// Reruns, set by a driver, counts the times it ran this attempt again
	// because it lost it (a Temporal worker that died mid-step): the
	// step's record counts them in its attempts, so it says how many
	// times the step really ran. Not part of the saved result.
	Reruns int
	// Host, set by a driver whose steps run on many hosts, names the host
	// that ran the attempt: the step's record keeps it (its `host`).
	Host string

	inputs map[string]string // the templates the step rendered (StepContext.rendered)
}

// StepContext is what a running step may use. It is valid for one visit.
type StepContext struct {
	Label   string // the step's label
	Visit   int    // 1 for the first time the step runs, 2 when a loop comes back...
	Attempt int    // 1, or more when `retry` re-runs the step
	RunID   string
	Workdir string   // absolute path of the run's working directory
	Env     []string // os.Environ() plus the plan's env block
	Board   *board.Board
	Log     zerolog.Logger
	Plan    *plans.Plan

	eval   *evaluator
	runner *Runner
	clock  *visitClock
	node   *Node

	mu     sync.Mutex
	inputs map[string]string // rendered templates by field (see Template.field)
}

// Read reads key for author (the board's permissions apply; "" for the
// runner): what it finds is recorded when the step runs in a parallel
// group, where it races with the siblings' writes, so a replay finds the
// same. Its TTL check reads the visit's clock (see Now).
func (sc *StepContext) Read(author, key string) (KeyRead, error) {
	if sc.clock == nil {
		e, ok, err := sc.Board.ReadAs(author, key)
		return KeyRead{e, ok, sc.Board.Version(key)}, err
	}
	return sc.clock.read(author, key)
}

// Now is the time for a decision the step makes (a TTL's expiry): the
// clock, recorded so that a replay of the run reads the same time.
func (sc *StepContext) Now() time.Time {
	if sc.clock == nil {
		return time.Now().UTC()
	}
	return sc.clock.now()
}

// Output is where the step's process output (stream "stdout" or
// "stderr") is also written as it comes, or nil (Runner.Output).
func (sc *StepContext) Output(stream string) io.Writer {
	if sc.runner == nil || sc.runner.Output == nil {
		return nil
	}
	return sc.runner.Output(sc.Label, sc.Visit, stream)
}

// rendered keeps what a field rendered to, for the step's record.
func (sc *StepContext) rendered(t *Template, v any, err error) {
	if err != nil || t.field == "" {
		return
	}
	sc.mu.Lock()
	if sc.inputs == nil {
		sc.inputs = map[string]string{}
	}
	sc.inputs[t.field] = Text(v)
	sc.mu.Unlock()
}

// Agents is the run's agent set (Runner.Agents). A runner given none
// builds one from the plan with default options on first use, once per
// run, so every step of the run shares its token count and the script
// agents' place in their answers.
// AgentName is the run's name of the agent a step calls name: in a called
// plan, the caller's agent passed for it or the callee's own under
// CALL/NAME (see plans.Call.AgentName).
func (sc *StepContext) AgentName(name string) string {
	if sc.node == nil {
		return name
	}
	return sc.node.AgentName(name)
}

func (sc *StepContext) Agents() (*agents.Set, error) {
	return sc.runner.agentSet()
}

// Eval renders a template against the run's current state.
func (sc *StepContext) Eval(t *Template) (string, error) {
	if t == nil {
		return "", nil
	}
	out, err := sc.eval.render(t, sc.clock)
	sc.rendered(t, out, err)
	return out, err
}

// EvalShell prepares a script compiled with Decoder.ShellTemplate for
// `sh -c`: each ${{ }} value travels in an environment variable (add Env
// to the process's) that the script references, so model output is data
// in every shell context and never becomes syntax. Close the command when
// the process has ended.
func (sc *StepContext) EvalShell(t *Template) (*ShellCommand, error) {
	if t == nil {
		return &ShellCommand{}, nil
	}
	cmd, err := sc.eval.renderShell(t, sc.clock)
	if err == nil {
		// What the shell was given: the script and the values it reads.
		text := cmd.Script
		if len(cmd.Env) > 0 {
			text += "\n\n# with\n" + strings.Join(cmd.Env, "\n")
		}
		sc.rendered(t, text, nil)
	}
	return cmd, err
}

// EvalValue renders a template; a template that is exactly one ${{ }}
// keeps the expression's value (a number stays a number).
func (sc *StepContext) EvalValue(t *Template) (any, error) {
	if t == nil {
		return nil, nil
	}
	out, err := sc.eval.value(t, sc.clock)
	sc.rendered(t, out, err)
	return out, err
}

// EvalBool runs a boolean expression (such as a branch's `when`).
func (sc *StepContext) EvalBool(e *Expr) (bool, error) {
	return sc.eval.bool(e, nil, sc.clock)
}

// Brancher is implemented by steps that can jump (branch), so tools such
// as `runner graph` can draw their edges without knowing the type.
type Brancher interface {
	Branches() []Branch
}

// Branch is one way a step can jump: to To when When holds ("" for a
// default, taken when no case is).
type Branch struct {
	When string
	To   string
}

// Registry maps type names to Types.
type Registry struct {
	mu    sync.RWMutex
	types map[string]Type
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{types: map[string]Type{}} }

// Register adds t; registering a name twice panics, as it is a programming error.
func (r *Registry) Register(t Type) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.types[t.Name()]; dup {
		panic(fmt.Sprintf("engine: step type %q registered twice", t.Name()))
	}
	if rt := reflect.TypeOf(t.Result()); rt != nil && indirect(rt).Kind() != reflect.Struct {
		panic(fmt.Sprintf("engine: step type %q: Result() must be a struct", t.Name()))
	}
	r.types[t.Name()] = t
}

// Lookup returns the type registered under name.
func (r *Registry) Lookup(name string) (Type, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.types[name]
	return t, ok
}

// Caps are the Caps of the type registered under name: the zero ones
// (a type that declares nothing) for a name it does not know, such as a
// saved run's type that is no longer built in.
func (r *Registry) Caps(name string) Caps {
	if r == nil {
		return Caps{}
	}
	t, ok := r.Lookup(name)
	if !ok {
		return Caps{}
	}
	return CapsOf(t)
}

// Names lists the registered type names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.types))
	for n := range r.types {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func indirect(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// lookupType is the type named name, nil for none (a group's "").
func (r *Registry) lookupType(name string) Type {
	if name == "" {
		return nil
	}
	t, _ := r.Lookup(name)
	return t
}
