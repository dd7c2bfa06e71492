package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/types"
	"github.com/planrunner/runner/internal/board"
)

// for_each: a step run once per item of a list, each item its own visit
// of a label of its own, LABEL[i] (a name no plan label can take), with
// the step as its parent. The interpreter runs the items as a group's
// children (group.go), so max_concurrency, fail_fast, resume, a replay's
// order and cancellations, and Temporal all treat them as they treat a
// group's children; the step's own record then holds the items' results
// in input order.

// KindItems is the recording of a for_each visit's item list (Response:
// the list as JSON): a resumed run goes on over the same list, and a
// replay whose list differs says so.
const KindItems = "items"

// EachResult is a for_each step's result: each item's state
// (steps.X.results[i], the item's steps view with index and item) in
// input order, and how many ended how. Its output is the items' outputs
// in input order (also steps.X.outputs).
type EachResult struct {
	Results []map[string]any `json:"results"`
	Counts  EachCounts       `json:"counts"`
}

// EachCounts counts a for_each step's items by how they ended.
type EachCounts struct {
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Canceled  int `json:"canceled"`
	Skipped   int `json:"skipped"`
}

// itemOf is what makes a node one item of a for_each step.
type itemOf struct {
	each  *Node // the for_each step
	index int
	value any
	view  map[string]any // the item's state once recorded
	// gather: the items' gathering, when the step asks for one (gather.go).
	gather *Gather
}

// ItemLabel is the label of item index of for_each step label.
func ItemLabel(label string, index int) string {
	return label + "[" + strconv.Itoa(index) + "]"
}

// SplitItemLabel reads LABEL[i]; ok is false for any other label.
func SplitItemLabel(s string) (label string, index int, ok bool) {
	if !strings.HasSuffix(s, "]") {
		return "", 0, false
	}
	open := strings.LastIndexByte(s, '[')
	if open <= 0 {
		return "", 0, false
	}
	i, err := strconv.Atoi(s[open+1 : len(s)-1])
	if err != nil || i < 0 || strconv.Itoa(i) != s[open+1:len(s)-1] {
		return "", 0, false
	}
	return s[:open], i, true
}

// BaseLabel is the plan's label of a step record's label: LABEL for an
// item LABEL[i], the label itself otherwise.
func BaseLabel(s string) string {
	if l, _, ok := SplitItemLabel(s); ok {
		return l
	}
	return s
}

// itemNode is item index (value v) of for_each step n.
func (n *Node) itemNode(index int, v any) *Node {
	s := n.Step.Copy()
	s.Label = ItemLabel(n.Label, index)
	s.Own().ForEach, s.If = nil, nil // the step's if was decided once, before the list
	// A failed item fails the step; the step's continue_on_error decides
	// whether the run goes on.
	s.ContinueOnError = false
	c := *n
	c.copyMore()
	c.Step, c.If, c.Each = s, nil, nil
	c.item = &itemOf{each: n, index: index, value: v}
	if n.isBlock() {
		// Each item runs the whole block: its steps labelled ITEM/LABEL
		// (eachgroup.go). max_concurrency and fail_fast were the items';
		// inside one item the group's steps all run at once, and a
		// failure fails the item (which fail_fast then passes on).
		c.Children = inItemAll(n.Children, s.Label)
		c.Seq = inItemAll(n.Seq, s.Label)
		s.Own().MaxConcurrency = 0
	}
	return &c
}

// ItemOf says whether n is an item of a for_each step, and which.
func (n *Node) ItemOf() (index int, value any, ok bool) {
	if n.item == nil {
		return 0, nil, false
	}
	return n.item.index, n.item.value, true
}

// WithItem is item node n (from Program.Node of LABEL[i]) with its value:
// what a worker elsewhere (Temporal's activity) runs.
func (n *Node) WithItem(v any) *Node {
	if n.item == nil {
		return n
	}
	return n.item.each.itemNode(n.item.index, v)
}

// eachScope is the scope of a for_each step's own fields: item and index.
func (p *Program) eachScope() *Scope {
	if p.itemScope == nil {
		p.itemScope = p.scope.with("item", types.Any.Nature()).with("index", types.Int.Nature())
	}
	return p.itemScope
}

// eachStateType is steps.<label> of a for_each step whose items have
// state type item.
func eachStateType(item types.Map) types.Map {
	it := types.Map{"index": types.Int, "item": types.Any}
	for k, v := range item {
		if k != "duration_ms" { // see eachResult
			it[k] = v
		}
	}
	m := types.Map{
		"results": types.Array(it),
		"outputs": types.Array(types.Any),
		"counts": types.Map{"total": types.Int, "succeeded": types.Int, "failed": types.Int,
			"canceled": types.Int, "skipped": types.Int},
	}
	for k, v := range commonStateTypes {
		m[k] = v
	}
	return m
}

// ItemsScript is what a replay's Script may add: the item list each
// for_each visit had when recorded.
type ItemsScript interface {
	Items(label string, visit int) (json.RawMessage, bool)
}

// items evaluates a for_each visit's list: from the board when the run
// is resumed and the visit had it already, else from its expression,
// checked against the recording in a replay; recorded either way.
func (r *Runner) items(n *Node, visit int, vc *visitClock) ([]any, error) {
	var raw json.RawMessage
	if r.done != nil { // resumed: the list the visit started with
		for _, rec := range r.Board.Recordings() {
			if rec.Kind == KindItems && rec.Label == n.Label && rec.Visit == visit {
				raw = rec.Response
			}
		}
	}
	if raw == nil {
		var v any
		err := r.evalOf(n).withRefs(n.Each.stepRefs(), nil, vc, func(env map[string]any) (err error) {
			v, err = n.Each.Eval(env)
			return err
		})
		if err != nil {
			return nil, err
		}
		if raw, err = listJSON(n.Each.Src, v); err != nil {
			return nil, err
		}
		if s, ok := r.Script.(ItemsScript); ok && r.Script != nil {
			if want, ok := s.Items(n.Label, visit); ok && !bytes.Equal(want, raw) {
				return nil, itemsDiffer(want, raw)
			}
		}
		if err := r.Board.AddRecording(board.Recording{Label: n.Label, Visit: visit, Kind: KindItems, Call: 1, Response: raw}); err != nil {
			return nil, err
		}
	}
	var list []any
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("the recorded item list: %w", err)
	}
	// Checked up front, from the list and the plan alone, so that every
	// engine, a resume and a replay stop at the same place: each item
	// counts once, with every step of a block or callee it runs (each
	// once; a loop's further visits count as they run).
	per := n.itemCost()
	r.mu.Lock()
	counted := int64(len(r.done[n.Label])) * per // items a resumed or continued visit recorded already
	r.mu.Unlock()
	if max := r.Prog.Plan.Limits.MaxSteps; r.total.Load()-counted+int64(len(list))*per > int64(max) {
		what := "each item is a step"
		if per > 1 {
			what = fmt.Sprintf("each item is %d steps: the item and the %d steps it runs, %d in all", per, per-1, int64(len(list))*per)
		}
		return nil, &RunError{Status: StatusFailed, Label: n.Label, Fatal: true, Err: fmt.Errorf(
			"for_each gives %d items, which would pass limits.max_steps %d (%s; raise the limit)", len(list), max, what)}
	}
	return list, nil
}

// itemCost is how many step visits one item of for_each step n makes at
// least: the item, and once each the steps of its block or callee.
func (n *Node) itemCost() int64 {
	c := int64(1)
	for _, ks := range [][]*Node{n.Children, n.Seq, n.subSteps()} {
		for _, k := range ks {
			if k.Each != nil {
				c++ // its own items are counted when its list is known
			} else {
				c += k.itemCost()
			}
		}
	}
	return c
}

// subSteps are a call's callee's top-level steps (nil for any other step).
func (n *Node) subSteps() []*Node {
	if n.Sub == nil {
		return nil
	}
	return n.Sub.Steps
}

// listJSON is the value of a for_each expression as a JSON list: items
// are what JSON can say, so both engines, a resume and a replay see the
// same values (numbers as float64).
func listJSON(src string, v any) (json.RawMessage, error) {
	rv := reflect.ValueOf(v)
	if v == nil || (rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array) || rv.Type().Elem().Kind() == reflect.Uint8 {
		return nil, fmt.Errorf("%s gave %s, want a list (an empty list runs no item)", src, kindOf(v))
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: an item cannot be saved as JSON: %w", src, err)
	}
	return raw, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, float64:
		return "a number"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("a %T", v)
}

// itemsDiffer says how a replayed item list differs from the recorded one.
func itemsDiffer(want, got json.RawMessage) error {
	var w, g []json.RawMessage
	_ = json.Unmarshal(want, &w)
	_ = json.Unmarshal(got, &g)
	for i := range min(len(w), len(g)) {
		if !bytes.Equal(w[i], g[i]) {
			return fmt.Errorf("the item list differs from the recording at item %d: recorded %.80s, now %.80s", i, w[i], g[i])
		}
	}
	return fmt.Errorf("the item list differs from the recording: recorded %d items, now %d", len(w), len(g))
}

// forEach runs a for_each visit: its items as a group's children, then
// its result from theirs.
func (it *interp[C]) forEach(c C, n *Node, visit int, vc *visitClock) (Result, error) {
	r := it.r
	list, err := r.items(n, visit, vc)
	if err != nil {
		if !fatal(err) {
			err = fmt.Errorf("for_each: %w", err)
		}
		return Result{}, childrenNotRun{err}
	}
	kids := make([]*Node, len(list))
	for i, v := range list {
		kids[i] = n.itemNode(i, v)
		if n.isBlock() {
			r.blockFrame(kids[i], v, true) // this visit's item, also in a frame a previous visit made
		}
	}
	_, endGather := r.gatherOf(c, n, visit, kids)
	defer endGather()
	return eachResult(kids, it.children(c, n, visit, kids))
}

// childrenNotRun is the error of a visit that failed before any of its
// children ran (a for_each whose list could not be made, or differs from
// the recording's): a recording cannot have ended after its children, so
// afterChildren must not replace it.
type childrenNotRun struct{ error }

func (e childrenNotRun) Unwrap() error { return e.error }

// eachResult is a for_each step's result from its items'.
func eachResult(kids []*Node, errs []error) (Result, error) {
	res := &EachResult{Results: make([]map[string]any, len(kids))}
	outputs := make([]any, len(kids))
	res.Counts.Total = len(kids)
	for i, k := range kids {
		v := k.item.view
		if v == nil { // never ran: the run stopped first
			v = withItem(stateView(StatusPending, nil, "", 0, 0, nil), k.item)
		}
		// Its time is in the item's own record; here it would make equal
		// runs (two engines, a replay) differ.
		v = maps.Clone(v)
		delete(v, "duration_ms")
		res.Results[i], outputs[i] = v, v["output"]
		switch v["status"] {
		case StatusSucceeded:
			res.Counts.Succeeded++
		case StatusFailed:
			res.Counts.Failed++
		case StatusCanceled, StatusInterrupted:
			res.Counts.Canceled++
		case StatusSkipped:
			res.Counts.Skipped++
		}
	}
	out := Result{Output: outputs, Fields: res}
	if err := continued(errs); err != nil {
		return out, err
	}
	var failed []error
	var wait error
	for _, err := range errs {
		switch {
		case isWaiting(err):
			wait = err
		case fatal(err):
			return out, err
		case err != nil && !errors.Is(err, errSiblingFailed):
			failed = append(failed, err)
		}
	}
	switch {
	case len(failed) == 0:
		return out, wait
	case len(failed) == 1 && len(kids) == 1:
		return out, failed[0]
	}
	return out, fmt.Errorf("%d of %d items failed; first: %w", len(failed), len(kids), failed[0])
}

// withItem adds the item's index and value to its state view.
func withItem(m map[string]any, it *itemOf) map[string]any {
	m["index"] = it.index
	m["item"] = it.value
	return m
}

// recordView is the state view of a saved record of n.
func (r *Runner) recordView(n *Node, rec board.StepRecord) map[string]any {
	res, err := decodeResult(n, rec.Result)
	if err != nil {
		res = Result{}
	}
	return r.viewOf(n, rec, res)
}

// viewOf is steps.<label> for a record of n with result res.
func (r *Runner) viewOf(n *Node, rec board.StepRecord, res Result) map[string]any {
	m := withTimedOut(stateView(rec.Status, res.Output, rec.Error, rec.Visit, rec.DurationMS, orZero(res.Fields, n)), res)
	if n.Each != nil {
		m["outputs"] = res.Output
	}
	if n.item != nil {
		withItem(m, n.item)
	}
	return m
}

// setView makes a finished visit's state visible: steps.<label>, built
// when an evaluation reads it, or, for an item, its place in its
// for_each step's results.
func (r *Runner) setView(n *Node, rec board.StepRecord, res Result) {
	if n.item != nil {
		n.item.view = r.viewOf(n, rec, res)
		return
	}
	r.evalOf(n).set(n.localLabel(), newStepState(n, rec, res))
}
