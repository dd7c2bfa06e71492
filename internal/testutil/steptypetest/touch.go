// Package steptypetest is a step type written as a new one would be, for
// the tests that hold every part of runner to asking a type what it is
// (engine.Caps) rather than naming it: "touch" appends a line to a file,
// so it touches the world and declares nothing about how it replays, and
// its result has the kinds that views show (tests, an edit, an agent's
// answer). Tests plug it in with steps.Plug(steptypetest.Touch{}).
//
// It imports engine, patch and testrun (the shapes of its result) and
// nothing that runs a plan; only tests import it.
package steptypetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/patch"
	"github.com/planrunner/runner/internal/testrun"
)

// Name is Touch's `type:`.
const Name = "touch"

// Touch is the step type.
type Touch struct{}

// Result is what a touch step reports: one failed check, the file it
// changed and the agent it names.
type Result struct {
	Agent     string             `json:"agent"`
	Outcome   string             `json:"outcome"`
	Framework string             `json:"framework"`
	Counts    testrun.Counts     `json:"counts"`
	Failures  []testrun.Failure  `json:"failures"`
	Files     []patch.FileResult `json:"files"`
}

func (Touch) Name() string           { return Name }
func (Touch) Result() any            { return Result{} }
func (Touch) Spec() *engine.TypeSpec { return &spec }

// Caps: nothing about where it runs or how it replays (the defaults: it
// touches the world); its result has test results, an edit and an
// agent's answer.
func (Touch) Caps() engine.Caps {
	return engine.Caps{Shows: engine.ShowsTests | engine.ShowsEdit | engine.ShowsModel}
}

var spec = engine.TypeSpec{
	Doc: "Appends a line to a file and fails one check saying so.",
	Fields: []engine.Field{
		{Name: "path", Kind: engine.KindString, Required: true, Doc: "The file, relative to the run's directory.",
			Examples: []any{"touched.txt"}},
		{Name: "agent", Kind: engine.KindString, Doc: "The agent its result names.", Examples: []any{"toucher"}},
	},
	Example: "- {label: t, type: touch, path: touched.txt}",
	Results: []engine.ResultField{
		{Name: "agent", Doc: "The agent field."},
		{Name: "outcome", Doc: "Always failed."},
		{Name: "framework", Doc: "Always touch."},
		{Name: "counts", Doc: "Two checks, one failed."},
		{Name: "failures", Doc: "The failed check."},
		{Name: "files", Doc: "The file it appended to."},
	},
}

type step struct{ path, agent string }

func (Touch) Decode(d *engine.Decoder) engine.Step {
	s := &step{}
	if d.Required("path") {
		s.path = d.String("path")
	}
	if d.Has("agent") {
		s.agent = d.String("agent")
	}
	return s
}

// Line is what each run of a touch step appends to its file.
const Line = "touched\n"

func (s *step) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	f, err := os.OpenFile(filepath.Join(sc.Workdir, s.path), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return engine.Result{}, err
	}
	_, err = f.WriteString(Line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return engine.Result{}, err
	}
	res := Result{Agent: s.agent, Outcome: "failed", Framework: "touch",
		Counts:   testrun.Counts{Total: 2, Passed: 1, Failed: 1},
		Failures: []testrun.Failure{{ID: "TestTouched", File: s.path, Line: 1, Message: "the file was touched", Kind: testrun.KindFail}},
		Files:    []patch.FileResult{{Path: s.path, Op: "modify", Added: 1}}}
	return engine.Result{Output: "touched " + s.path, Fields: res}, errors.New("1 of 2 checks failed: the file was touched")
}
