package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/runs"
)

// The prompts: what a person asks an agent to do with runner most, each
// naming the tools to use. Their arguments, and the run id of the
// resource templates, complete (completion/complete): plan files under
// the server's directory, run ids, the labels of the inputs a run waits
// at.
const (
	promptRun    = "run_plan"
	promptAnswer = "answer_run"
)

func (s *Server) addPrompts() {
	s.mcp.AddPrompt(&mcp.Prompt{Name: promptRun, Title: "Run a plan",
		Description: "Check a plan, start a run of it and follow it to its end, answering what it asks.",
		Arguments:   []*mcp.PromptArgument{{Name: "plan", Title: "Plan file", Description: "the plan file, relative to the server's directory", Required: true}}},
		s.promptRun)
	s.mcp.AddPrompt(&mcp.Prompt{Name: promptAnswer, Title: "Answer a waiting run",
		Description: "Read what a run waits for and answer it, then let the run go on.",
		Arguments: []*mcp.PromptArgument{
			{Name: "run", Title: "Run", Description: "the run: its id, a unique prefix of it, or latest", Required: true},
			{Name: "step", Title: "Input step", Description: "the label of the input to answer; left out: every input it waits at"},
		}},
		s.promptAnswer)
}

// invalidParams is JSON-RPC's invalid-params error: what the client sent
// names nothing runner has.
func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

func userText(text string) *mcp.PromptMessage {
	return &mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: text}}
}

func (s *Server) promptRun(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	plan := req.Params.Arguments["plan"]
	if plan == "" {
		return nil, invalidParams("prompt %s: give the argument plan (a plan file)", promptRun)
	}
	return &mcp.GetPromptResult{Description: "Run the plan " + plan, Messages: []*mcp.PromptMessage{userText(fmt.Sprintf(
		"Run the runner plan %q. First check it with validate_plan; if it has problems, show them with their line and column and stop. "+
			"Else start it with start_run and follow it with run_status (or subscribe to the resource runner://runs/{id}) until its status is succeeded, failed or interrupted. "+
			"When it waits, show me each question and its form, and answer with answer_input (with resume) once I have said what to answer. "+
			"At the end, say how it went: each step's status and the run's cost.", plan))}}, nil
}

func (s *Server) promptAnswer(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	run, step := req.Params.Arguments["run"], req.Params.Arguments["step"]
	if run == "" {
		return nil, invalidParams("prompt %s: give the argument run (a run id, or latest)", promptAnswer)
	}
	which := "each input it waits at"
	if step != "" {
		which = fmt.Sprintf("its input %q", step)
	}
	return &mcp.GetPromptResult{Description: "Answer the run " + run, Messages: []*mcp.PromptMessage{userText(fmt.Sprintf(
		"The runner run %q waits for an answer. Read it with run_status, show me %s: its prompt and its form's fields. "+
			"Once I have said what to answer, answer it with answer_input (with resume, so the run goes on), then follow the run with run_status until it stops or waits again.", run, which))}}, nil
}

// maxCompletions is the most values one completion gives (the protocol's
// limit); the rest are counted in total.
const maxCompletions = 100

func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref, arg := req.Params.Ref, req.Params.Argument
	var given map[string]string
	if req.Params.Context != nil {
		given = req.Params.Context.Arguments
	}
	var values []string
	var err error
	switch {
	case ref.Type == "ref/prompt" && ref.Name == promptRun && arg.Name == "plan":
		values, err = s.planFiles(arg.Value)
	case ref.Type == "ref/prompt" && ref.Name == promptAnswer && arg.Name == "run",
		ref.Type == "ref/resource" && (ref.URI == runTemplate || ref.URI == boardTemplate) && arg.Name == "id":
		values, err = s.runIDs(arg.Value)
	case ref.Type == "ref/prompt" && ref.Name == promptAnswer && arg.Name == "step":
		values = s.waitingLabels(given["run"], arg.Value)
	case ref.Type == "ref/prompt" && ref.Name != promptRun && ref.Name != promptAnswer:
		return nil, invalidParams("no prompt %q: runner's prompts are %s and %s", ref.Name, promptRun, promptAnswer)
	case ref.Type == "ref/prompt":
		return nil, invalidParams("prompt %s has no argument %q", ref.Name, arg.Name)
	case ref.Type == "ref/resource" && (ref.URI == runTemplate || ref.URI == boardTemplate):
		return nil, invalidParams("resource template %s has no argument %q (only id)", ref.URI, arg.Name)
	case ref.Type == "ref/resource":
		return nil, invalidParams("no resource template %q: runner's are %s and %s", ref.URI, runTemplate, boardTemplate)
	default:
		return nil, invalidParams("ref type %q: want ref/prompt or ref/resource", ref.Type)
	}
	if err != nil {
		return nil, internalError(err)
	}
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}
	if len(values) > maxCompletions {
		res.Completion.Values, res.Completion.HasMore = values[:maxCompletions], true
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return res, nil
}

// planSearch bounds the look for plan files: how deep under the server's
// directory, and how many entries at most, so that a completion in a
// large tree answers at once.
const (
	planSearchDepth   = 4
	planSearchEntries = 20000
)

// errEnough stops the walk.
var errEnough = errors.New("enough")

// planFiles are the .yaml and .yml files under the server's directory
// whose path (relative, with /) starts with prefix, sorted; hidden
// directories (.runner, .git) and node_modules are not looked in.
func (s *Server) planFiles(prefix string) ([]string, error) {
	var out []string
	seen := 0
	err := filepath.WalkDir(s.o.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable directory is left out
		}
		if seen++; seen > planSearchEntries {
			return errEnough
		}
		rel, rerr := filepath.Rel(s.o.Dir, path)
		if rerr != nil || rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || strings.Count(rel, "/") >= planSearchDepth {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(rel); (ext == ".yaml" || ext == ".yml") && strings.HasPrefix(rel, prefix) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// runIDs are the ids of the server directory's runs that start with
// prefix, newest first, and latest.
func (s *Server) runIDs(prefix string) ([]string, error) {
	list, err := runs.List(s.o.Dir)
	if err != nil {
		return nil, err
	}
	var out []string
	if strings.HasPrefix("latest", prefix) && len(list) > 0 {
		out = append(out, "latest")
	}
	for _, r := range slices.Backward(list) {
		if r.ID != "" && strings.HasPrefix(r.ID, prefix) {
			out = append(out, r.ID)
		}
	}
	return out, nil
}

// waitingLabels are the labels of the inputs run waits at that start with
// prefix; a run that is not there, or waits for nothing, has none.
func (s *Server) waitingLabels(run, prefix string) []string {
	if run == "" {
		return nil
	}
	path, err := s.resolve(run)
	if err != nil {
		return nil
	}
	var b *board.Board
	if err := s.onBoard(path, true, func(a liveboard.Access) (err error) {
		b, err = a.Board()
		return err
	}); err != nil {
		return nil
	}
	var out []string
	for _, w := range b.Run().Waiting {
		if strings.HasPrefix(w.Label, prefix) && !slices.Contains(out, w.Label) {
			out = append(out, w.Label)
		}
	}
	return out
}
