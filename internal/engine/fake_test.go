package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/planrunner/runner/internal/engine"
)

// Fake step types for engine tests, so they depend on no real step type.

// echo: output is its rendered `text`; `fail_until` N fails attempts < N.
type echoType struct{}

type EchoResult struct {
	Text    string `json:"text"`
	Attempt int    `json:"attempt"`
	Count   struct {
		N int `json:"n"`
	} `json:"count"`
}

type echoStep struct {
	text      *engine.Template
	failUntil int
	sleep     time.Duration
	jump      string
}

func (echoType) Name() string { return "echo" }
func (echoType) Result() any  { return EchoResult{} }
func (echoType) Decode(d *engine.Decoder) engine.Step {
	s := &echoStep{text: d.Template("text"), failUntil: d.Int("fail_until", 0), sleep: d.Duration("sleep"), jump: d.String("jump")}
	return s
}

var running, maxRunning atomic.Int64

func (s *echoStep) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	n := running.Add(1)
	defer running.Add(-1)
	for {
		m := maxRunning.Load()
		if n <= m || maxRunning.CompareAndSwap(m, n) {
			break
		}
	}
	text, err := sc.Eval(s.text)
	if err != nil {
		return engine.Result{}, err
	}
	if s.sleep > 0 {
		select {
		case <-time.After(s.sleep):
		case <-ctx.Done():
			return engine.Result{}, ctx.Err()
		}
	}
	res := EchoResult{Text: text, Attempt: sc.Attempt}
	res.Count.N = sc.Visit
	if sc.Attempt < s.failUntil {
		return engine.Result{Output: text, Fields: res}, fmt.Errorf("attempt %d failed", sc.Attempt)
	}
	if text == "boom" {
		return engine.Result{Output: text, Fields: res}, errors.New("boom")
	}
	return engine.Result{Output: text, Fields: &res, Goto: s.jump}, nil
}

// jump: goes to `to` when `when` holds.
type jumpType struct{}

type jumpStep struct {
	when *engine.Expr
	to   string
}

func (jumpType) Name() string { return "jump" }
func (jumpType) Result() any  { return struct{}{} }
func (jumpType) Decode(d *engine.Decoder) engine.Step {
	s := &jumpStep{to: d.String("to")}
	// as branch does: a step decoded again after its plan was compiled
	// looks its target up too
	if s.to != "" && s.to != "end" && s.to != "fail" && d.Plan.Lookup(s.to) == nil {
		d.Errorf(d.Node("to"), "to: no step labeled %q", s.to)
	}
	if n := d.Node("when"); n != nil {
		s.when = d.ExprAt(n, "when")
	}
	return s
}
func (s *jumpStep) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	ok, err := sc.EvalBool(s.when)
	if err != nil || !ok {
		return engine.Result{}, err
	}
	return engine.Result{Goto: s.to}, nil
}

func registry() *engine.Registry {
	r := engine.NewRegistry()
	r.Register(echoType{})
	r.Register(jumpType{})
	return r
}
