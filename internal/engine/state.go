package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"sync"

	"github.com/planrunner/runner/internal/bigjson"
	"github.com/planrunner/runner/internal/board"
)

// Step statuses, as expressions and blackboard.json see them.
const (
	StatusPending     = "pending"
	StatusSucceeded   = "succeeded"
	StatusFailed      = "failed"
	StatusSkipped     = "skipped"
	StatusInterrupted = "interrupted" // a run's status; a step's in files saved before `canceled`
	// StatusCanceled is a step stopped from outside, not failed by itself:
	// by a failed sibling's fail_fast (started or not) or by Ctrl-C.
	StatusCanceled = "canceled"
)

// evaluator holds what expressions see. The steps view is one map updated
// in place under a lock that every evaluation holds for reading, so neither
// an update nor an evaluation copies it: the cost of a step stays flat
// however many steps the plan has and however large the board grows.
type evaluator struct {
	mu sync.RWMutex
	// steps: label -> its view (map[string]any, each value replaced,
	// never mutated), or the *stepState of a finished step, whose view
	// an evaluation that names the step builds for itself: a map per
	// finished step, held to the run's end, was a tenth of a 100k-step
	// run's memory, and an expression names a handful of steps.
	steps map[string]any
	// slots hold the steps entries of the labels prog numbers
	// (Program.slotOf) by their number, rather than steps: a map of
	// 100k labels was 5 MB. Nil once whole (all are in steps then) and
	// in an evaluator layered over another.
	slots []any
	prog  *Program
	// whole: every finished step's view is built and kept in steps, once
	// an evaluation used `steps` as a whole (not naming its steps), so
	// such evaluations share one map rather than each building one.
	whole bool
	base  map[string]any // vars, env, run, board, entries
	// parent, when set, is the evaluator this one is layered over (a
	// for_each block's item, eachgroup.go): its base and steps show
	// through where this one has none of its own.
	parent *evaluator
	// saved are the steps a resumed run restored whose view is not built
	// yet (Runner.Restore): decoding every saved result and building its
	// view was a sixth of resuming a 100k-step run, and an expression
	// names a handful. A step's view is built when an evaluation that may
	// name it starts (need), under mu, and replaces its entry in steps.
	saved map[string]savedStep
	from  *board.Board // where the saved records are
}

// stepState is a finished visit's state, from which steps.<label> is
// built (view). One is held per finished step to the run's end, so it
// keeps what most steps have in 64 bytes (96 with every field inline):
// a status among the known ones as its index, an error, a timeout or a
// visit count beyond int32 apart.
type stepState struct {
	n      *Node
	output any
	fields any // the result's fields; nil: the type's zero values
	durMS  int64
	visit  int32
	status uint8 // in knownStatuses; 0: in rare
	rare   *stateRare
}

// stateRare is the part of a stepState few steps have.
type stateRare struct {
	status, errText string
	visit           int
	timedOut        bool
}

// knownStatuses are the statuses a stepState keeps as their index.
var knownStatuses = [...]string{"", StatusSucceeded, StatusFailed, StatusSkipped, StatusCanceled, StatusInterrupted, StatusPending}

func newStepState(n *Node, rec board.StepRecord, res Result) *stepState {
	s := &stepState{n: n, durMS: rec.DurationMS, output: res.Output, fields: res.Fields, visit: int32(rec.Visit)}
	for i, k := range knownStatuses[1:] {
		if rec.Status == k {
			s.status = uint8(i + 1)
		}
	}
	if s.status == 0 || rec.Error != "" || res.TimedOut || int(s.visit) != rec.Visit {
		s.rare = &stateRare{status: rec.Status, errText: rec.Error, visit: rec.Visit, timedOut: res.TimedOut}
	}
	return s
}

// parts are the state's status, error, visit and timeout as given.
func (s *stepState) parts() (status, errText string, visit int, timedOut bool) {
	if r := s.rare; r != nil {
		return r.status, r.errText, r.visit, r.timedOut
	}
	return knownStatuses[s.status], "", int(s.visit), false
}

// view is steps.<label> of the state (Runner.viewOf without an item).
func (s *stepState) view() map[string]any {
	status, errText, visit, timedOut := s.parts()
	m := stateView(status, s.output, errText, visit, s.durMS, orZero(s.fields, s.n))
	if timedOut {
		m["timed_out"] = true
	}
	if s.n.Each != nil {
		m["outputs"] = s.output
	}
	return m
}

// built is a steps entry as expressions see it.
func built(v any) any {
	if s, ok := v.(*stepState); ok {
		return s.view()
	}
	return v
}

// savedStep is a completed step's saved record whose view is built on
// first use: its node and its place among the board's records (read
// again then). A copy of what the view needs was 14 MB held to the end
// of a 100k-step run's resume.
type savedStep struct {
	n *Node
	i int
}

// deferView notes label's saved record, the i-th of b's, its view built
// on first use.
func (e *evaluator) deferView(label string, n *Node, b *board.Board, i int) {
	e.mu.Lock()
	if e.saved == nil {
		e.saved = map[string]savedStep{}
	}
	e.saved[label], e.from = savedStep{n: n, i: i}, b
	e.mu.Unlock()
}

// need builds the views of the saved steps refs may name (all of them
// for refs.all), here and in the evaluators under this one.
func (e *evaluator) need(refs stepRefs) error {
	for ; e != nil; e = e.parent {
		e.mu.RLock()
		n := len(e.saved)
		e.mu.RUnlock()
		if n == 0 {
			continue
		}
		if err := e.build(refs); err != nil {
			return err
		}
	}
	return nil
}

func (e *evaluator) build(refs stepRefs) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	one := func(label string) error {
		s, ok := e.saved[label]
		if !ok {
			return nil
		}
		rec := e.from.StepBrief(s.i)
		res, err := decodeResult(s.n, rec.Result)
		if err != nil {
			return err
		}
		e.put(label, withTimedOut(stateView(rec.Status, res.Output, rec.Error, rec.Visit, rec.DurationMS, orZero(res.Fields, s.n)), res))
		delete(e.saved, label)
		return nil
	}
	if refs.all {
		for label := range e.saved {
			if err := one(label); err != nil {
				return err
			}
		}
		return nil
	}
	for _, label := range refs.labels {
		if err := one(label); err != nil {
			return err
		}
	}
	return nil
}

// baseEnv is a copy of the names every evaluation sees.
func (e *evaluator) baseEnv() map[string]any {
	var env map[string]any
	if e.parent != nil {
		env = e.parent.baseEnv()
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if env == nil {
		return maps.Clone(e.base)
	}
	maps.Copy(env, e.base)
	return env
}

// stepsView is a copy of steps, the parents' overlaid by this one's: of
// the steps refs names, or of all of them (then built in every layer
// first: materialize).
func (e *evaluator) stepsView(refs stepRefs) map[string]any {
	// with has built every saved view (need) before it copies them.
	if !refs.all {
		m := make(map[string]any, len(refs.labels))
		for _, label := range refs.labels {
			if v, ok := e.lookup(label); ok {
				m[label] = v
			}
		}
		return m
	}
	var m map[string]any
	if e.parent != nil {
		m = e.parent.stepsView(refs)
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if m == nil {
		return maps.Clone(e.steps)
	}
	maps.Copy(m, e.steps)
	return m
}

// lookup is the view of label, this layer's or a parent's.
func (e *evaluator) lookup(label string) (any, bool) {
	for ; e != nil; e = e.parent {
		e.mu.RLock()
		v, ok := e.at(label)
		e.mu.RUnlock()
		if ok {
			return built(v), true
		}
	}
	return nil, false
}

// named is the steps map of an evaluation naming labels only: their
// views, under e.mu held for reading.
func (e *evaluator) named(labels []string) map[string]any {
	m := make(map[string]any, len(labels))
	for _, label := range labels {
		if v, ok := e.at(label); ok {
			m[label] = built(v)
		}
	}
	return m
}

// at is label's entry in this layer, under e.mu.
func (e *evaluator) at(label string) (any, bool) {
	if i := e.slotOf(label); i > 0 {
		v := e.slots[i]
		return v, v != nil
	}
	v, ok := e.steps[label]
	return v, ok
}

// put sets label's entry in this layer, under e.mu held for writing.
func (e *evaluator) put(label string, v any) {
	if i := e.slotOf(label); i > 0 {
		e.slots[i] = v
		return
	}
	e.steps[label] = v
}

func (e *evaluator) slotOf(label string) int {
	if e.slots == nil {
		return 0
	}
	return e.prog.slotOf(label)
}

// materialize builds and keeps every finished step's view, here and in
// the layers under this one, for an evaluation that uses `steps` whole.
func (e *evaluator) materialize() {
	for ; e != nil; e = e.parent {
		e.mu.RLock()
		done := e.whole
		e.mu.RUnlock()
		if done {
			continue
		}
		e.mu.Lock()
		for label, v := range e.steps {
			if s, ok := v.(*stepState); ok {
				e.steps[label] = s.view()
			}
		}
		if e.slots != nil {
			for label, n := range e.prog.nodes {
				if v := e.slots[n.Step.Ord]; v != nil {
					e.steps[label] = built(v)
				}
			}
			e.slots = nil
		}
		e.whole = true
		e.mu.Unlock()
	}
}

func newEvaluator(prog *Program, base map[string]any) *evaluator {
	e := &evaluator{steps: map[string]any{}, base: base, prog: prog}
	if prog.slots > 0 {
		e.slots = make([]any, prog.slots)
	}
	// A view is never changed once set (set replaces it), so the steps
	// not run yet share one pending view per result type: building one
	// map per step made starting, resuming and replaying a 100k-step plan
	// build 100k identical maps (6% of a resume).
	pending := map[reflect.Type]map[string]any{}
	for _, s := range prog.Plan.AllSteps() {
		if s.Label == "" {
			continue
		}
		z := zeroResult(prog.Node(s.Label))
		t := reflect.TypeOf(z)
		v, ok := pending[t]
		if !ok {
			v = stateView(StatusPending, nil, "", 0, 0, z)
			pending[t] = v
		}
		e.put(s.Label, v)
	}
	return e
}

func zeroResult(n *Node) any {
	if n != nil && n.Each != nil {
		return &EachResult{}
	}
	if n == nil || n.Kind == nil {
		return nil
	}
	if rt := reflect.TypeOf(n.Kind.Result()); rt != nil {
		return reflect.New(indirect(rt)).Interface()
	}
	return nil
}

// withRefs runs f with the environment for one evaluation that names at
// most the steps refs says (whose views it builds first); extra names
// (such as `step` for retry.until) are added to it.
func (e *evaluator) withRefs(refs stepRefs, extra map[string]any, vc *visitClock, f func(env map[string]any) error) error {
	if err := e.need(refs); err != nil {
		return err
	}
	if refs.all {
		e.materialize()
	}
	env := e.baseEnv()
	for k, v := range extra {
		env[k] = v
	}
	if vc != nil && vc.args != nil {
		env["args"] = vc.args
	}
	if vc != nil && vc.now != nil {
		env["now"], env["board"] = vc.now, vc.board
		env["files"], env["read_file"] = vc.files, vc.readFile
		if vc.item != nil {
			env["item"], env["index"] = vc.item.value, vc.item.index
		}
	}
	if e.parent != nil {
		// A copy: the layers' maps change under their own locks.
		env["steps"] = e.stepsView(refs)
		return f(env)
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if refs.all {
		env["steps"] = e.steps
	} else {
		env["steps"] = e.named(refs.labels)
	}
	return f(env)
}

func (e *evaluator) render(t *Template, vc *visitClock) (s string, err error) {
	err = e.withRefs(t.refs(), nil, vc, func(env map[string]any) error {
		s, err = t.render(env)
		return err
	})
	return s, err
}

func (e *evaluator) renderShell(t *Template, vc *visitClock) (c *ShellCommand, err error) {
	err = e.withRefs(t.refs(), nil, vc, func(env map[string]any) error {
		c, err = t.renderShell(env)
		return err
	})
	return c, err
}

func (e *evaluator) value(t *Template, vc *visitClock) (v any, err error) {
	err = e.withRefs(t.refs(), nil, vc, func(env map[string]any) error {
		v, err = t.Value(env)
		return err
	})
	return v, err
}

func (e *evaluator) bool(x *Expr, extra map[string]any, vc *visitClock) (ok bool, err error) {
	err = e.withRefs(x.stepRefs(), extra, vc, func(env map[string]any) error {
		ok, err = x.Bool(env)
		return err
	})
	return ok, err
}

func (e *evaluator) set(label string, view any) {
	e.mu.Lock()
	if s, ok := view.(*stepState); ok && e.whole {
		view = s.view()
	}
	e.put(label, view)
	delete(e.saved, label)
	e.mu.Unlock()
}

func (e *evaluator) get(label string) map[string]any {
	if e.need(stepRefs{labels: []string{label}}) != nil {
		return nil
	}
	e.mu.RLock()
	v0, _ := e.at(label)
	v, _ := built(v0).(map[string]any)
	e.mu.RUnlock()
	if v == nil && e.parent != nil {
		return e.parent.get(label)
	}
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
	if t, _ := m["timed_out"].(bool); !t {
		m["timed_out"] = false
	}
	return m
}

// withTimedOut marks a view whose step its timeout stopped.
func withTimedOut(m map[string]any, res Result) map[string]any {
	if res.TimedOut {
		m["timed_out"] = true
	}
	return m
}

// encodeResult is the `result` object saved for a step: the type's fields
// and `output`.
func encodeResult(res Result) (json.RawMessage, error) {
	// The output is encoded straight into the result's buffer, sized once
	// (bigjson): json.Marshal would allocate about four times a model's
	// answer of tens of megabytes, and the result would be copied again
	// behind the prefix.
	const timedOut = `,"timed_out":true`
	var fields []byte
	if res.Fields != nil {
		var err error
		if fields, err = json.Marshal(res.Fields); err != nil {
			return nil, fmt.Errorf("encoding result: %w", err)
		}
		if len(fields) < 2 || fields[0] != '{' {
			return nil, fmt.Errorf("result fields must encode as a JSON object, got %.40s", fields)
		}
	}
	// Room for exactly what follows the output: the board keeps the
	// result as it is, and room to spare would be a larger allocation
	// kept for every step of the run.
	addTimedOut := res.TimedOut && !bytes.Contains(fields, []byte(timedOut[1:]))
	reserve := 1 // "}"
	if len(fields) > 2 {
		reserve = len(fields) // "," and the fields after their "{"
	}
	if addTimedOut {
		reserve += len(timedOut)
	}
	buf, err := bigjson.Append([]byte(`{"output":`), res.Output, reserve)
	if err != nil {
		return nil, fmt.Errorf("encoding output: %w", err)
	}
	if addTimedOut {
		buf = append(buf, timedOut...)
	}
	if res.Fields == nil {
		return append(buf, '}'), nil
	}
	// Splice the fields in after "output" rather than decoding and
	// encoding again: this runs once per step.
	if len(fields) > 2 {
		buf = append(buf, ',')
	}
	return append(buf, fields[1:]...), nil
}

// encodeResultHeld is encodeResult with an output string that the board
// holds apart (board.Large) written as its key, held in h.
func encodeResultHeld(res Result, h *board.Held) (json.RawMessage, error) {
	if s, ok := res.Output.(string); ok && board.Large(s) {
		res.Output = h.Key(s)
	}
	return encodeResult(res)
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
	res.TimedOut = string(m["timed_out"]) == "true"
	if !hasFields(m) {
		// A step that failed before making its usual result (a dir that
		// does not exist, a diff_file that cannot be read) saved no fields:
		// left nil, the result encodes again as it was saved, so a replay
		// serving it matches, and expressions see the type's zero values.
		return res, nil
	}
	if f := zeroResult(n); f != nil {
		if err := json.Unmarshal(raw, f); err != nil {
			return res, fmt.Errorf("step %s: saved result does not fit type %s: %w", n.Label, n.Type, err)
		}
		res.Fields = f
	}
	return res, nil
}

// hasFields reports whether a saved result holds more than what
// encodeResult writes for a result without fields.
func hasFields(m map[string]json.RawMessage) bool {
	for k := range m {
		if k != "output" && k != "timed_out" {
			return true
		}
	}
	return false
}

// entryView is an entry as `entries(section)` gives it to expressions.
func entryView(e board.Entry) map[string]any {
	return map[string]any{
		"id": e.ID, "seq": int(e.Seq), "section": e.Section, "role": e.Role, "author": e.Author,
		"label": e.Label, "key": e.Key, "version": int(e.Version), "content": e.Content, "meta": e.Meta,
		"ts": e.TS.Format("2006-01-02T15:04:05.000Z07:00"), "topic": e.Topic,
	}
}

func entryViews(es []board.Entry) []any {
	out := make([]any, len(es))
	for i, e := range es {
		out[i] = entryView(e)
	}
	return out
}
