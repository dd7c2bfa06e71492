package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"sync"

	"github.com/planrunner/runner/board"
)

// Step statuses, as expressions and blackboard.json see them.
const (
	StatusPending     = "pending"
	StatusSucceeded   = "succeeded"
	StatusFailed      = "failed"
	StatusSkipped     = "skipped"
	StatusInterrupted = "interrupted"
)

// evaluator holds what expressions see. The steps view is copied on write,
// so an evaluation takes a consistent snapshot without holding a lock, and
// its cost grows with the number of labels, never with the board.
type evaluator struct {
	mu    sync.Mutex
	steps map[string]any // label -> map[string]any; replaced, never mutated
	base  map[string]any // vars, env, run, board, entries
}

func newEvaluator(prog *Program, base map[string]any) *evaluator {
	e := &evaluator{steps: map[string]any{}, base: base}
	for _, s := range prog.Plan.AllSteps() {
		if s.Label == "" {
			continue
		}
		e.steps[s.Label] = stateView(StatusPending, nil, "", 0, 0, zeroResult(prog.Node(s.Label)))
	}
	return e
}

func zeroResult(n *Node) any {
	if n == nil || n.Kind == nil {
		return nil
	}
	if rt := reflect.TypeOf(n.Kind.Result()); rt != nil {
		return reflect.New(indirect(rt)).Interface()
	}
	return nil
}

// env is the environment for one evaluation.
func (e *evaluator) env(_ string) map[string]any {
	e.mu.Lock()
	steps := e.steps
	e.mu.Unlock()
	env := maps.Clone(e.base)
	env["steps"] = steps
	return env
}

func (e *evaluator) set(label string, view map[string]any) {
	e.mu.Lock()
	next := maps.Clone(e.steps)
	next[label] = view
	e.steps = next
	e.mu.Unlock()
}

func (e *evaluator) get(label string) map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, _ := e.steps[label].(map[string]any)
	return v
}

// stateView is steps.<label>: the type's fields, then the common ones.
func stateView(status string, output any, errText string, visits int, durMS int64, fields any) map[string]any {
	m, _ := toValue(reflect.ValueOf(fields)).(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	m["status"] = status
	m["ok"] = status == StatusSucceeded
	m["failed"] = status == StatusFailed
	m["skipped"] = status == StatusSkipped
	m["output"] = output
	m["error"] = errText
	m["visits"] = visits
	m["duration_ms"] = int(durMS)
	return m
}

// encodeResult is the `result` object saved for a step: the type's fields
// and `output`.
func encodeResult(res Result) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if res.Fields != nil {
		b, err := json.Marshal(res.Fields)
		if err != nil {
			return nil, fmt.Errorf("encoding result: %w", err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("result fields must encode as a JSON object: %w", err)
		}
	}
	out, err := json.Marshal(res.Output)
	if err != nil {
		return nil, fmt.Errorf("encoding output: %w", err)
	}
	m["output"] = out
	return json.Marshal(m)
}

// decodeResult reads a saved `result` back into the type's struct.
func decodeResult(n *Node, raw json.RawMessage) (Result, error) {
	var res Result
	if len(raw) == 0 || string(raw) == "null" {
		return res, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return res, err
	}
	if o, ok := m["output"]; ok {
		if err := json.Unmarshal(o, &res.Output); err != nil {
			return res, err
		}
	}
	if f := zeroResult(n); f != nil {
		if err := json.Unmarshal(raw, f); err != nil {
			return res, fmt.Errorf("step %s: saved result does not fit type %s: %w", n.Label, n.Type, err)
		}
		res.Fields = f
	}
	return res, nil
}

// entryView is an entry as `entries(section)` gives it to expressions.
func entryView(e board.Entry) map[string]any {
	return map[string]any{
		"id": e.ID, "seq": int(e.Seq), "section": e.Section, "role": e.Role, "author": e.Author,
		"label": e.Label, "key": e.Key, "version": int(e.Version), "content": e.Content, "meta": e.Meta,
		"ts": e.TS.Format("2006-01-02T15:04:05.000Z07:00"),
	}
}
