package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/codingagent"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/patch"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/sys/proc"
	"github.com/planrunner/runner/internal/sys/sandbox"
)

func init() { add(codingAgentType{}) }

// codingAgentType runs a coding-agent CLI (Claude Code, Codex) headless on
// a prompt in the workdir, through runner's model proxy.
type codingAgentType struct{}

// CodingAgentResult is what a coding_agent step reports beside its
// output (the agent's final text).
type CodingAgentResult struct {
	CLI   string `json:"cli"`
	Agent string `json:"agent"`
	Model string `json:"model"`
	// What the CLI's event stream said (codingagent.Session).
	SessionID       string                 `json:"session_id,omitempty"`
	Messages        []string               `json:"messages"`
	ToolCalls       []codingagent.ToolCall `json:"tool_calls"`
	FinalText       string                 `json:"final_text"`
	ExitReason      string                 `json:"exit_reason"`
	IsError         bool                   `json:"is_error,omitempty"`
	Turns           int                    `json:"turns,omitempty"`
	ReportedCostUSD float64                `json:"reported_cost_usd,omitempty"`
	Errors          []string               `json:"errors,omitempty"`
	// Usage is metered by the proxy from every answer: exact for both CLIs.
	Usage LLMUsage `json:"usage"`
	Calls int      `json:"calls"` // model requests the CLI made
	// Diff is the change the agent made to the workspace (git style, with
	// file modes); Files are the files it changed.
	Diff     string                   `json:"diff"`
	Files    []codingagent.FileChange `json:"files"`
	Skipped  []string                 `json:"skipped,omitempty"`
	ExitCode int                      `json:"exit_code"`
	Signal   string                   `json:"signal,omitempty"`
	// Stopped says why runner stopped the CLI (a limit), "" when it ended
	// by itself.
	Stopped string `json:"stopped,omitempty"`
	Stderr  string `json:"stderr,omitempty"`
	// Sandbox says how the CLI was confined (a step with sandbox:).
	Sandbox *sandbox.Report `json:"sandbox,omitempty"`
}

type codingAgentStep struct {
	cli       string
	agent     string
	prompt    *engine.Template
	model     string
	bin       *engine.Template
	dir       *engine.Template
	env       []engine.EnvTemplate
	args      []string
	maxCost   float64
	maxTokens int
	sandbox   *sandboxSpec
}

func (codingAgentType) Name() string           { return "coding_agent" }
func (codingAgentType) Result() any            { return CodingAgentResult{} }
func (codingAgentType) Spec() *engine.TypeSpec { return &codingAgentSpec }

// Caps: its result is a function of the model's answers, so a replay runs
// it again, offline too, and it then gives the recorded session and
// restores the recorded change without the CLI. It is one agent's answer
// and a change to files.
func (codingAgentType) Caps() engine.Caps {
	return engine.Caps{Replay: engine.ReplayRerun, Shows: engine.ShowsModel | engine.ShowsEdit}
}

var codingAgentSpec = engine.TypeSpec{
	Doc: "Runs a coding-agent CLI (Claude Code or Codex) headless on a prompt in the workdir. runner's model proxy " +
		"stands between the CLI and the agent's API: it meters every answer (usage, cost, limits) and records it. " +
		"The change the agent made to the files is the result's diff; a replay restores it without the CLI.",
	Fields: []engine.Field{
		{Name: "cli", Kind: engine.KindEnum, Enum: codingagent.CLIs, Required: true,
			Doc: "Which CLI: claude (an anthropic agent) or codex (an openai agent).", Examples: []any{"claude"}},
		{Name: "agent", Kind: engine.KindString, Required: true,
			Doc:      "The agent (from agents) whose API, key, model and price the CLI uses. Its key reaches only the proxy.",
			Examples: []any{"claude"}},
		{Name: "prompt", Kind: engine.KindTemplate, Required: true,
			Doc: "The task; ${{ }} inserts values.", Examples: []any{"Make the tests pass: ${{ steps.test.output }}"}},
		{Name: "model", Kind: engine.KindString,
			Doc: "Overrides the agent's model.", Examples: []any{"claude-sonnet-4-5"}},
		{Name: "bin", Kind: engine.KindTemplate,
			Doc: "The CLI's executable (default: claude or codex on PATH).", Examples: []any{"node_modules/.bin/claude"}},
		{Name: "dir", Kind: engine.KindTemplate,
			Doc: "Where it runs, relative to the workdir.", Examples: []any{"backend"}},
		{Name: "env", Kind: engine.KindEnv,
			Doc:      "Extra environment for the CLI (its API settings and HOME are the step's own).",
			Examples: []any{map[string]any{"GOFLAGS": "-mod=mod"}}},
		{Name: "args", Kind: engine.KindList, Schema: `{"items": {"type": "string"}}`,
			Doc: "Extra arguments for the CLI.", Examples: []any{[]any{"--allowedTools", "Bash(go test:*)"}}},
		{Name: "max_cost_usd", Kind: engine.KindOther, Schema: `{"type": "number", "exclusiveMinimum": 0}`,
			Doc:      "Stop the CLI (its process group) and fail the step once its model calls have cost more (the run's limits apply too).",
			Examples: []any{0.5}},
		{Name: "max_tokens", Kind: engine.KindInt, Schema: `{"minimum": 1}`,
			Doc: "Stop the CLI and fail the step once its model calls have used more tokens.", Examples: []any{200000}},
		codingSandboxField,
	},
	Example: `- label: fix
  type: coding_agent
  cli: claude
  agent: coder
  prompt: Make the failing test pass.
  max_cost_usd: 0.5`,
	Results: []engine.ResultField{
		{Name: "cli", Doc: "The CLI that ran."},
		{Name: "agent", Doc: "The agent it used."},
		{Name: "model", Doc: "The model that answered."},
		{Name: "session_id", Doc: "The CLI's session id."},
		{Name: "messages", Doc: "The agent's texts, in order."},
		{Name: "tool_calls", Doc: "The tools it used: name, input, result, is_error."},
		{Name: "final_text", Doc: "Its last text (also the step's output)."},
		{Name: "exit_reason", Doc: "How the CLI said the session ended (success, error_max_turns, failed...); empty when it was stopped."},
		{Name: "is_error", Doc: "The CLI reported the session failed."},
		{Name: "turns", Doc: "Turns the CLI counted."},
		{Name: "reported_cost_usd", Doc: "The CLI's own cost figure (Claude Code's total_cost_usd)."},
		{Name: "errors", Doc: "Errors the CLI reported."},
		{Name: "usage", Doc: "Tokens and cost metered by the proxy: input_tokens, output_tokens, cost_usd."},
		{Name: "calls", Doc: "Model requests the CLI made."},
		{Name: "diff", Doc: "The change it made to the workspace: a git-style diff with file modes."},
		{Name: "files", Doc: "The files it changed: path, op, added, removed, mode."},
		{Name: "skipped", Doc: "Changed files left out of the diff (binary or too large)."},
		{Name: "exit_code", Doc: "The CLI's exit status."},
		{Name: "signal", Doc: "The signal that ended it, if one did."},
		{Name: "stopped", Doc: "Why runner stopped it (a limit crossed), if it did."},
		{Name: "stderr", Doc: "Its standard error (head and tail)."},
		{Name: "sandbox", Doc: "How the CLI was confined: mode, active, landlock (ABI), network, write, read, missing."},
	},
}

// codingSandboxField is the sandbox field of command steps, for the CLI:
// without network, runner's model proxy is the one address it reaches.
var codingSandboxField = func() engine.Field {
	f := sandboxField
	f.Doc = "Run the CLI confined, as a command step's sandbox does (its private home is writable too); without " +
		"`network: true` the model proxy's loopback port is the one address it can reach."
	return f
}()

func (codingAgentType) Decode(d *engine.Decoder) engine.Step {
	s := &codingAgentStep{}
	if d.Required("cli") {
		s.cli = d.Enum("cli", "")
	}
	if d.Required("agent") {
		n := d.Node("agent")
		s.agent = d.String("agent")
		if a := d.Plan.Agent(s.agent); s.agent != "" && a == nil {
			d.Errorf(n, "%s", plans.UnknownAgent(s.agent, d.Plan.AgentNames()))
		} else if a != nil {
			want, other := "anthropic", "openai"
			if s.cli == "codex" {
				want, other = other, want
			}
			if a.Provider == other {
				d.Errorf(n, "cli: %s speaks the %s API: agent %s has provider %s", s.cli, want, s.agent, a.Provider)
			}
		}
	}
	if d.Required("prompt") {
		s.prompt = d.Template("prompt")
	}
	s.model = d.String("model")
	s.bin = d.Template("bin")
	s.dir = d.Template("dir")
	s.env = d.Env("env")
	if n := d.Node("args"); n != nil {
		var args []string
		if err := n.Decode(&args); err != nil {
			d.Errorf(n, "args: a list of strings")
		}
		s.args = args
	}
	if n := d.Node("max_cost_usd"); n != nil {
		if err := n.Decode(&s.maxCost); err != nil || s.maxCost <= 0 {
			d.Errorf(n, "max_cost_usd: a positive number of US dollars")
		}
	}
	s.maxTokens = d.Int("max_tokens", 0)
	s.sandbox = decodeSandbox(d)
	return s
}

// Describe is what a dry run shows.
func (s *codingAgentStep) Describe() string {
	if s.prompt == nil {
		return ""
	}
	return fmt.Sprintf("%s (agent %s): %s", s.cli, s.agent, strings.TrimSpace(s.prompt.Src)) + s.sandbox.describe()
}

// codingOutcome is the Call 0 recording of a visit: what a replay gives.
type codingOutcome struct {
	Output string            `json:"output"`
	Result CodingAgentResult `json:"result"`
	Error  string            `json:"error,omitempty"`
}

func (s *codingAgentStep) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	prompt, err := sc.Eval(s.prompt)
	if err != nil {
		return engine.Result{}, fmt.Errorf("prompt: %w", err)
	}
	dir, env, err := stepDirEnv(sc, s.dir, s.env)
	if err != nil {
		return engine.Result{}, err
	}
	set, err := sc.Agents()
	if err != nil {
		return engine.Result{}, err
	}
	name := sc.AgentName(s.agent)
	if rec, replaying, ok := set.Replayed(sc.Label, sc.Visit, 0); replaying {
		if !ok {
			return engine.Result{}, errors.New("replay: the recording has no coding_agent session for this step visit")
		}
		return s.replay(ctx, sc, set, dir, rec)
	}
	agent, ok := set.Agent(name)
	if !ok {
		return engine.Result{}, fmt.Errorf("unknown agent %q", name)
	}
	key, base := agent.APIKey()
	if base == "" {
		return engine.Result{}, fmt.Errorf("agent %s: provider %s: a coding agent needs an anthropic or openai agent", name, agent.Provider)
	}
	model := s.model
	if model == "" {
		model = agent.Model
	}
	// A run (a resumed one too) whose limits its earlier calls crossed
	// does not start the CLI.
	if err := set.Charge(sc.Board, agents.Usage{}, 0); err != nil {
		return engine.Result{}, err
	}
	bin, err := s.findBin(sc, env)
	if err != nil {
		return engine.Result{}, err
	}
	home, err := os.MkdirTemp("", "runner-coding-agent-")
	if err != nil {
		return engine.Result{}, err
	}
	defer os.RemoveAll(home)
	before, err := codingagent.Take(dir)
	if err != nil {
		return engine.Result{}, fmt.Errorf("reading the workspace: %w", err)
	}

	res := CodingAgentResult{CLI: s.cli, Agent: name, Model: model}
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var mu sync.Mutex
	var usage agents.Usage
	var cost float64
	px := &codingagent.Proxy{Upstream: base, Key: key, Auth: codingagent.AuthAPIKey}
	if s.cli == "codex" {
		px.Auth = codingagent.AuthBearer
	}
	px.Meter = func(ex codingagent.Exchange) error {
		m := ex.Model
		if m == "" {
			m = model
		}
		var c float64
		if p, ok := set.PriceOf(name, m); ok {
			c = p.Cost(ex.Usage)
			ex.CostUSD, ex.Priced = c, true
		}
		mu.Lock()
		usage = usage.Add(ex.Usage)
		cost += c
		res.Calls++
		if ex.Model != "" {
			res.Model = ex.Model
		}
		u, spent := usage, cost
		mu.Unlock()
		// Charged before it is recorded: a set that binds to the board
		// on this charge counts the board's recordings, this one not yet
		// among them.
		runLim := set.Charge(sc.Board, ex.Usage, c)
		req := ex.Request
		if req == nil {
			req = json.RawMessage("null")
		}
		ex.Request = nil
		resp, _ := json.Marshal(ex)
		if err := sc.Board.AddRecording(board.Recording{Label: sc.Label, Visit: sc.Visit, Kind: agents.KindCodingAgent,
			Call: ex.N, Agent: name, Request: req, Response: resp}); err != nil {
			sc.Log.Warn().Err(err).Msg("recording a coding agent's model exchange")
		}
		var lim error
		switch {
		case s.maxCost > 0 && spent > s.maxCost:
			lim = fmt.Errorf("max_cost_usd %s crossed: its model calls cost %s after %d calls", board.FormatUSD(s.maxCost), board.FormatUSD(roundUSD(spent)), ex.N)
		case s.maxTokens > 0 && u.Total() > s.maxTokens:
			lim = fmt.Errorf("max_tokens %d crossed: its model calls used %d tokens after %d calls", s.maxTokens, u.Total(), ex.N)
		default:
			lim = runLim
		}
		if lim != nil {
			stop(lim)
		}
		return lim
	}
	if err := px.Start(codingagent.NewToken()); err != nil {
		return engine.Result{}, err
	}
	launch := codingagent.Launch{CLI: s.cli, Bin: bin, Prompt: prompt, Home: home, ProxyURL: px.URL(), Token: px.Token(), Model: model, Args: s.args, Env: env}
	argv, cenv, err := launch.Command()
	if err == nil {
		err = launch.MakeHome()
	}
	if err != nil {
		px.Close()
		return engine.Result{}, err
	}
	policy, err := s.sandbox.policy(sc, dir, cenv)
	if err != nil {
		px.Close()
		return engine.Result{}, err
	}
	if policy != nil {
		policy.Write = append(policy.Write, home)
		policy.Endpoint = px.Addr()
	}
	reader := codingagent.NewReader(s.cli, sc.Output("stdout"))
	pr, err := proc.Run(runCtx, proc.Spec{Args: argv, Dir: dir, Env: cenv, Stdout: reader, Stderr: sc.Output("stderr"), Sandbox: policy, Log: &sc.Log})
	px.Close()
	if err != nil {
		return engine.Result{}, fmt.Errorf("starting %s: %w", bin, err)
	}
	warnUnconfined(sc, pr.Sandbox)
	res.Sandbox = s.sandbox.recorded(pr.Sandbox)
	after, err := codingagent.Take(dir)
	if err != nil {
		return engine.Result{}, fmt.Errorf("reading the workspace: %w", err)
	}
	change := codingagent.Diff(before, after)
	mu.Lock()
	ss := reader.Session()
	res.SessionID, res.Messages, res.ToolCalls, res.FinalText = ss.SessionID, ss.Messages, ss.ToolCalls, ss.FinalText
	res.ExitReason, res.IsError, res.Turns, res.ReportedCostUSD, res.Errors = ss.ExitReason, ss.IsError, ss.Turns, ss.ReportedCostUSD, ss.Errors
	if res.Model == "" {
		res.Model = ss.Model
	}
	res.Usage = LLMUsage{InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens, CostUSD: roundUSD(cost)}
	mu.Unlock()
	res.Diff, res.Files, res.Skipped = change.Diff, change.Files, change.Skipped
	res.ExitCode, res.Signal, res.Stderr = pr.ExitCode, pr.Signal, pr.Stderr.Text
	var runErr error
	switch cause := context.Cause(runCtx); {
	case px.Err() != nil:
		res.Stopped = px.Err().Error()
		runErr = fmt.Errorf("%s stopped: %w", s.cli, px.Err())
	case ctx.Err() != nil:
		runErr = context.Cause(ctx)
	case cause != nil && runCtx.Err() != nil:
		runErr = cause
	case pr.ExitCode != 0:
		runErr = fmt.Errorf("%s exited with status %d%s", s.cli, pr.ExitCode, tail("stderr", cmpStr(strings.Join(res.Errors, "\n"), pr.Stderr.Text)))
	case res.IsError:
		runErr = fmt.Errorf("%s: the session failed (%s): %s", s.cli, res.ExitReason, strings.Join(res.Errors, "; "))
	}
	text := strings.TrimSpace(res.FinalText)
	out := engine.Result{Output: text, Fields: res}
	oc := codingOutcome{Output: text, Result: res}
	if runErr != nil {
		oc.Error = runErr.Error()
	}
	if raw, err := json.Marshal(oc); err == nil {
		if err := sc.Board.AddRecording(board.Recording{Label: sc.Label, Visit: sc.Visit, Kind: agents.KindCodingAgent, Agent: name,
			Request: json.RawMessage("null"), Response: raw}); err != nil {
			return out, err
		}
	}
	return out, runErr
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// findBin is the CLI's executable: the bin field, or the CLI's name on
// the step's PATH.
func (s *codingAgentStep) findBin(sc *engine.StepContext, env []string) (string, error) {
	if s.bin != nil {
		b, err := sc.Eval(s.bin)
		if err != nil {
			return "", fmt.Errorf("bin: %w", err)
		}
		if !filepath.IsAbs(b) && strings.ContainsRune(b, '/') {
			b = filepath.Join(sc.Workdir, b)
		}
		return b, nil
	}
	path := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, s.cli)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(s.cli); err == nil && path == "" {
		return p, nil
	}
	return "", fmt.Errorf("%s is not on PATH: install it, or give the step's bin", s.cli)
}

// replay gives a recorded session again: the change is restored to the
// workdir (unless it is there already) and the recorded result returned,
// with neither the CLI nor the network.
func (s *codingAgentStep) replay(ctx context.Context, sc *engine.StepContext, set *agents.Set, dir string, rec board.Recording) (engine.Result, error) {
	var oc codingOutcome
	if err := json.Unmarshal(rec.Response, &oc); err != nil {
		return engine.Result{}, fmt.Errorf("replay: the recorded session: %w", err)
	}
	if oc.Result.Diff != "" {
		pr, err := patch.Apply(ctx, dir, []byte(oc.Result.Diff), patch.Options{Strip: patch.DetectStrip, NoBackup: true})
		switch {
		case err != nil:
			sc.Log.Warn().Err(err).Str("dir", dir).Msg("the recorded change of the coding agent does not apply to the workdir; the recorded result stands")
		case pr.AlreadyApplied:
			sc.Log.Info().Str("dir", dir).Msg("the recorded change of the coding agent is in the workdir already")
		default:
			sc.Log.Info().Str("dir", dir).Int("files", len(pr.Files)).Msg("restored the coding agent's recorded change")
		}
	}
	// The model exchanges are the replayed board's too: its cost and its
	// report count them, and a resume of it re-counts them.
	for n := 1; ; n++ {
		ex, _, ok := set.Replayed(sc.Label, sc.Visit, n)
		if !ok {
			break
		}
		if err := sc.Board.AddRecording(ex); err != nil {
			return engine.Result{}, err
		}
	}
	rec.Call = 0
	if err := sc.Board.AddRecording(rec); err != nil {
		return engine.Result{}, err
	}
	out := engine.Result{Output: oc.Output, Fields: oc.Result}
	if oc.Error != "" {
		return out, errors.New(oc.Error)
	}
	return out, nil
}
