package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/memstore"
	"github.com/planrunner/runner/internal/patch"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/schemacheck"
	"gopkg.in/yaml.v3"
)

func init() { add(llmType{}) }

// maxToolRounds bounds the tool loop: a model that keeps calling tools is
// stopped, not paid for indefinitely.
const maxToolRounds = 8

// defaultMaxToolCalls bounds a step's tool calls when it sets no
// max_tool_calls.
const defaultMaxToolCalls = 32

// llmType asks an agent, optionally for JSON matching a schema or for a
// diff, and lets it use the board through tools.
type llmType struct{}

// LLMResult is what an llm step reports beside its output.
type LLMResult struct {
	Usage LLMUsage `json:"usage"`
	// Agent is the agent that gave the answer: the step's own, or a
	// fallback that took over.
	Agent        string `json:"agent"`
	Model        string `json:"model"`
	FinishReason string `json:"finish_reason"`
	Calls        int    `json:"calls"`   // model calls made (re-asks and tool rounds included)
	Retries      int    `json:"retries"` // HTTP retries across those calls
}

// LLMUsage is the tokens an llm step used, over all its calls. Input
// counts every input token; of them, those read from and written to the
// provider's prompt cache, each priced at its own rate. Output counts
// every output token; of them, the reasoning tokens (billed as output).
type LLMUsage struct {
	InputTokens      int     `json:"input_tokens"`
	OutputTokens     int     `json:"output_tokens"`
	CacheReadTokens  int     `json:"cache_read_input_tokens,omitempty"`
	CacheWriteTokens int     `json:"cache_creation_input_tokens,omitempty"`
	ReasoningTokens  int     `json:"reasoning_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd"` // at the model's price (0 when it is not known)
}

// usageOf is a session's usage as a step reports it.
func usageOf(st agents.Stats) LLMUsage {
	return LLMUsage{InputTokens: st.Usage.InputTokens, OutputTokens: st.Usage.OutputTokens,
		CacheReadTokens: st.Usage.CacheReadInputTokens, CacheWriteTokens: st.Usage.CacheCreationInputTokens,
		ReasoningTokens: st.Usage.ReasoningTokens, CostUSD: roundUSD(st.CostUSD)}
}

// Add sums two usages.
func (u LLMUsage) Add(v LLMUsage) LLMUsage {
	return LLMUsage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + v.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens: u.ReasoningTokens + v.ReasoningTokens, CostUSD: roundUSD(u.CostUSD + v.CostUSD)}
}

// roundUSD keeps costs to a millionth of a dollar, so sums of float
// prices print as the figures they are.
func roundUSD(x float64) float64 { return math.Round(x*1e6) / 1e6 }

type llmStep struct {
	agent      string
	prompt     *engine.Template
	system     *engine.Template
	output     string // text, json, diff or edits
	schema     *schemacheck.Schema
	schemaJSON json.RawMessage
	board      bool                // tools: [board]
	spawn      *agents.SpawnLimits // tools: [spawn] (nil: not offered)
	depth      int                 // a spawned agent's depth (0: the step's own agent)
	spawnConc  int                 // sub-agents of one turn running at once
	memTools   bool                // tools: [memory]
	memStore   string              // the memory store's name ("": the workdir's default)
	view       *agents.ViewLimits
	// maxToolCalls bounds the tool calls of a visit (0: the default);
	// set, it bounds the rounds too.
	maxToolCalls int
	mcpTools     []string // the agent's MCP tool patterns, for the dry run
	planTools    []string // the plan's tools the agent names, for the dry run
	memory       int      // the agent's memory bound in tokens (0: no memory), for the dry run
	// batch: a for_each's items send their first call as one provider
	// batch (llm_batch.go); batchFailed: retry or fail an item the batch
	// did not answer; batchPoll: the wait between polls.
	batch       bool
	batchFailed string
	batchPoll   time.Duration
}

func (llmType) Name() string           { return llmTypeName }
func (llmType) Result() any            { return LLMResult{} }
func (llmType) Spec() *engine.TypeSpec { return &llmSpec }

// Caps: a model call runs as an activity, and a replay runs the step
// again with the recorded answers.
func (llmType) Caps() engine.Caps {
	return engine.Caps{Replay: engine.ReplayRerun, Shows: engine.ShowsModel}
}

// viewSchema is the JSON Schema of a board view's limits.
const viewSchema = `{"type": "object", "additionalProperties": false, "properties": {
	"entries": {"type": "integer", "minimum": 1, "description": "Most board entries shown.", "examples": [20]},
	"keys": {"type": "integer", "minimum": 1, "description": "Most keys shown.", "examples": [50]},
	"max_bytes": {"type": "integer", "minimum": 1, "description": "Most bytes of board shown.", "examples": [8000]}}}`

var llmSpec = engine.TypeSpec{
	Doc: "Asks an agent (a model from the plan's agents) and takes its answer as the output: text, " +
		"JSON checked against a schema (one corrective re-ask), or a diff cut out of the answer. " +
		"The model may use the board through tools. Replays take the answer from the run's recordings.",
	Fields: []engine.Field{
		{Name: "agent", Kind: engine.KindString, Required: true,
			Doc: "The agent (from agents) to ask. An agent with memory: conversation is sent its earlier turns in the run first " +
				"(refused where steps run at the same time, unless max_concurrency: 1).", Examples: []any{"coder"}},
		{Name: "prompt", Kind: engine.KindTemplate, Required: true,
			Doc: "The user message; ${{ }} inserts values.", Examples: []any{"Task: ${{ vars.task }}"}},
		{Name: "system", Kind: engine.KindTemplate,
			Doc: "Overrides the agent's system prompt.", Examples: []any{"Answer with JSON only."}},
		{Name: "output", Kind: engine.KindEnum, Enum: []string{"text", "json", "diff", "edits"}, Default: "text",
			Doc: "text, json (parsed, checked against schema), diff (cut out of the answer) or edits (the answer, checked to hold " +
				"edits in any format apply_diff's format: auto reads: a unified diff, SEARCH/REPLACE blocks, an apply_patch envelope, whole files).",
			Examples: []any{"diff"}},
		{Name: "schema", Kind: engine.KindMapping,
			Doc:      "output: json: the JSON Schema the answer must match (one corrective re-ask).",
			Examples: []any{map[string]any{"type": "object", "required": []any{"title"}}}},
		{Name: "view", Kind: engine.KindOther,
			Schema:   `{"oneOf": [{"type": "boolean"}, ` + viewSchema + `]}`,
			Doc:      "Show the model a bounded view of the board: true, or limits on entries, keys and bytes.",
			Examples: []any{true, map[string]any{"entries": 20, "max_bytes": 8000}}},
		{Name: "tools", Kind: engine.KindList, Schema: `{"items": {"enum": ["board", "spawn", "memory"]}}`,
			Doc: "Tools the model may call: board (board_read, board_write, board_list, board_topic, and board_lock and board_unlock for leases). " +
				"spawn: spawn_agent, which starts one of the agents the step's agent spawns (its spawns list) on a task, " +
				"scoped to the board keys it is given, and answers with its final answer and the keys it wrote. " +
				"memory: memory_write, memory_read and memory_list over a store that outlives the run (memory_store). " +
				"The agent's MCP tools (its mcp servers and tools patterns) and the plan's tools it names are offered on every step of the agent.",
			Examples: []any{[]any{"board"}, []any{"board", "spawn"}}},
		{Name: "memory_store", Kind: engine.KindString,
			Doc:      "tools: [memory]: the store's name: .runner/memory/NAME.json in the workdir (default: default), shared by every run there.",
			Examples: []any{"research"}},
		{Name: "spawn", Kind: engine.KindMapping, Schema: spawnSchema,
			Doc: "tools: [spawn]: its limits: per_call (spawn_agent calls started per model turn, default 4), per_run (sub-agents in the whole run, default 16), " +
				"depth (1: only the step's agent spawns; default 2) and concurrency (sub-agents running at once, default 4).",
			Examples: []any{map[string]any{"per_call": 2, "per_run": 6, "depth": 1}}},
		{Name: "batch", Kind: engine.KindBool, Default: false,
			Doc: "With for_each: the items' first model calls go to the provider's batch API (OpenAI's Batch API, Anthropic's Message Batches) " +
				"as one batch, at the batch price (half the ordinary one), and the items wait for it; the rest of an item's calls (re-asks, tool rounds) " +
				"are ordinary. The batch is saved on the board, so `runner resume` takes it up after a kill; cancelling the run cancels it. " +
				"Without for_each, on a script agent or in a replay, the calls are ordinary ones. " +
				"Absent, a step with for_each takes its agent's batch (false unless the agent says batch: true).",
			Examples: []any{true}},
		{Name: "batch_failed", Kind: engine.KindEnum, Enum: []string{"retry", "fail"}, Default: "retry",
			Doc:      "batch: true: an item the batch reports failed, expired or cancelled is asked again as an ordinary call (retry) or fails (fail).",
			Examples: []any{"fail"}},
		{Name: "batch_poll", Kind: engine.KindDuration,
			Doc:      "batch: true: how often the batch's state is asked for (default 30s).",
			Examples: []any{"1m"}},
		{Name: "max_tool_calls", Kind: engine.KindInt,
			Doc: "Most tool calls (board, MCP and the plan's tools) the model may make in one visit; more fails the step. " +
				"Default 32 (and at most 8 rounds of calls unless this is set).",
			Examples: []any{10}},
	},
	Example: `- label: generate
  type: llm
  agent: coder
  prompt: |
    Write a haiku about the sea.
  output: json
  schema:
    type: object
    required: [haiku]`,
	Results: []engine.ResultField{
		{Name: "usage", Doc: "Tokens used over all the step's calls: input_tokens, output_tokens, cache_read_input_tokens and cache_creation_input_tokens (of the input), reasoning_tokens (of the output), cost_usd."},
		{Name: "agent", Doc: "The agent that answered: the step's own, or a fallback that took over."},
		{Name: "model", Doc: "The model that answered."},
		{Name: "finish_reason", Doc: "Why the model stopped (stop, length, ...)."},
		{Name: "calls", Doc: "Model calls made, re-asks and tool rounds included."},
		{Name: "retries", Doc: "HTTP retries across those calls."},
	},
}

func (llmType) Decode(d *engine.Decoder) engine.Step {
	s := &llmStep{}
	if d.Required("agent") {
		n := d.Node("agent")
		s.agent = d.String("agent")
		if s.agent != "" && d.Plan.Agent(s.agent) == nil {
			d.Errorf(n, "%s", plans.UnknownAgent(s.agent, d.Plan.AgentNames()))
		}
	}
	if d.Required("prompt") {
		s.prompt = d.Template("prompt")
	}
	s.system = d.Template("system")
	s.output = d.Enum("output", "text")
	if n := d.Node("schema"); n != nil {
		if s.output != "json" {
			d.Errorf(n, "schema is only for output: json")
		} else {
			s.schema, s.schemaJSON = compileSchema(d, n)
		}
	}
	if n := d.Node("view"); n != nil {
		if plans.Resolve(n).Kind == yaml.MappingNode {
			v := decodeView(d, n)
			s.view = &v
		} else if d.Bool("view", false) {
			s.view = &agents.ViewLimits{}
		}
	}
	if n := d.Node("tools"); n != nil {
		for _, t := range plans.StringList(d.Reporter(), n, "tools") {
			switch t {
			case "board":
				s.board = true
			case "spawn":
				lim := defaultSpawnLimits
				s.spawn = &lim
			case "memory":
				s.memTools = true
			default:
				d.Errorf(n, "tools: unknown tool set %q (available: board, spawn, memory)%s", t, plans.Suggest(t, []string{"board", "spawn", "memory"}))
			}
		}
	}
	decodeSpawn(d, s)
	if n := d.Node("memory_store"); n != nil {
		s.memStore = d.String("memory_store")
		if !s.memTools {
			d.Errorf(n, "memory_store is for tools: [memory]")
		} else if _, err := memstore.Path("", s.memStore); err != nil {
			d.Errorf(n, "%v", err)
		}
	}
	if n := d.Node("max_tool_calls"); n != nil {
		s.maxToolCalls = d.Int("max_tool_calls", 0)
		if s.maxToolCalls < 1 {
			d.Errorf(n, "max_tool_calls must be at least 1")
		}
	}
	decodeBatch(d, s)
	if a := d.Plan.Agent(s.agent); a != nil {
		s.mcpTools, s.planTools = describeTools(d.Plan, a)
		s.memory = memoryOf(d, a)
	}
	return s
}

// compileSchema turns the schema mapping into JSON and compiles it, so a
// bad schema is a load-time error at its line rather than a failed run.
func compileSchema(d *engine.Decoder, n *yaml.Node) (*schemacheck.Schema, json.RawMessage) {
	var v any
	if err := n.Decode(&v); err != nil {
		d.Errorf(n, "schema: %v", err)
		return nil, nil
	}
	if _, ok := v.(map[string]any); !ok {
		if b, isBool := v.(bool); !isBool {
			d.Errorf(n, "schema must be a JSON Schema mapping, got %s", plans.KindName(n))
			return nil, nil
		} else if !b {
			d.Errorf(n, "schema: false accepts no answer at all")
			return nil, nil
		}
	}
	raw, err := json.Marshal(schemacheck.JSONValue(v))
	if err != nil {
		d.Errorf(n, "schema: %v", err)
		return nil, nil
	}
	sch, err := schemacheck.Compile("schema.json", raw)
	if err != nil {
		at, msg := schemacheck.Problem(n, err)
		d.Errorf(at, "schema: %s", msg)
		return nil, nil
	}
	return sch, raw
}

func (s *llmStep) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	set, err := sc.Agents()
	if err != nil {
		return engine.Result{}, err
	}
	prompt, err := sc.Eval(s.prompt)
	if err != nil {
		return engine.Result{}, fmt.Errorf("prompt: %w", err)
	}
	agent := sc.AgentName(s.agent) // in a called plan, the run's name of its agent
	ss, err := set.Session(sc.Board, sc.Label, sc.Visit, agent)
	if err != nil {
		return engine.Result{}, err
	}
	ss.Now = sc.Now
	ss.Read = func(author, key string) (board.Entry, bool, error) {
		kr, err := sc.Read(author, key)
		return kr.Entry, kr.Found, err
	}
	ss.Log = sc.Log.With().Str("agent", agent).Int("visit", sc.Visit).Logger()
	if s.system != nil {
		if ss.System, err = sc.Eval(s.system); err != nil {
			return engine.Result{}, fmt.Errorf("system: %w", err)
		}
	}
	if s.board || s.spawn != nil {
		// A spawning agent reads what its sub-agents wrote with the board tools.
		ss.Tools = agents.BoardTools
	}
	if s.spawn != nil {
		ss.Tools = append(slices.Clone(ss.Tools), agents.SpawnTool)
	}
	// The agent's MCP servers: started (once a run, or for this visit)
	// or, in a replay, answered from the recording.
	ss.Dir = sc.Workdir
	defer ss.Close()
	// What an MCP server asks a person during a tool call waits as an
	// input does.
	ss.Elicit = (&elicitations{sc: sc, ss: ss}).ask
	set.RaiseTo(budgetRaise(sc.Board.Recordings()))
	if askedBefore(sc, IsApproval) || askedBefore(sc, IsElicitation) || budgetAsksOf(sc) {
		ss.Reenter() // it stopped to ask a person: it goes on from there
	}
	mcpTools, err := ss.MCPTools(ctx)
	if err != nil {
		return engine.Result{}, mcpFatal(sc.Label, err)
	}
	planTools, err := offerPlanTools(ctx, sc, ss)
	if err != nil {
		return engine.Result{}, err
	}
	memTools, err := s.offerMemoryTools(sc, ss, agent)
	if err != nil {
		return engine.Result{}, err
	}
	ss.Tools = append(append(append(append([]agents.Tool(nil), ss.Tools...), mcpTools...), planTools...), memTools...)
	ss.Schema = s.schemaJSON
	if s.view != nil {
		// The board as this agent sees it: its topics, its keys, its
		// private notes, bounded.
		prompt += "\n\nBlackboard state:\n" + set.View(sc.Board, agent, nil, *s.view)
	}
	if s.output == "json" && s.schema == nil {
		prompt += "\n\nAnswer with only a JSON value."
	}
	if err = ss.Remember(prompt); err != nil { // the agent's earlier turns, if it has memory
		return engine.Result{}, err
	}
	if g, index := sc.Gather(); s.batch && g != nil {
		defer g.Leave(index) // failed before its first call: the others do not wait for it
		s.joinBatch(sc, set, ss, g, index)
	}
	out, err := s.converse(ctx, sc, ss, prompt, &approvals{sc: sc, ss: ss})
	st := ss.Stats()
	res := engine.Result{Output: out, Fields: LLMResult{
		Usage: usageOf(st), Agent: st.Agent, Model: st.Model, FinishReason: st.FinishReason, Calls: st.Calls, Retries: st.Retries}}
	var budget *agents.BudgetError
	if errors.As(err, &budget) {
		if err = askBudget(sc, set, budget); !errors.Is(err, engine.ErrWaiting) {
			err = &engine.RunError{Status: engine.StatusFailed, Label: sc.Label, Fatal: true, Err: err}
		}
	}
	if err == nil {
		err = clearAsked(sc, IsApproval, IsBudgetQuestion, IsElicitation)
	}
	return res, mcpFatal(sc.Label, err)
}

// mcpFatal makes a replay that diverged end the run, even under
// continue_on_error.
func mcpFatal(label string, err error) error {
	var div *agents.Divergence
	var re *engine.RunError
	if errors.As(err, &div) && !errors.As(err, &re) {
		return &engine.RunError{Status: engine.StatusFailed, Label: label, Fatal: true, Err: err}
	}
	return err
}

// converse asks, runs tool calls until the model answers, and re-asks once
// when the answer does not fit the step's output.
func (s *llmStep) converse(ctx context.Context, sc *engine.StepContext, ss *agents.Session, prompt string, ap *approvals) (any, error) {
	msgs := []agents.Message{{Role: agents.RoleUser, Content: prompt}}
	rounds, calls, reasked := 0, 0, false
	maxRounds, maxCalls := maxToolRounds, defaultMaxToolCalls
	if s.maxToolCalls > 0 {
		maxRounds, maxCalls = s.maxToolCalls, s.maxToolCalls
	}
	for {
		resp, err := ss.Send(ctx, msgs...)
		if err != nil {
			return nil, err
		}
		if len(resp.ToolCalls) > 0 {
			rounds++
			if rounds > maxRounds {
				return nil, fmt.Errorf("agent %s still calls tools after %d rounds (the most a step allows)", ss.Agent().Name, maxRounds)
			}
			if calls+len(resp.ToolCalls) > maxCalls {
				return nil, fmt.Errorf("agent %s asks for %d more tool calls after %d: more than max_tool_calls (%d) allows", ss.Agent().Name, len(resp.ToolCalls), calls, maxCalls)
			}
			calls += len(resp.ToolCalls)
			msgs = msgs[:0]
			spawned := s.spawnAll(ctx, sc, ss, resp.ToolCalls)
			for i, tc := range resp.ToolCalls {
				if ap != nil && ss.NeedsApproval(tc.Name) {
					refused, err := ap.ask(tc)
					if err != nil {
						return nil, err
					}
					if refused != nil {
						msgs = append(msgs, *refused)
						continue
					}
				}
				switch {
				case spawned[i] != nil:
					msgs = append(msgs, *spawned[i])
				case ss.IsMCPTool(tc.Name):
					m, err := ss.RunMCPTool(ctx, tc)
					if err != nil {
						return nil, err
					}
					msgs = append(msgs, m)
				case ss.IsPlanTool(tc.Name):
					m, err := ss.RunPlanTool(ctx, tc)
					if err != nil {
						return nil, err
					}
					msgs = append(msgs, m)
				case s.board || s.spawn != nil:
					msgs = append(msgs, ss.RunTool(tc))
				case len(ss.Tools) == 0:
					msgs = append(msgs, agents.Message{Role: agents.RoleTool, ToolCallID: tc.ID, Name: tc.Name, IsError: true,
						Content: "error: this step offers no tools; answer without them"})
				default:
					names := make([]string, len(ss.Tools))
					for i, t := range ss.Tools {
						names[i] = t.Name
					}
					msgs = append(msgs, agents.Message{Role: agents.RoleTool, ToolCallID: tc.ID, Name: tc.Name, IsError: true,
						Content: fmt.Sprintf("error: unknown tool %q (available: %s)", tc.Name, strings.Join(names, ", "))})
				}
			}
			continue
		}
		// stop: the provider says the answer ended whole, not at its
		// token limit or a filter.
		out, perr := s.parse(resp.Text, resp.FinishReason == "stop")
		if perr == nil && (s.output == "diff" || s.output == "edits") && resp.FinishReason == "length" {
			// A diff cut at the token limit may end exactly where a
			// hunk's counts are met, or in the middle of a second
			// file: nothing in the text shows it, so the provider's word
			// is taken.
			if s.output == "edits" {
				out, perr = nil, errors.New("your answer was cut off at the token limit, so the edits may be incomplete; send shorter edits (only the lines that change, with a few lines around them)")
			} else {
				out, perr = nil, errors.New("your answer was cut off at the token limit, so the diff may be incomplete; send a shorter diff (only the hunks that change something)")
			}
		}
		if perr == nil {
			return out, nil
		}
		if reasked {
			return nil, fmt.Errorf("the answer is still not usable after a corrective re-ask: %v", perr)
		}
		reasked = true
		msgs = []agents.Message{{Role: agents.RoleUser, Content: s.reask(perr)}}
	}
}

// parse turns the final answer into the step's output; ended: the
// provider said it ended whole.
func (s *llmStep) parse(text string, ended bool) (any, error) {
	switch s.output {
	case "json":
		v, err := extractJSON(text)
		if err != nil {
			return nil, err
		}
		if s.schema != nil {
			if err := s.schema.Validate(v); err != nil {
				return nil, fmt.Errorf("the JSON does not match the schema: %s", schemacheck.Message(err))
			}
		}
		return v, nil
	case "diff":
		d, err := extractDiff(text)
		if err == nil && ended {
			d = sealed(d)
		}
		return d, err
	case "edits":
		return extractEdits(text, ended)
	}
	return strings.TrimSpace(text), nil
}

func (s *llmStep) reask(err error) string {
	what := "only a JSON value"
	switch {
	case s.output == "json" && s.schema != nil:
		what = "only a JSON value that matches the schema"
	case s.output == "diff":
		what = "one unified diff (--- a/FILE and +++ b/FILE headers, then @@ hunks)"
	case s.output == "edits":
		what = "your edits, complete, in the same format"
	}
	return fmt.Sprintf("Your answer could not be used: %v\n\nAnswer again with %s, and nothing else.", err, what)
}

var fenceRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)```[A-Za-z0-9_+-]*[ \t]*\r?\n(.*?)```") })

// extractJSON reads the JSON value of an answer, tolerating a ``` fence
// and prose around it.
func extractJSON(text string) (any, error) {
	candidates := []string{}
	for _, m := range fenceRE().FindAllStringSubmatch(text, -1) {
		candidates = append(candidates, m[1])
	}
	candidates = append(candidates, text)
	var firstErr error
	for _, c := range candidates {
		c = strings.TrimSpace(c)
		var v any
		err := json.Unmarshal([]byte(c), &v)
		if err == nil {
			return v, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		// Prose before or after: decode the first value that starts at an
		// opening bracket.
		for i := 0; i < len(c); i++ {
			if c[i] != '{' && c[i] != '[' {
				continue
			}
			dec := json.NewDecoder(strings.NewReader(c[i:]))
			if dec.Decode(&v) == nil {
				return v, nil
			}
		}
	}
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("the answer is empty, not JSON")
	}
	return nil, fmt.Errorf("the answer is not JSON: %v", firstErr)
}

// extractEdits checks that an answer holds edits apply_diff's format:
// auto can read, and hands on the answer as it is: which format each
// edit is in, and its line numbers in refusals, stay the model's. A
// problem is worded in the terms of the format the model used (see
// package patch), for the corrective re-ask.
//
// ended: the provider said the answer ended whole, so a last hunk is read
// by its body whatever its header counts (patch.Options.Ended); an answer
// that is one unified diff is then handed on sealed, so that apply_diff
// reads it so too.
func extractEdits(text string, ended bool) (string, error) {
	check := patch.Check
	if ended {
		check = patch.CheckEnded
	}
	found, err := check([]byte(text), patch.FormatAuto)
	if err != nil {
		return "", err
	}
	if ended && len(found) == 1 && found[0] == patch.FormatUnified {
		if _, err := patch.Check([]byte(text), patch.FormatAuto); err != nil {
			if d, err := extractDiff(text); err == nil {
				return sealed(d), nil
			}
		}
	}
	return strings.TrimSpace(text) + "\n", nil
}

// sealed is a diff whose writer ended it whole, as the provider said, in
// a form that says so itself. A last hunk whose header miscounts its
// body or gives no counts is refused by apply_diff and `runner apply` as
// possibly cut off, unless a closing fence follows it; so such a diff is
// handed on in a closed ``` block, and any other as it is.
func sealed(d string) string {
	_, err := patch.Check([]byte(d), patch.FormatUnified)
	var re *patch.RefusedError
	if err == nil || !errors.As(err, &re) || !re.Truncated {
		return d
	}
	if _, err := patch.CheckEnded([]byte(d), patch.FormatUnified); err != nil {
		return d
	}
	return "```diff\n" + d + "```\n"
}

// extractDiff finds the unified diff in an answer and checks that it has
// file headers and hunks. The diff is the content of the fenced blocks
// that hold one (a model may split a diff over several blocks), or else
// the answer with the prose before and after it dropped. It is liberal on
// purpose: apply_diff parses tolerantly and reports what does not fit,
// which beats cutting a hunk short here on a line that lost its leading
// space.
func extractDiff(text string) (string, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var parts []string
	var firstErr error
	for _, m := range fenceRE().FindAllStringSubmatch(text, -1) {
		d, err := diffIn(m[1])
		if err == nil {
			parts = append(parts, d)
		} else if firstErr == nil {
			firstErr = err
		}
	}
	if len(parts) > 0 {
		// A block opened after the last closed one and never closed is
		// the answer cut off there: taking only the closed blocks would
		// apply part of the change.
		locs := fenceRE().FindAllStringIndex(text, -1)
		rest := text[locs[len(locs)-1][1]:]
		if i := strings.Index(rest, "```"); i >= 0 {
			if _, err := diffIn(rest[i:]); err == nil || !strings.HasPrefix(err.Error(), "no unified diff") {
				return "", errors.New("a ``` block of the answer is never closed: your answer was cut off in it; send the whole diff again")
			}
		}
		return strings.Join(parts, ""), nil
	}
	d, err := diffIn(text)
	if err != nil && firstErr != nil && !strings.HasPrefix(firstErr.Error(), "no unified diff") {
		err = firstErr // the fenced block came closest
	}
	return d, err
}

// diffIn returns the diff in text: from its first file header to its last
// diff line.
func diffIn(text string) (string, error) {
	lines := strings.Split(text, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "diff --git ") || (strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ")) {
			start = i
			break
		}
	}
	if start < 0 {
		return "", errors.New("no unified diff found: it needs --- and +++ file header lines")
	}
	end, files, hunks, changes := start, 0, 0, 0
	for i := start; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "+++ "):
			files++
		case strings.HasPrefix(l, "--- "):
		case strings.HasPrefix(l, "@@"):
			hunks++
		case strings.HasPrefix(l, "+"), strings.HasPrefix(l, "-"):
			changes++
		case strings.HasPrefix(l, " "), strings.HasPrefix(l, `\`), strings.HasPrefix(l, "diff --git "):
		default:
			continue // prose, a blank line, or a context line that lost its space
		}
		end = i + 1
	}
	switch {
	case files == 0:
		return "", errors.New("the diff has no +++ file header")
	case hunks == 0:
		return "", errors.New("the diff has no @@ hunk header")
	case changes == 0:
		return "", errors.New("the diff changes nothing (no + or - lines)")
	}
	return strings.Join(lines[start:end], "\n") + "\n", nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// Describe is what a dry run shows: who is asked what.
func (s *llmStep) Describe() string {
	d := "ask " + s.agent
	if s.output != "text" {
		d += " for " + s.output
	}
	var tools []string
	if len(s.mcpTools) > 0 {
		tools = append(tools, "MCP tools "+strings.Join(s.mcpTools, ", "))
	}
	if len(s.planTools) > 0 {
		tools = append(tools, "tools "+strings.Join(s.planTools, ", "))
	}
	if len(tools) > 0 {
		d += " (" + strings.Join(tools, "; ") + ")"
	}
	if s.memory > 0 {
		d += fmt.Sprintf(" (with its conversation so far, up to %d tokens)", s.memory)
	}
	if s.prompt != nil {
		d += ": " + headLine(s.prompt.Src)
	}
	return d
}

// headLine is the first line of a text, marked when there is more.
func headLine(text string) string {
	text = strings.TrimSpace(text)
	line, rest, _ := strings.Cut(text, "\n")
	if rest != "" {
		line += " ..."
	}
	return line
}
