package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/rs/zerolog"
)

// planToolsPlan is a plan whose agent may call three tools the plan
// defines: echo (prints its argument), read_note (prints a file of the
// workdir, and the secret its env carries) and fail (exits 3).
func planToolsPlan(provider, base, tools string) string {
	if provider == "openai" {
		base += "/v1"
	}
	return `
version: 1
secrets: [NOTE_TOKEN]
tools:
  echo:
    description: Prints its text.
    parameters:
      type: object
      properties:
        text: {type: string, description: what to print}
      required: [text]
      additionalProperties: false
    run: printf 'got:%s' ${{ args.text }}
  read_note:
    description: Prints the note.
    env: {TOKEN: "${{ secrets.NOTE_TOKEN }}"}
    run: |
      cat note.txt
      echo "token=$TOKEN"
  fail:
    description: Always fails.
    run: echo half; echo broken >&2; exit 3
agents:
  coder:
    provider: ` + provider + `
    model: test-model
    base_url: "` + base + `"
    tools: [` + tools + `]
steps:
  - {label: ask, type: llm, agent: coder, prompt: "Use the tools."}
`
}

const noteToken = "note-secret-0123456789"

// hostile is an argument that would run a command, break out of quotes
// or start a new command line if it were spliced into the script.
const hostile = "$(touch pwned) `touch pwned2` ' \" ; touch pwned3\nx"

// runPlanToolsPlan runs src in workdir with the model API keys and the
// plan's secret set, masking it as the CLI does.
func runPlanToolsPlan(t *testing.T, workdir, src string, opt agents.Options) (*board.Board, error) {
	t.Helper()
	opt.Mask = mask.New(noteToken)
	if opt.Getenv == nil {
		opt.Getenv = func(k string) string {
			return map[string]string{"OPENAI_API_KEY": "sk-step-test", "ANTHROPIC_API_KEY": "sk-ant-test"}[k]
		}
	}
	set := llmAgents(t, src, opt)
	defer set.Close()
	prog, err := engine.Compile("plan.yaml", []byte(src), Registry())
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	b := board.New(board.Run{ID: "run1"})
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: workdir, Agents: set,
		Secrets: map[string]string{"NOTE_TOKEN": noteToken},
		Sleep:   func(context.Context, time.Duration) error { return nil }}
	return b, r.Run(context.Background())
}

// TestPlanToolsThroughBothProviders runs an llm step whose agent calls
// tools the plan defines, through each provider's real tool-calling wire
// format: the model is offered exactly the tools the agent names, with
// their parameters; a hostile argument reaches the script as data (no
// command in it runs); a non-zero exit is a failure the model sees and
// the step goes on; arguments that do not match the schema run nothing;
// the secret a tool prints is masked for the model and on the board. The
// run then replays offline with the note deleted and the model gone, and
// a changed recorded result diverges with both requests to compare.
func TestPlanToolsThroughBothProviders(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			hostileJSON, _ := json.Marshal(map[string]string{"text": hostile})
			f := newWireFake(t, provider,
				toolTurn{calls: [][2]string{{"echo", string(hostileJSON)}, {"echo", `{"txt":"no"}`}, {"fail", `{}`}}},
				toolTurn{calls: [][2]string{{"read_note", `{}`}}},
				toolTurn{text: "done"})
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("the note says 42\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			src := planToolsPlan(provider, f.srv.URL, "echo, fail, read_*")
			b, err := runPlanToolsPlan(t, dir, src, agents.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if out := llmSaved(t, b, "ask")["output"]; out != "done" {
				t.Fatalf("output = %v", out)
			}
			for _, p := range []string{"pwned", "pwned2", "pwned3"} {
				if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
					t.Errorf("the hostile argument ran a command: %s exists", p)
				}
			}
			first := f.requestText(0)
			for _, want := range []string{`"echo"`, `"read_note"`, `"fail"`, "Prints its text.", "what to print"} {
				if !strings.Contains(first, want) {
					t.Errorf("the model was not offered %s: %s", want, first)
				}
			}
			second := f.requestText(1)
			wantEcho, _ := json.Marshal("got:" + hostile)
			for _, want := range []string{strings.Trim(string(wantEcho), `"`), "the arguments do not match the input schema of echo", "nothing was run",
				"exit status 3", "half", "broken"} {
				if !strings.Contains(second, want) {
					t.Errorf("the second request lacks %q: %s", want, second)
				}
			}
			third := f.requestText(2)
			if !strings.Contains(third, "the note says 42") || !strings.Contains(third, "token=***") || strings.Contains(third, noteToken) {
				t.Errorf("the tool's result (secret masked) did not reach the model: %s", third)
			}
			if strings.Contains(llmBoardString(t, b), noteToken) {
				t.Error("the secret reached the board")
			}
			kinds := map[string]int{}
			for _, r := range b.Recordings() {
				kinds[r.Kind]++
			}
			if kinds[agents.KindTool] != 3 || kinds[agents.KindLLM] != 3 { // echo, fail, read_note: the bad echo ran nothing
				t.Errorf("recordings by kind = %v", kinds)
			}

			// Offline replay: the model is gone and so is the note the
			// tool read; no command runs, so none is missed.
			f.srv.Close()
			if err := os.Remove(filepath.Join(dir, "note.txt")); err != nil {
				t.Fatal(err)
			}
			noNet := &http.Client{Transport: llmNoNetwork{t}}
			replay := func(src string, recs []board.Recording) (*board.Board, error) {
				return runPlanToolsPlan(t, dir, src, agents.Options{Replay: agents.FromRecordings(recs),
					Getenv: func(string) string { return "" }, HTTPClient: noNet})
			}
			rb, err := replay(src, b.Recordings())
			if err != nil {
				t.Fatal(err)
			}
			if out := llmSaved(t, rb, "ask")["output"]; out != "done" {
				t.Errorf("replayed output = %v", out)
			}
			if _, err := os.Stat(filepath.Join(dir, "note.txt")); err == nil {
				t.Error("the note came back")
			}
			// A changed tool result diverges: the model request that
			// carries it differs from the recorded one.
			changed := append([]board.Recording(nil), b.Recordings()...)
			for i, r := range changed {
				if r.Kind == agents.KindTool && strings.Contains(string(r.Response), "half") {
					changed[i].Response = json.RawMessage(strings.Replace(string(r.Response), "half", "HALF", 1))
				}
			}
			_, err = replay(src, changed)
			var d *agents.Divergence
			if !errors.As(err, &d) || d.Call != 2 || !strings.Contains(string(d.Recorded), "half") || !strings.Contains(string(d.Now), "HALF") {
				t.Errorf("changed result: err = %v", err)
			}
			// A recording without the tool calls diverges at the first,
			// saying which.
			var llmOnly []board.Recording
			for _, r := range b.Recordings() {
				if r.Kind == agents.KindLLM {
					llmOnly = append(llmOnly, r)
				}
			}
			_, err = replay(src, llmOnly)
			if !errors.As(err, &d) || !strings.Contains(err.Error(), "makes a call of tool echo the plan defines (tool exchange 1), which the recording does not have") {
				t.Errorf("no tool recordings: err = %v", err)
			}

			// --reuse --offline: model answers and tool results come from
			// the recording; nothing runs, the note is still gone.
			u := agents.NewReuse(b)
			u.ReuseTools()
			ub, err := runPlanToolsPlan(t, dir, src, agents.Options{Reuse: u, HTTPClient: noNet})
			if err != nil {
				t.Fatal(err)
			}
			if out := llmSaved(t, ub, "ask")["output"]; out != "done" {
				t.Errorf("reused output = %v", out)
			}
		})
	}
}

// TestPlanToolLimitsAndTimeout: max_tool_calls bounds the plan's tools as
// it does MCP tools, and a tool's timeout, or a signal that kills its
// script, is an answer the model sees, not a failed step.
func TestPlanToolLimitsAndTimeout(t *testing.T) {
	src := func(base, extra string) string {
		return `
version: 1
tools:
  slow: {description: Sleeps., run: sleep 30, timeout: 50ms}
  echo: {description: Echoes., run: echo hi}
  die: {description: Dies., run: "echo bye; kill -KILL $$"}
agents:
  coder: {provider: openai, model: m, base_url: "` + base + `/v1", tools: ["*"]}
steps:
  - {label: ask, type: llm, agent: coder, prompt: go` + extra + `}
`
	}
	f := newWireFake(t, "openai", toolTurn{calls: [][2]string{{"slow", `{}`}, {"die", `{}`}}}, toolTurn{text: "done"})
	b, err := runPlanToolsPlan(t, t.TempDir(), src(f.srv.URL, ""), agents.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if second := f.requestText(1); !strings.Contains(second, "slow timed out after 50ms and was stopped") {
		t.Errorf("the model was not told of the timeout: %s", second)
	}
	if second := f.requestText(1); !strings.Contains(second, `killed by signal SIGKILL\nstdout:\nbye`) {
		t.Errorf("the model was not told of the signal: %s", second)
	}
	if out := llmSaved(t, b, "ask")["output"]; out != "done" {
		t.Errorf("output = %v", out)
	}

	f = newWireFake(t, "openai",
		toolTurn{calls: [][2]string{{"echo", `{}`}, {"echo", `{}`}}},
		toolTurn{calls: [][2]string{{"echo", `{}`}, {"echo", `{}`}}},
		toolTurn{text: "done"})
	_, err = runPlanToolsPlan(t, t.TempDir(), src(f.srv.URL, ", max_tool_calls: 3"), agents.Options{})
	if err == nil || !strings.Contains(err.Error(), "agent coder asks for 2 more tool calls after 2: more than max_tool_calls (3) allows") {
		t.Fatalf("err = %v", err)
	}
}

// TestPlanToolErrors: what a plan's tools and an agent's tools patterns
// may not say, each with a clear error at its line and column.
func TestPlanToolErrors(t *testing.T) {
	base := `
version: 1
tools:
%s
agents:
  coder:
    provider: script
    responses: [ok]
    tools: [%s]
steps:
  - {label: ask, type: llm, agent: coder, prompt: hi}
`
	ok := `  grep: {description: Searches., run: "grep -rn -- ${{ args.pattern }} .", parameters: {properties: {pattern: {type: string}}}}`
	for _, tt := range []struct{ name, tools, allow, want string }{
		{"unknown tool", ok, "grpe", `plan.yaml:9:13: agent coder: tools: "grpe" names none of the plan's tools (grep) (did you mean "grep"?)`},
		{"pattern matches none", ok, "find_*", `tools: "find_*" names none of the plan's tools (grep)`},
		{"no tools defined", "  {}", "grep", `tools: "grep" names no tool: the plan defines no tools`},
		{"bad schema", `  grep: {description: d, run: "echo", parameters: {properties: {n: {type: strin}}}}`, "grep",
			`plan.yaml:4:75: tools.grep.parameters: at '/properties/n/type'`},
		{"not an object", `  grep: {description: d, run: "echo", parameters: {type: array}}`, "grep",
			`plan.yaml:4:58: tools.grep.parameters: type must be object`},
		{"misspelt argument", `  grep: {description: d, run: "grep -- ${{ args.patern }} .", parameters: {properties: {pattern: {type: string}}}}`, "grep",
			`plan.yaml:4:49: in ${{ }}: unknown field patern (did you mean "pattern"?)`},
		{"unsafe place", `  grep: {description: d, run: "sh -c ${{ args.pattern }}", parameters: {properties: {pattern: {type: string}}}}`, "grep",
			`plan.yaml:4:38: run: sh -c runs its first argument as shell code`},
		{"no run", `  grep: {description: d}`, "grep", `plan.yaml:4:9: tools.grep is missing required field "run"`},
		{"no description", `  grep: {run: echo}`, "grep", `tools.grep is missing required field "description"`},
		{"unknown field", `  grep: {description: d, run: echo, max_outptu: 3}`, "grep", `plan.yaml:4:37: unknown field "max_outptu" in tools.grep (did you mean "max_output"?)`},
		{"bad name", `  my-tool: {description: d, run: echo}`, "grep", `tool name "my-tool" must be letters, digits and _`},
		{"board name", `  board_read: {description: d, run: echo}`, "board_read", `tool name "board_read" is a board tool's`},
		{"sub-plan cycle", `  rev: {description: d, plan: plan.yaml}`, "rev", `plan.yaml:4:31: plan plan.yaml: calls form a cycle: plan.yaml → plan.yaml`},
		{"sub-plan missing", `  rev: {description: d, plan: nowhere.yaml}`, "rev", `plan.yaml:4:31: plan nowhere.yaml: `},
		{"sub-plan empty", `  rev: {description: d, plan: ""}`, "rev", `plan.yaml:4:31: tools.rev.plan is empty`},
		{"plan and run", `  rev: {description: d, plan: x.yaml, run: echo}`, "rev", `plan.yaml:4:39: tools.rev: run: a tool runs either a plan: or a run: command, not both`},
		{"plan and parameters", `  rev: {description: d, plan: x.yaml, parameters: {}}`, "rev", `plan.yaml:4:39: tools.rev: a plan tool's parameters are the called plan's vars`},
		{"plan without description", `  rev: {plan: x.yaml}`, "rev", `tools.rev is missing required field "description"`},
		{"bad timeout", `  grep: {description: d, run: echo, timeout: 5}`, "grep", `tools.grep.timeout: "5" is not a duration`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := llmCompileErr(t, fmt.Sprintf(base, tt.tools, tt.allow))
			if !strings.Contains(got, tt.want) || !strings.Contains(got, "plan.yaml:") {
				t.Errorf("error = %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestPlanToolsDryRun: the dry run says which of the plan's tools a
// step's agent may call, beside its MCP tools.
func TestPlanToolsDryRun(t *testing.T) {
	prog, err := engine.Compile("plan.yaml", []byte(planToolsPlan("openai", "http://model", "echo, read_*")), Registry())
	if err != nil {
		t.Fatal(err)
	}
	if d := prog.Node("ask").Impl.(engine.Describer).Describe(); d != "ask coder (tools echo, read_note): Use the tools." {
		t.Errorf("describe = %q", d)
	}
}

// TestPlanToolSandboxed: a tool's sandbox: confines its script as it
// does a command step's: the workdir takes writes, a path outside does
// not, and the model is told what the script printed.
func TestPlanToolSandboxed(t *testing.T) {
	outside, work := t.TempDir(), t.TempDir()
	f := newWireFake(t, "anthropic", toolTurn{calls: [][2]string{{"write", `{"name":"f"}`}}}, toolTurn{text: "done"})
	src := `
version: 1
tools:
  write:
    description: Writes a file.
    parameters: {properties: {name: {type: string}}, required: [name]}
    sandbox: strict
    run: |
      echo in > inside.txt
      echo out > ` + outside + `/${{ args.name }} 2>/dev/null || echo refused
agents:
  coder: {provider: anthropic, model: m, base_url: "` + f.srv.URL + `", tools: [write]}
steps:
  - {label: ask, type: llm, agent: coder, prompt: go}
`
	if _, err := runPlanToolsPlan(t, work, src, agents.Options{}); err != nil {
		t.Fatal(err)
	}
	if second := f.requestText(1); !strings.Contains(second, "refused") {
		t.Errorf("the model was not told the write was refused: %s", second)
	}
	if _, err := os.Stat(filepath.Join(work, "inside.txt")); err != nil {
		t.Errorf("the workdir took no write: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("a sandboxed tool wrote outside: %v", ents)
	}
}

// TestPlanToolResumedVisitNumbersOn: a visit run again after a kill
// numbers its tool exchanges after the calls of the plan's tools the
// killed run recorded too (MCP exchanges and plan tool calls share one
// numbering), so a replay never takes a killed run's call for a new one.
func TestPlanToolResumedVisitNumbersOn(t *testing.T) {
	ts := newToolServer(t)
	src := mcpPlan("openai", "http://model.invalid", ts.url, "edge.echo")
	set := mcpAgents(t, src, agents.Options{})
	b := board.New(board.Run{ID: "r1"})
	if err := b.AddRecording(board.Recording{Label: "ask", Visit: 1, Kind: agents.KindTool, Call: 2, Response: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	ss, err := set.Session(b, "ask", 1, "coder")
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	if _, err := ss.MCPTools(context.Background()); err != nil {
		t.Fatal(err)
	}
	var calls []int
	for _, r := range b.Recordings() {
		calls = append(calls, r.Call)
	}
	if fmt.Sprint(calls) != "[2 3]" {
		t.Errorf("tool exchange numbers = %v, want [2 3]", calls)
	}
}

// TestPlanToolArgumentsAreData: whatever the model sends, an argument is
// text the script prints, never code it runs: command substitutions,
// quotes that would close the script's, newlines, option-like words,
// variables, a value too large for the environment, and a non-string
// value (given as JSON).
func TestPlanToolArgumentsAreData(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	for _, tt := range []struct {
		name string
		arg  any
		want string // the start of what the tool printed
	}{
		{"command substitution", "$(touch pwned)", "[$(touch pwned)]"},
		{"backquotes", "`touch pwned`", "[`touch pwned`]"},
		{"closing quotes", `'; touch pwned; echo '`, `['; touch pwned; echo ']`},
		{"newline", "a\ntouch pwned", "[a\ntouch pwned]"},
		{"option-like", "-n", "[-n]"},
		{"variable", "${HOME}$PATH", "[${HOME}$PATH]"},
		{"larger than the environment takes", big, "[" + big[:100]},
		{"object", map[string]any{"k": "$(touch pwned)"}, `[{"k":"$(touch pwned)"}]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]any{"v": tt.arg})
			f := newWireFake(t, "openai", toolTurn{calls: [][2]string{{"show", string(args)}}}, toolTurn{text: "done"})
			dir := t.TempDir()
			src := `
version: 1
tools:
  show:
    description: Shows v.
    parameters: {properties: {v: {}}, required: [v]}
    run: printf '[%s]' ${{ args.v }}
agents:
  coder: {provider: openai, model: m, base_url: "` + f.srv.URL + `/v1", tools: [show]}
steps:
  - {label: ask, type: llm, agent: coder, prompt: go}
`
			b, err := runPlanToolsPlan(t, dir, src, agents.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, r := range b.Recordings() {
				if r.Kind == agents.KindTool {
					var resp struct{ Result struct{ Text string } }
					json.Unmarshal(r.Response, &resp)
					got = resp.Result.Text
				}
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("the tool printed %.200q, want %.200q…", got, tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
				t.Error("an argument ran a command")
			}
		})
	}
}

// subPlanToolFiles writes a plan whose agent may call two sub-plan
// tools: greet runs greet.yaml (a command step writes made.txt; its
// outputs echo its vars) and broken runs broken.yaml (its step exits 4).
func subPlanToolFiles(t *testing.T, dir, provider, base string) string {
	t.Helper()
	if provider == "openai" {
		base += "/v1"
	}
	files := map[string]string{
		"greet.yaml": `
version: 1
vars:
  name:
  count: 2
steps:
  - label: write
    type: command
    run: echo "hello ${{ vars.name }} x${{ vars.count }}" >> made.txt; echo wrote
outputs:
  greeting: '"hello " + vars.name'
  count: vars.count
  said: steps.write.output
`,
		"think.yaml": `
version: 1
agents:
  helper: {provider: script, responses: ["the callee's own agent answered"]}
steps:
  - {label: think, type: llm, agent: helper, prompt: think}
outputs:
  thought: steps.think.output
`,
		"broken.yaml": `
version: 1
steps:
  - {label: boom, type: command, run: echo no >&2; exit 4}
`,
		"plan.yaml": `
version: 1
tools:
  greet:
    description: Greets someone, in made.txt.
    plan: greet.yaml
  broken: {description: Always fails., plan: broken.yaml}
  think: {description: Asks the callee's agent., plan: think.yaml}
agents:
  coder:
    provider: ` + provider + `
    model: test-model
    base_url: "` + base + `"
    tools: [greet, broken, think]
steps:
  - {label: ask, type: llm, agent: coder, prompt: "Use the tools."}
`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "plan.yaml")
}

// runPlanFile runs the plan file path in workdir with the model API keys.
func runPlanFile(t *testing.T, path, workdir string, opt agents.Options) (*board.Board, error) {
	t.Helper()
	if opt.Getenv == nil {
		opt.Getenv = func(k string) string {
			return map[string]string{"OPENAI_API_KEY": "sk-step-test", "ANTHROPIC_API_KEY": "sk-ant-test"}[k]
		}
	}
	opt.Sleep = func(context.Context, time.Duration) error { return nil }
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := engine.Compile(path, src, Registry())
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	set, err := agents.New(prog.Plan, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	b := board.New(board.Run{ID: "run1"})
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: workdir, Agents: set,
		Sleep: func(context.Context, time.Duration) error { return nil }}
	return b, r.Run(context.Background())
}

// TestPlanToolSubPlan: a tool that runs a sub-plan, through each
// provider's wire format. The model is offered the callee's vars as the
// tool's parameters (a var without a default required, each typed by
// its default); a call runs the callee in the step's workdir (its
// command writes made.txt) and the model gets its declared outputs as
// {"status","outputs"}; arguments that do not match run nothing; a
// failed callee is a failure the model sees, and the step goes on. An
// offline replay and a --reuse --offline run give the same answer
// without running the callee (made.txt is not written again).
func TestPlanToolSubPlan(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			f := newWireFake(t, provider,
				toolTurn{calls: [][2]string{{"greet", `{"name":"ada","count":3}`}, {"greet", `{"count":"three"}`}, {"broken", `{}`}, {"think", `{}`}}},
				toolTurn{text: "done"})
			dir := t.TempDir()
			path := subPlanToolFiles(t, dir, provider, f.srv.URL)
			b, err := runPlanFile(t, path, dir, agents.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if out := llmSaved(t, b, "ask")["output"]; out != "done" {
				t.Fatalf("output = %v", out)
			}
			src, _ := os.ReadFile(path)
			prog, err := engine.Compile(path, src, Registry())
			if err != nil {
				t.Fatal(err)
			}
			if d := prog.Node("ask").Impl.(engine.Describer).Describe(); !strings.Contains(d, "tools broken (plan broken.yaml), greet (plan greet.yaml), think (plan think.yaml)") {
				t.Errorf("the dry run does not say what the tools run: %q", d)
			}
			made, err := os.ReadFile(filepath.Join(dir, "made.txt"))
			if err != nil || string(made) != "hello ada x3\n" {
				t.Fatalf("the callee did not run once with the arguments: made.txt = %q, %v", made, err)
			}
			first := f.requestText(0)
			for _, want := range []string{`"greet"`, "Greets someone, in made.txt.", `\"name\"`, `\"count\"`, `\"integer\"`, `\"required\":[\"name\"]`} {
				want = strings.ReplaceAll(want, `\"`, `"`)
				if !strings.Contains(first, want) {
					t.Errorf("the model was not offered %s: %s", want, first)
				}
			}
			second := f.requestText(1)
			okAnswer, _ := json.Marshal(`{"outputs":{"count":3,"greeting":"hello ada","said":"wrote"},"status":"succeeded"}`)
			for _, want := range []string{strings.Trim(string(okAnswer), `"`),
				"the arguments do not match the input schema of greet", "nothing was run",
				`{\"error\":`, "exit status 4", `\"status\":\"failed\"`, `the callee's own agent answered`} {
				if !strings.Contains(second, want) {
					t.Errorf("the second request lacks %s: %s", want, second)
				}
			}
			kinds := map[string]int{}
			for _, r := range b.Recordings() {
				kinds[r.Kind]++
			}
			if kinds[agents.KindTool] != 3 || kinds[agents.KindLLM] != 2 { // greet, broken and think; the bad greet ran nothing
				t.Errorf("recordings by kind = %v", kinds)
			}

			// Offline replay and --reuse --offline: the model is gone and
			// the callee does not run (made.txt stays as it is).
			f.srv.Close()
			noNet := &http.Client{Transport: llmNoNetwork{t}}
			rb, err := runPlanFile(t, path, dir, agents.Options{Replay: agents.FromRecordings(b.Recordings()),
				Getenv: func(string) string { return "" }, HTTPClient: noNet})
			if err != nil {
				t.Fatal(err)
			}
			if out := llmSaved(t, rb, "ask")["output"]; out != "done" {
				t.Errorf("replayed output = %v", out)
			}
			u := agents.NewReuse(b)
			u.ReuseTools()
			ub, err := runPlanFile(t, path, dir, agents.Options{Reuse: u, HTTPClient: noNet})
			if err != nil {
				t.Fatal(err)
			}
			if out := llmSaved(t, ub, "ask")["output"]; out != "done" {
				t.Errorf("reused output = %v", out)
			}
			if again, _ := os.ReadFile(filepath.Join(dir, "made.txt")); string(again) != string(made) {
				t.Errorf("the replay ran the callee: made.txt = %q", again)
			}
		})
	}
}

// TestPlanToolSubPlanCycle: a sub-plan tool whose callee comes back to a
// file it left, through another tool or a type: plan step, is refused
// at load with the file and line that closes the cycle.
func TestPlanToolSubPlanCycle(t *testing.T) {
	tool := func(file string) string {
		return "tools:\n  again: {description: d, plan: " + file + "}\n"
	}
	for _, tt := range []struct{ name, top, other, want string }{
		{"tool to tool", tool("b.yaml"), tool("a.yaml"), "b.yaml:3:33: plan a.yaml: calls form a cycle: a.yaml → b.yaml → a.yaml"},
		{"tool to call step", tool("b.yaml"), "", "b.yaml:5:34: plan a.yaml: calls form a cycle: a.yaml → b.yaml → a.yaml"},
		{"call step to tool", "", tool("a.yaml"), "b.yaml:3:33: plan a.yaml: calls form a cycle: a.yaml → b.yaml → a.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			steps := func(tools, callee string) string {
				if tools != "" {
					return "version: 1\n" + tools + "steps:\n  - {label: s, type: command, run: echo}\n"
				}
				return "version: 1\n\nsteps:\n  - {label: s, type: command, run: echo}\n  - {label: c, type: plan, plan: " + callee + "}\n"
			}
			for name, src := range map[string]string{"a.yaml": steps(tt.top, "b.yaml"), "b.yaml": steps(tt.other, "a.yaml")} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			src, _ := os.ReadFile(filepath.Join(dir, "a.yaml"))
			_, err := engine.Compile(filepath.Join(dir, "a.yaml"), src, Registry())
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tt.want)) {
				t.Errorf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestPlanToolSubPlanTimeout: a sub-plan tool's timeout stops the
// callee's steps; the model is told, marked failed, and the step goes on.
func TestPlanToolSubPlanTimeout(t *testing.T) {
	f := newWireFake(t, "openai", toolTurn{calls: [][2]string{{"slow", `{}`}}}, toolTurn{text: "done"})
	dir := t.TempDir()
	for name, src := range map[string]string{
		"slow.yaml": "version: 1\nsteps:\n  - {label: wait, type: command, run: sleep 30}\n",
		"plan.yaml": `
version: 1
tools:
  slow: {description: Sleeps., plan: slow.yaml, timeout: 50ms}
agents:
  coder: {provider: openai, model: m, base_url: "` + f.srv.URL + `/v1", tools: [slow]}
steps:
  - {label: ask, type: llm, agent: coder, prompt: go}
`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := runPlanFile(t, filepath.Join(dir, "plan.yaml"), dir, agents.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out := llmSaved(t, b, "ask")["output"]; out != "done" {
		t.Errorf("output = %v", out)
	}
	second := f.requestText(1)
	if !strings.Contains(second, `\"status\":\"failed\"`) || !strings.Contains(second, "slow timed out after 50ms and was stopped") {
		t.Errorf("the model was not told of the timeout: %s", second)
	}
}
