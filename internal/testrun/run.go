// Package testrun runs a project's test suite with its own runner (go test,
// pytest, cargo test, jest, vitest, a TAP producer, or any command) and turns
// the outcome into facts a model can act on: which tests failed, where, with
// what message, and a short summary to paste into the next prompt.
package testrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/sys/proc"
	"github.com/planrunner/runner/internal/sys/sandbox"
)

// Options say what to run.
type Options struct {
	Command   string   // shell command; empty: the framework's usual one
	Framework string   // "auto" or "" detects; else one of Frameworks
	Dir       string   // the project; file paths in the result are relative to it
	Env       []string // full environment; nil: this process's. CI=1 and NO_COLOR=1 are added
	Timeout   time.Duration
	Grace     time.Duration // SIGTERM→SIGKILL; 0: proc's default
	// MaxSummaryFailures is how many failures the summary spells out; 0: 5.
	MaxSummaryFailures int
	// Sandbox, when set, runs the suite confined (see proc.Spec.Sandbox).
	Sandbox *sandbox.Policy
	// Echo, when set, is given every line the suite prints as it comes
	// (stream "stdout" or "stderr"), for a live view.
	Echo func(stream, line string)
}

// Run runs the suite and reports. The error is for a run that could not
// start at all (a missing directory, an unknown framework); a missing
// runner binary, a failing suite or a timeout are in the Result.
func Run(ctx context.Context, o Options) (*Result, error) {
	name := o.Framework
	if name == "" || name == "auto" {
		// The command says best what runs (python -m unittest in a
		// project pytest would be detected for); else the project's files.
		if name = DetectCommand(o.Command); name == "" {
			name = Detect(o.Dir)
		}
	}
	fw := lookup(name)
	if fw == nil {
		return nil, fmt.Errorf("unknown test framework %q (want auto or one of %s)", name, strings.Join(Frameworks, ", "))
	}
	if fi, err := os.Stat(o.Dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("test directory %s: not a directory", o.Dir)
	}
	res := &Result{Framework: name, Command: o.Command, ExitCode: -1}
	if res.Command == "" {
		cmd, missing := fw.command(o.Dir)
		if missing != "" {
			res.Outcome = Error
			res.Summary = "ERROR: " + missing
			return res, nil
		}
		res.Command = cmd
	}
	if fw.rewrite != nil {
		res.Command = fw.rewrite(res.Command)
	}

	tmp, err := os.MkdirTemp("", "runner-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	env = append([]string(nil), env...)
	for _, kv := range [][2]string{{"CI", "1"}, {"NO_COLOR", "1"}, {"FORCE_COLOR", "0"},
		{"PY_COLORS", "0"}, {"CARGO_TERM_COLOR", "never"}} {
		env = setEnv(env, kv[0], kv[1])
	}
	script, env := fw.prepare(res.Command, tmp, env)

	// The limit the summary names: ours, or the caller's deadline (a plan's
	// step timeout arrives that way).
	limit := o.Timeout
	if dl, ok := ctx.Deadline(); ok && (limit == 0 || time.Until(dl) < limit) {
		limit = time.Until(dl).Round(time.Second)
		if limit < time.Second { // a sub-second timeout keeps its figure
			limit = time.Until(dl).Round(10 * time.Millisecond)
		}
	}
	p := &syncParser{p: fw.parser(o.Dir, tmp)}
	tail := &tailLines{n: 60}
	echo := o.Echo
	if echo == nil {
		echo = func(string, string) {}
	}
	outW := &lineWriter{fn: func(l string) { tail.add(l); p.stdout(l); echo("stdout", l) }}
	errW := &lineWriter{fn: func(l string) { tail.add(l); p.stderr(l); echo("stderr", l) }}
	var policy *sandbox.Policy
	if o.Sandbox != nil {
		// The runner's report (junit.xml, report.json) is written to tmp.
		p := *o.Sandbox
		p.Write = append(p.Write[:len(p.Write):len(p.Write)], tmp)
		policy = &p
	}
	pr, err := proc.Run(ctx, proc.Spec{Script: script, Dir: o.Dir, Env: env,
		Timeout: o.Timeout, Grace: o.Grace, Stdout: outW, Stderr: errW, Sandbox: policy})
	if err != nil {
		return nil, err
	}
	if pr.Sandbox != nil {
		rep := *pr.Sandbox
		rep.Write = o.Sandbox.Write // what the plan opened, not runner's own report directory
		res.Sandbox = &rep
	}
	outW.flush()
	errW.flush()

	res.ExitCode = pr.ExitCode
	res.DurationMS = pr.Duration.Milliseconds()
	res.TimedOut = pr.TimedOut || (pr.Canceled && errors.Is(ctx.Err(), context.DeadlineExceeded))
	lines := tail.lines()
	if t, ok := p.p.(tailer); ok {
		lines = t.tail()
	}
	res.Output = strings.Join(lines, "\n")
	rep := p.finish(pr.ExitCode, pr.TimedOut || pr.Canceled)
	res.conclude(rep, fw, pr.Canceled && !res.TimedOut, o.MaxSummaryFailures, limit)
	return res, nil
}

// conclude fills the result from what the parser found.
func (res *Result) conclude(rep *report, fw *framework, canceled bool, maxFails int, timeout time.Duration) {
	res.Counts, res.Failures, res.BuildErrors = rep.counts, rep.failures, rep.buildErrors
	if res.Failures == nil {
		res.Failures = []Failure{}
	}
	if res.BuildErrors == nil {
		res.BuildErrors = []BuildError{}
	}
	outcome, detail := decide(res, rep, fw, canceled)
	res.Outcome, res.Passed = outcome, outcome == Passed
	// The failures that made the outcome come first.
	first := map[string]string{CollectionError: KindError, Timeout: KindTimeout}[outcome]
	sort.SliceStable(res.Failures, func(i, j int) bool {
		return res.Failures[i].Kind == first && res.Failures[j].Kind != first
	})
	res.Summary = summarize(res, detail, maxFails, timeout)
}

// decide picks the outcome, with a detail for an error; the most telling
// one wins: a stopped run, a missing runner, a build that failed, and so on.
func decide(res *Result, rep *report, fw *framework, canceled bool) (string, string) {
	c := rep.counts
	switch {
	case canceled:
		return Error, "the run was canceled"
	case res.TimedOut:
		return Timeout, ""
	}
	if bin := missingTool(res.ExitCode, res.Output, fw.name); bin != "" && !rep.structured {
		return Error, missingText(bin)
	}
	switch {
	case rep.buildFailed || len(rep.buildErrors) > 0:
		return BuildFailed, ""
	case rep.collection && c.Failed == 0:
		// A file that did not load hides nothing: with tests of other
		// files failing, the run failed and both are in the failures.
		return CollectionError, ""
	case rep.ownTimeout:
		return Timeout, ""
	case rep.toolError != "":
		return Error, rep.toolError
	case c.Failed > 0 || c.Errors > 0 || len(rep.failures) > 0:
		return Failed, ""
	case rep.structured && c.Passed == 0:
		return NoTests, ""
	case res.ExitCode != 0:
		return Failed, ""
	}
	return Passed, ""
}

// syncParser serialises the two streams' lines into one parser.
type syncParser struct {
	mu sync.Mutex
	p  parser
}

func (s *syncParser) stdout(l string) { s.mu.Lock(); defer s.mu.Unlock(); s.p.stdout(l) }
func (s *syncParser) stderr(l string) { s.mu.Lock(); defer s.mu.Unlock(); s.p.stderr(l) }
func (s *syncParser) finish(code int, killed bool) *report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p.finish(code, killed)
}
