package runner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/steps"
)

// Plan is a plan file loaded and checked: it is free of problems.
type Plan struct {
	prog *engine.Program
}

// Load reads the plan at path and checks it as `runner validate` does,
// with the step types of types (nil: the built-in ones). A plan with
// problems returns them all as [Problems].
func Load(path string, types *Registry) (*Plan, error) {
	if types == nil {
		types = steps.Registry()
	}
	prog, err := engine.Load(path, types)
	if err != nil {
		return nil, planError(err)
	}
	return &Plan{prog}, nil
}

// Name is the plan's name: field.
func (p *Plan) Name() string { return p.prog.Plan.Name }

// Path is the file the plan was read from.
func (p *Plan) Path() string { return p.prog.Plan.Path }

// Steps lists the labels of the plan's steps in file order, a group
// before its children.
func (p *Plan) Steps() []string {
	var out []string
	for _, s := range p.prog.Plan.AllSteps() {
		out = append(out, s.Label)
	}
	return out
}

// Problem is one thing wrong with a plan, where it is.
type Problem struct {
	File      string
	Line, Col int
	Message   string
}

// String is the problem as file:line:col: message.
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, p.Message)
}

// Problems is every problem found in a plan, in file order: the error
// [Load], [Run] and [Replay] return for a plan that does not load.
type Problems []Problem

// Error lists the problems, one file:line:col: message a line.
func (ps Problems) Error() string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "\n")
}

// planError is err with a plan's problems as Problems.
func planError(err error) error {
	var list plans.Errors
	if !errors.As(err, &list) {
		return err
	}
	out := make(Problems, len(list))
	for i, e := range list {
		out[i] = Problem{File: e.File, Line: e.Line, Col: e.Col, Message: e.Msg}
	}
	return out
}
