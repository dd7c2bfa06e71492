// Package mcpserve serves runner over the Model Context Protocol (`runner
// mcp`), so that an agent can drive it as a person drives the CLI:
// validate a plan, start a run, follow it, answer its inputs, read and
// write its live board, read its report. Every tool calls the library
// functions the CLI calls (runs, liveboard, board, engine); the server
// adds no behaviour of its own beside starting runs as detached `runner`
// processes (start.go). docs/mcp.md is the user's page.
package mcpserve

//lint:file-ignore SA1019 MCP logging is deprecated from protocol 2026-07-28, but clients of earlier revisions (and the conformance suite) still set a level and read log messages.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/planrunner/runner/internal/view/boardview"
)

// Options say what a Server serves.
type Options struct {
	// Dir is the directory whose runs are listed and whose run ids
	// resolve (its .runner/runs), and what relative paths are relative
	// to; "": the current directory.
	Dir string
	// Runner is the runner binary a run is started with (`runner run`,
	// `runner resume`); "": this executable, which is right for `runner
	// mcp` itself. A Go program embedding the server names one.
	Runner string
	// Version is the server's version, told to clients.
	Version string
	// Log receives what the server does (runs started, errors); the zero
	// Logger logs nothing. It never receives a board's values.
	Log zerolog.Logger
	// Mask hides the secrets of the plans whose boards are written; nil:
	// a mask of the server's own.
	Mask *mask.Masker
}

// Server is runner's MCP server: one mcp.Server with runner's tools and
// resources, served over stdio (Run) or streamable HTTP (Handler).
type Server struct {
	o   Options
	mcp *mcp.Server

	mu      sync.Mutex
	watches map[string]*watch // resource URI -> its watcher
	closed  bool
	// stopFollows ends the followers of runs whose inputs are elicited
	// (elicit.go); follows counts them, for Close to wait on.
	stopFollows chan struct{}
	follows     sync.WaitGroup
	following   map[followKey]bool
	// tasks are the runs started as MCP tasks (tasks.go).
	tasks *tasks
}

// New makes the server. Nothing is read until a client asks.
func New(o Options) *Server {
	if o.Dir == "" {
		o.Dir = "."
	}
	// Absolute, so the paths the tools hand out (a run's blackboard.json,
	// its log) mean the same to the client wherever it runs.
	if abs, err := filepath.Abs(o.Dir); err == nil {
		o.Dir = abs
	}
	if o.Mask == nil {
		o.Mask = mask.New()
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := &Server{o: o, watches: map[string]*watch{}, stopFollows: make(chan struct{})}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "runner", Title: "runner: declarative workflow plans", Version: o.Version}, &mcp.ServerOptions{
		Instructions:       instructions,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
		CompletionHandler:  s.complete,
		// Exactly what runner does: its tools, resources and prompts are
		// fixed at start (no list_changed), a run or board can be
		// subscribed to, prompt and resource-template arguments complete,
		// and what a tool does is told as log messages at the client's
		// level.
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{},
			Resources:   &mcp.ResourceCapabilities{Subscribe: true},
			Prompts:     &mcp.PromptCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
			Logging:     &mcp.LoggingCapabilities{},
		},
	})
	s.mcp.AddReceivingMiddleware(codedErrors)
	s.addTools()
	s.addResources()
	s.addPrompts()
	s.addTaskMethods()
	return s
}

// codedErrors gives every error answered to a client a JSON-RPC code: an
// error of the SDK's or runner's that has one keeps it, any other is an
// internal error (-32603) with its message, never the code 0 a bare Go
// error would go out with.
func codedErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var coded *jsonrpc.Error
		if err != nil && !errors.As(err, &coded) {
			err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return res, err
	}
}

// tell sends a log message to the client of ss, when it has asked for
// messages of that level (logging/setLevel); what a tool did, never a
// board's values.
func (s *Server) tell(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel, msg string, fields map[string]any) {
	if ss == nil {
		return
	}
	data := map[string]any{"message": msg}
	for k, v := range fields {
		data[k] = v
	}
	if err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: level, Logger: "runner", Data: data}); err != nil {
		s.o.Log.Debug().Err(err).Msg("a log message to the client")
	}
}

const instructions = `runner runs declarative YAML workflow plans (steps, parallel groups, branches, loops) against a blackboard.
Check a plan with validate_plan before start_run. A run is named by its id (or a unique prefix, or "latest"), its run directory or its blackboard.json.
run_status says how a run stands; a run that waits for a person lists its questions, answered with answer_input.
A run's blackboard is read with board_read and board_list and written with board_write (expect_version makes a write a compare-and-set).
Resources runner://runs/{id} and runner://runs/{id}/board can be subscribed to; they change as the run goes.`

// MCP is the underlying SDK server, to serve over a transport of the
// caller's choice; a start_run over it cannot be a task (Run and Handler
// move a tools/call's task params where the server finds them).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one client over t (mcp.StdioTransport for `runner mcp`)
// until it disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	defer s.Close()
	return s.mcp.Run(ctx, taskTransport{t})
}

// Close stops the watchers of subscribed resources.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		close(s.stopFollows)
	}
	s.closed = true
	for uri, w := range s.watches {
		w.stop()
		delete(s.watches, uri)
	}
	s.mu.Unlock()
	s.follows.Wait()
}

func ptr[T any](v T) *T { return &v }

// addTools registers the tools. Their annotations say what they touch:
// reads are read-only; start_run and answer_input act on the world (a
// run's steps run commands and call models); board_write changes a
// board others read.
func (s *Server) addTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "validate_plan", Title: "Validate a plan",
		Description: "Check a plan file (or plan YAML given as text) as `runner validate` does: every problem with its line and column. Nothing runs.",
		Annotations: readOnly}, s.validate)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "start_run", Title: "Start a run",
		Description: "Start a run of a plan, as `runner run` in a process of its own that goes on after this call (and after this server ends). " +
			"The run's steps act on the world: they run commands in the work directory, call models (which costs money) and change files. " +
			"The plan is checked first; a plan with problems starts nothing and the problems come back. Returns the run's id and its blackboard.json.",
		Annotations: &mcp.ToolAnnotations{Title: "Start a run (runs the plan's commands and model calls)", DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}}, s.startRun)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "run_status", Title: "A run's status and results",
		Description: "How a run stands: its status (running, waiting, succeeded, failed, interrupted), each step visit's status, result and error, and the questions it waits on.",
		Annotations: readOnly}, s.runStatus)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_runs", Title: "List runs",
		Description: "The runs saved under the server's directory, oldest first, as `runner runs --json` lists them; optionally only those with a status, or whose plan path contains a text.",
		Annotations: readOnly}, s.listRuns)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "answer_input", Title: "Answer a waiting input",
		Description: "Answer an input step a run waits at, as `runner answer` does: checked against the step's form and recorded on the run; the same answer again succeeds, a different one is refused. " +
			"With resume, the run is then resumed in a process of its own (acting on the world as start_run does).",
		Annotations: &mcp.ToolAnnotations{Title: "Answer an input (resume: the run goes on)", DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(true)}}, s.answer)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "board_read", Title: "Read a board key",
		Description: "One key of a run's blackboard, live while the run runs (through its process) or from its saved file: found, and the entry (value, version, author, topic, expiry).",
		Annotations: readOnly}, s.boardRead)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "board_list", Title: "List a board's keys",
		Description: "The live keys of a run's blackboard (optionally under a prefix), each with its value and version.",
		Annotations: readOnly}, s.boardList)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "board_write", Title: "Write a board key",
		Description: "Put (or delete) one key on a run's blackboard, as `runner board FILE put` does: a live run sees it at once, a saved run records it for replay. " +
			"expect_version makes it a compare-and-set: the write happens only if the key's version is that (0: the key must not exist), else it fails saying the current version.",
		Annotations: &mcp.ToolAnnotations{Title: "Write a board key", DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}}, s.boardWrite)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "run_report", Title: "A run's report as text",
		Description: "A run as a markdown text: its status, active tasks, knowledge (the live keys), signals, steps and conflicts (`runner board FILE show`). `runner report` makes the HTML page.",
		Annotations: readOnly}, s.report)
}

// dirPath is p relative to the server's directory.
func (s *Server) dirPath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.o.Dir, p)
}

// resolve turns what a client gave for a run into its blackboard.json:
// an id, a unique prefix of one or "latest" among the server directory's
// runs, a run directory or a blackboard.json (relative to that directory).
func (s *Server) resolve(run string) (string, error) {
	if strings.TrimSpace(run) == "" {
		return "", errors.New(`run: give a run id, "latest", a run directory or a blackboard.json`)
	}
	// A path is the server directory's, never the server process's
	// current directory's; an id has no separator nor extension.
	arg := run
	if strings.ContainsAny(run, `/\:.`) {
		arg = s.dirPath(run)
	} else if _, err := os.Stat(s.dirPath(run)); err == nil {
		arg = s.dirPath(run) // a run directory named like an id
	}
	path, err := runs.Resolve(arg, s.o.Dir)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err != nil {
		if _, rerr := os.Stat(liveboard.RemotePath(path)); rerr != nil {
			return "", fmt.Errorf("run %q: no such run (no file %s, and no run id under %s starts with it)", run, path, runs.RunsDir(s.o.Dir))
		}
	}
	return path, nil
}

// ValidateInput is validate_plan's.
type ValidateInput struct {
	Plan   string `json:"plan,omitempty" jsonschema:"the plan file, relative to the server's directory"`
	Source string `json:"source,omitempty" jsonschema:"the plan's YAML as text, instead of a file (problems then name the file plan.yaml, or plan if given)"`
}

// Problem is one thing wrong with a plan, where it is.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
	// Text is the problem as `runner validate` prints it, file:line:col: message.
	Text string `json:"text"`
}

// ValidateOutput is what validate_plan finds.
type ValidateOutput struct {
	OK       bool      `json:"ok"`
	Steps    int       `json:"steps"`
	Problems []Problem `json:"problems"`
}

func (s *Server) validate(ctx context.Context, _ *mcp.CallToolRequest, in ValidateInput) (*mcp.CallToolResult, ValidateOutput, error) {
	var prog *engine.Program
	var err error
	switch {
	case in.Plan == "" && in.Source == "":
		return nil, ValidateOutput{}, errors.New("give plan (a file) or source (the plan's YAML)")
	case in.Source != "":
		name := in.Plan
		if name == "" {
			name = "plan.yaml"
		}
		prog, err = engine.Compile(s.dirPath(name), []byte(in.Source), steps.Registry())
	default:
		prog, err = engine.Load(s.dirPath(in.Plan), steps.Registry())
	}
	out := ValidateOutput{Problems: []Problem{}}
	if err != nil {
		ps, perr := problems(err)
		if perr != nil {
			return nil, out, perr
		}
		out.Problems = ps
		return nil, out, nil
	}
	out.OK, out.Steps = true, len(prog.Plan.AllSteps())
	return nil, out, nil
}

// problems lists a plan's problems; an error that is no list of them (the
// file is missing, too large) is returned as it is.
func problems(err error) ([]Problem, error) {
	var list plans.Errors
	if !errors.As(err, &list) {
		return nil, err
	}
	out := make([]Problem, 0, len(list))
	for _, e := range list {
		out = append(out, Problem{File: e.File, Line: e.Line, Col: e.Col, Message: e.Msg, Text: e.Error()})
	}
	return out, nil
}

// RunInput names a run.
type RunInput struct {
	Run string `json:"run" jsonschema:"the run: its id (or a unique prefix), latest, its run directory or its blackboard.json"`
}

// Step is one step visit of a run, as its board records it.
type Step struct {
	Label      string `json:"label"`
	Visit      int    `json:"visit"`
	Type       string `json:"type,omitempty"`
	Status     string `json:"status"`
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Goto       string `json:"goto,omitempty"`
	// Result is the step's result fields (steps.LABEL.FIELD in the plan).
	Result any `json:"result,omitempty"`
}

// Question is an input step a run waits at.
type Question struct {
	Label    string `json:"label"`
	Visit    int    `json:"visit"`
	Prompt   string `json:"prompt"`
	Form     any    `json:"form,omitempty" jsonschema:"the answer's fields, a flat JSON Schema"`
	Since    string `json:"since"`
	Deadline string `json:"deadline,omitempty"`
	// Command is the `runner answer` line a person would type.
	Command string `json:"command"`
}

// RunStatus is run_status's answer.
type RunStatus struct {
	ID         string     `json:"id"`
	Blackboard string     `json:"blackboard"`
	Plan       string     `json:"plan"`
	Status     string     `json:"status" jsonschema:"running, waiting, succeeded, failed or interrupted"`
	Live       bool       `json:"live" jsonschema:"a process (or Temporal workflow) runs it now"`
	Error      string     `json:"error,omitempty"`
	StartedAt  string     `json:"started_at"`
	FinishedAt string     `json:"finished_at,omitempty"`
	Steps      []Step     `json:"steps"`
	Waiting    []Question `json:"waiting"`
	Tokens     int64      `json:"tokens"`
	CostUSD    float64    `json:"cost_usd"`
}

const timeFormat = "2006-01-02T15:04:05.999Z07:00"

func (s *Server) runStatus(ctx context.Context, _ *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, RunStatus, error) {
	path, err := s.resolve(in.Run)
	if err != nil {
		return nil, RunStatus{}, err
	}
	sum := runs.SummaryOf(path, s.o.Dir)
	out := RunStatus{ID: sum.ID, Blackboard: path, Plan: sum.Plan, Status: sum.Status, Live: sum.Live,
		StartedAt: sum.StartedAt.Format(timeFormat), Steps: []Step{}, Waiting: []Question{},
		Tokens: int64(sum.Usage.InputTokens + sum.Usage.OutputTokens), CostUSD: sum.Usage.CostUSD}
	if sum.EndedAt != nil {
		out.FinishedAt = sum.EndedAt.Format(timeFormat)
	}
	if sum.Error != "" {
		return nil, out, fmt.Errorf("run %s: %s", in.Run, sum.Error)
	}
	var b *board.Board
	if err := s.onBoard(path, true, func(a liveboard.Access) (err error) {
		b, err = a.Board()
		return err
	}); err != nil {
		return nil, out, err
	}
	run := b.Run()
	out.Error = run.Error
	for _, st := range b.Steps() {
		step := Step{Label: st.Label, Visit: st.Visit, Type: st.Type, Status: st.Status, Error: st.Error, DurationMS: st.DurationMS, Goto: st.Goto}
		if len(st.Result) > 0 && string(st.Result) != "null" {
			var v any
			if json.Unmarshal(st.Result, &v) == nil {
				step.Result = v
			}
		}
		out.Steps = append(out.Steps, step)
	}
	for _, w := range run.Waiting {
		q := Question{Label: w.Label, Visit: w.Visit, Prompt: w.Prompt, Since: w.Since.Format(timeFormat),
			Command: runs.AnswerCommand(engine.ShellQuote(path), w)}
		if len(w.Form) > 0 {
			var v any
			if json.Unmarshal(w.Form, &v) == nil {
				q.Form = v
			}
		}
		if w.Deadline != nil {
			q.Deadline = w.Deadline.Format(timeFormat)
		}
		out.Waiting = append(out.Waiting, q)
	}
	return nil, out, nil
}

// ListInput filters list_runs.
type ListInput struct {
	Status string `json:"status,omitempty" jsonschema:"only runs with this status: running, waiting, succeeded, failed or interrupted"`
	Plan   string `json:"plan,omitempty" jsonschema:"only runs of plans whose path contains this"`
}

// RunSummary is one run as list_runs lists it.
type RunSummary struct {
	ID         string  `json:"id"`
	Blackboard string  `json:"blackboard"`
	Plan       string  `json:"plan"`
	Status     string  `json:"status"`
	Live       bool    `json:"live"`
	StartedAt  string  `json:"started_at"`
	FinishedAt string  `json:"finished_at,omitempty"`
	Steps      int     `json:"steps"`
	Failed     int     `json:"failed_steps"`
	Tokens     int64   `json:"tokens"`
	CostUSD    float64 `json:"cost_usd"`
	Error      string  `json:"error,omitempty" jsonschema:"why the run could not be read"`
}

// ListOutput is list_runs's answer.
type ListOutput struct {
	Runs []RunSummary `json:"runs"`
}

func (s *Server) listRuns(ctx context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, ListOutput, error) {
	switch in.Status {
	case "", board.StatusRunning, board.StatusWaiting, board.StatusSucceeded, board.StatusFailed, board.StatusInterrupted:
	default:
		return nil, ListOutput{}, fmt.Errorf("status %q: want running, waiting, succeeded, failed or interrupted", in.Status)
	}
	list, err := runs.List(s.o.Dir)
	if err != nil {
		return nil, ListOutput{}, err
	}
	out := ListOutput{Runs: []RunSummary{}}
	for _, r := range list {
		if (in.Status != "" && r.Status != in.Status) || !strings.Contains(r.Plan, in.Plan) {
			continue
		}
		rs := RunSummary{ID: r.ID, Blackboard: r.Path, Plan: r.Plan, Status: r.Status, Live: r.Live,
			StartedAt: r.StartedAt.Format(timeFormat), Steps: r.Steps, Failed: r.Failed,
			Tokens: int64(r.Usage.InputTokens + r.Usage.OutputTokens), CostUSD: r.Usage.CostUSD, Error: r.Error}
		if r.EndedAt != nil {
			rs.FinishedAt = r.EndedAt.Format(timeFormat)
		}
		out.Runs = append(out.Runs, rs)
	}
	return nil, out, nil
}

// AnswerInput is answer_input's.
type AnswerInput struct {
	Run    string         `json:"run" jsonschema:"the run: its id, latest, its run directory or its blackboard.json"`
	Step   string         `json:"step" jsonschema:"the input step's label"`
	Visit  int            `json:"visit,omitempty" jsonschema:"which visit of the step (from 1); 0 or left out: the one that waits"`
	Answer map[string]any `json:"answer" jsonschema:"the answer: the form's fields by name"`
	By     string         `json:"by,omitempty" jsonschema:"who answers, recorded with the answer (default mcp)"`
	Resume bool           `json:"resume,omitempty" jsonschema:"resume the run once the answer is recorded (when no process runs it)"`
}

// AnswerOutput says how the answer was taken.
type AnswerOutput struct {
	Step    string `json:"step"`
	Visit   int    `json:"visit"`
	Already bool   `json:"already" jsonschema:"the same answer was recorded already"`
	// Where: file (recorded on the saved run: resume it to go on),
	// live_run (taken by the process still running the run's other
	// steps, for its next resume) or temporal (the run goes on at once).
	Where string `json:"where"`
	// Resumed is the run resumed (resume), else empty.
	Resumed *Started `json:"resumed,omitempty"`
	Next    string   `json:"next,omitempty" jsonschema:"what to do next"`
}

func (s *Server) answer(ctx context.Context, req *mcp.CallToolRequest, in AnswerInput) (*mcp.CallToolResult, AnswerOutput, error) {
	if in.Step == "" {
		return nil, AnswerOutput{}, errors.New("step: give the input step's label")
	}
	if in.Visit < 0 {
		return nil, AnswerOutput{}, fmt.Errorf("visit %d: want 1 or more, or leave it out for the visit that waits", in.Visit)
	}
	if in.Answer == nil {
		return nil, AnswerOutput{}, errors.New("answer: give a JSON object of the form's fields")
	}
	path, err := s.resolve(in.Run)
	if err != nil {
		return nil, AnswerOutput{}, err
	}
	by := in.By
	if by == "" {
		by = "mcp"
	}
	q, err := runs.OpenQuestion(path, in.Step, in.Visit, s.o.Mask, nil)
	if err != nil {
		return nil, AnswerOutput{}, err
	}
	a, err := q.Answer(in.Answer, by)
	waiting := q.Run.Status == board.StatusWaiting
	path = q.Path
	q.Close()
	if err != nil {
		return nil, AnswerOutput{}, err
	}
	out := AnswerOutput{Step: a.Label, Visit: a.Visit, Already: a.Already, Where: [...]string{"file", "live_run", "temporal"}[a.Where]}
	ss := sessionOf(req)
	s.tell(ctx, ss, "info", "input answered", map[string]any{"step": a.Label, "visit": a.Visit, "where": out.Where})
	switch {
	case a.Where == runs.OnLiveRun:
		out.Next = "the run still runs its other steps; once it stops, resume it (answer_input with resume, or `runner resume " + engine.ShellQuote(path) + "`)"
	case a.Where == runs.OnFile && in.Resume:
		st, err := s.start(ctx, []string{"resume", path})
		if err != nil {
			return nil, out, fmt.Errorf("the answer was recorded, but resuming the run failed: %w", err)
		}
		out.Resumed = &st
		s.tell(ctx, ss, "info", "run resumed", map[string]any{"run": st.RunID, "pid": st.PID})
		s.follow(ss, st.Blackboard)
	case a.Where == runs.OnFile && waiting:
		out.Next = "resume the run: answer_input again with resume, or `runner resume " + engine.ShellQuote(path) + "`"
	}
	return nil, out, nil
}

// BoardReadInput is board_read's.
type BoardReadInput struct {
	Run   string `json:"run" jsonschema:"the run: its id, latest, its run directory or its blackboard.json"`
	Key   string `json:"key" jsonschema:"the key to read"`
	Agent string `json:"agent,omitempty" jsonschema:"read as this agent: its key patterns apply (default cli)"`
}

// Entry is one board entry as a client sees it.
type Entry struct {
	Key     string  `json:"key"`
	Value   any     `json:"value"`
	Version int64   `json:"version"`
	Author  string  `json:"author"`
	Topic   string  `json:"topic,omitempty"`
	Written string  `json:"written"`
	TTL     float64 `json:"ttl_s,omitempty"`
	Expires string  `json:"expires,omitempty"`
	Seq     int64   `json:"seq"`
}

func entryOf(e board.Entry) Entry {
	out := Entry{Key: e.Key, Value: e.Content, Version: e.Version, Author: e.Author, Topic: e.Topic, Written: e.TS.Format(timeFormat), Seq: e.Seq}
	if e.TTL != nil {
		out.TTL = *e.TTL
		out.Expires = e.TS.Add(ttlDuration(*e.TTL)).Format(timeFormat)
	}
	return out
}

// BoardReadOutput is a key read.
type BoardReadOutput struct {
	Found bool   `json:"found" jsonschema:"the key exists and has not expired"`
	Entry *Entry `json:"entry,omitempty"`
}

func (s *Server) boardRead(ctx context.Context, _ *mcp.CallToolRequest, in BoardReadInput) (*mcp.CallToolResult, BoardReadOutput, error) {
	if err := board.CheckKey(in.Key); err != nil {
		return nil, BoardReadOutput{}, fmt.Errorf("key: %v", err)
	}
	var e board.Entry
	var ok bool
	err := s.onRun(in.Run, true, func(a liveboard.Access) (err error) {
		e, ok, err = a.Read(in.Agent, in.Key)
		return err
	})
	if err != nil || !ok {
		return nil, BoardReadOutput{}, err
	}
	ent := entryOf(e)
	return nil, BoardReadOutput{Found: true, Entry: &ent}, nil
}

// BoardListInput is board_list's.
type BoardListInput struct {
	Run    string `json:"run" jsonschema:"the run: its id, latest, its run directory or its blackboard.json"`
	Prefix string `json:"prefix,omitempty" jsonschema:"only keys starting with this"`
	Agent  string `json:"agent,omitempty" jsonschema:"read as this agent: its key patterns apply (default cli)"`
}

// BoardListOutput is the live keys.
type BoardListOutput struct {
	Entries []Entry `json:"entries"`
}

func (s *Server) boardList(ctx context.Context, _ *mcp.CallToolRequest, in BoardListInput) (*mcp.CallToolResult, BoardListOutput, error) {
	var live []board.Entry
	if err := s.onRun(in.Run, true, func(a liveboard.Access) (err error) {
		live, err = a.Live(in.Prefix, in.Agent)
		return err
	}); err != nil {
		return nil, BoardListOutput{}, err
	}
	out := BoardListOutput{Entries: make([]Entry, 0, len(live))}
	for _, e := range live {
		out.Entries = append(out.Entries, entryOf(e))
	}
	return nil, out, nil
}

// BoardWriteInput is board_write's.
type BoardWriteInput struct {
	Run   string `json:"run" jsonschema:"the run: its id, latest, its run directory or its blackboard.json"`
	Key   string `json:"key" jsonschema:"the key to write"`
	Value any    `json:"value,omitempty" jsonschema:"the value, any JSON (not with delete)"`
	// ExpectVersion is a pointer: 0 is a condition (the key must not
	// exist), left out is none.
	ExpectVersion *int64  `json:"expect_version,omitempty" jsonschema:"compare-and-set: write only if the key's version is this (0: the key must not exist)"`
	TTL           float64 `json:"ttl_s,omitempty" jsonschema:"the value expires after this many seconds"`
	Agent         string  `json:"agent,omitempty" jsonschema:"write as this agent: its key patterns apply, the write is authored by it (default cli)"`
	Topic         string  `json:"topic,omitempty" jsonschema:"the topic to publish on (default: the key's prefix before ':')"`
	Delete        bool    `json:"delete,omitempty" jsonschema:"delete the key instead"`
}

// BoardWriteOutput is the entry written.
type BoardWriteOutput struct {
	Key     string `json:"key"`
	Version int64  `json:"version" jsonschema:"the key's version now: give it as expect_version to change it only if no one else has"`
	Deleted bool   `json:"deleted,omitempty"`
}

func (s *Server) boardWrite(ctx context.Context, _ *mcp.CallToolRequest, in BoardWriteInput) (*mcp.CallToolResult, BoardWriteOutput, error) {
	if in.Delete && in.Value != nil {
		return nil, BoardWriteOutput{}, errors.New("give value or delete, not both")
	}
	if !in.Delete && in.Value == nil {
		return nil, BoardWriteOutput{}, errors.New("value: give the value to write (any JSON but null), or delete: true")
	}
	q := liveboard.WriteRequest{Key: in.Key, Value: in.Value, TTL: in.TTL, Agent: in.Agent, Topic: in.Topic, ExpectVersion: in.ExpectVersion, Delete: in.Delete}
	if err := q.Check(); err != nil { // before the board is touched
		return nil, BoardWriteOutput{}, err
	}
	var e board.Entry
	if err := s.onRun(in.Run, false, func(a liveboard.Access) (err error) {
		e, err = a.Write(q)
		return err
	}); err != nil {
		return nil, BoardWriteOutput{}, err
	}
	s.o.Log.Info().Str("key", e.Key).Int64("version", e.Version).Bool("delete", in.Delete).Msg("board write")
	return nil, BoardWriteOutput{Key: e.Key, Version: e.Version, Deleted: in.Delete}, nil
}

// onRun calls fn with the board of a run, opened for a read (readOnly)
// or a write.
func (s *Server) onRun(run string, readOnly bool, fn func(liveboard.Access) error) error {
	path, err := s.resolve(run)
	if err != nil {
		return err
	}
	return s.onBoard(path, readOnly, fn)
}

// onBoard calls fn with the board at path (a run that ends mid-request
// is read from the file it saved: runs.OpenBoard).
func (s *Server) onBoard(path string, readOnly bool, fn func(liveboard.Access) error) error {
	err, live := s.onBoardOnce(path, readOnly, fn)
	if err != nil && live && readOnly {
		// The run's process ended between the open and the read: its
		// saved file says the same, read once more.
		err, _ = s.onBoardOnce(path, readOnly, fn)
	}
	return err
}

func (s *Server) onBoardOnce(path string, readOnly bool, fn func(liveboard.Access) error) (err error, live bool) {
	a, _, err := runs.OpenBoard(path, runs.BoardOptions{ReadOnly: readOnly, Mask: s.o.Mask})
	if err != nil {
		return err, false
	}
	err = fn(a)
	live = runs.Live(a)
	if cerr := a.Close(); err == nil && !live {
		err = cerr // a file's close writes it
	}
	return err, live
}

// ReportOutput is a run's report.
type ReportOutput struct {
	Text string `json:"text" jsonschema:"the run as markdown"`
}

func (s *Server) report(ctx context.Context, _ *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, ReportOutput, error) {
	text, err := s.reportText(in.Run)
	if err != nil {
		return nil, ReportOutput{}, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, ReportOutput{Text: text}, nil
}

// reportText is the run's board as `runner board FILE show` prints it.
func (s *Server) reportText(run string) (string, error) {
	var b *board.Board
	if err := s.onRun(run, true, func(a liveboard.Access) (err error) {
		b, err = a.Board()
		return err
	}); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := boardview.Markdown(&buf, b); err != nil {
		return "", err
	}
	return buf.String(), nil
}
