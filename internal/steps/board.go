package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"gopkg.in/yaml.v3"
)

func init() { add(boardType{}) }

// boardType reads, writes and deletes board keys.
type boardType struct{}

// BoardResult is what a board step reports.
type BoardResult struct {
	Key     string `json:"key"`
	Version int64  `json:"version"` // the key's version after the step (0: absent)
	Found   bool   `json:"found"`   // read: the key had a live value
}

type boardStep struct {
	op      string
	key     *engine.Template
	value   *valueTree
	ttl     time.Duration
	expect  int64 // -1: unconditional
	section string
	author  string // who the write is by (default runner): conflicts and key patterns are per author
	topic   string
	handoff bool             // write: take the key over knowingly, no conflict
	owner   *engine.Template // lock, unlock: who holds the lease (default the author)
	wait    time.Duration    // lock: how long to wait for another owner's lease
}

func (boardType) Name() string           { return "board" }
func (boardType) Result() any            { return BoardResult{} }
func (boardType) Spec() *engine.TypeSpec { return &boardSpec }

var boardSpec = engine.TypeSpec{
	Doc: "Reads, writes or deletes a key of the run's blackboard. A write is committed with the step's record, " +
		"so a resumed run never makes it twice; expect_version makes it a compare-and-set. " +
		"Its output is the value read or written.",
	Fields: []engine.Field{
		{Name: "op", Kind: engine.KindEnum, Required: true, Enum: []string{"write", "read", "delete", "lock", "unlock"},
			Doc: "write, read or delete a board key; lock takes (or renews) a lease on it for ttl, unlock releases it.", Examples: []any{"write"}},
		{Name: "key", Kind: engine.KindTemplate, Required: true,
			Doc: "The board key.", Examples: []any{"plan/status"}},
		{Name: "value", Kind: engine.KindOther, Schema: `{}`,
			Doc: "op: write: the value. A mapping or a list is stored as an object or a list; an unquoted scalar is " +
				"JSON when it is JSON (42, true, null), else text, as `runner board put` reads its text; a quoted one is text. " +
				"${{ }} works in any text, and a whole ${{ }} keeps its type.",
			Examples: []any{"${{ steps.review.output }}", map[string]any{"status": "done", "score": 3}}},
		{Name: "ttl", Kind: engine.KindDuration,
			Doc: "op: write: the key expires after this long; op: lock (required): the lease does, unless renewed.", Examples: []any{"10m"}},
		{Name: "owner", Kind: engine.KindTemplate,
			Doc:      "op: lock, unlock: who holds the lease (default the author). Another owner's lock is refused, or waits (wait), until the lease is released or expires.",
			Examples: []any{"deploy-${{ vars.env }}"}},
		{Name: "wait", Kind: engine.KindDuration,
			Doc: "op: lock: wait this long for another owner's lease to be released or expire (default: refuse at once).", Examples: []any{"30s"}},
		{Name: "expect_version", Kind: engine.KindInt, Schema: `{"minimum": 0}`,
			Doc:      "Compare-and-set: succeed only if the key is at this version (0: absent).",
			Examples: []any{3}},
		{Name: "handoff", Kind: engine.KindBool,
			Doc: "op: write: take the key over from its current author knowingly (a hand-off, as when an agent picks up a task): " +
				"no conflict is recorded; the entry's meta.handoff names whom the key was taken from.",
			Examples: []any{true}},
		{Name: "section", Kind: engine.KindString,
			Doc: "The board section the entry goes to (default kv).", Examples: []any{"kv"}},
		{Name: "author", Kind: engine.KindString,
			Doc: "Who the write is recorded as (default runner).", Examples: []any{"reviewer"}},
		{Name: "topic", Kind: engine.KindString,
			Doc:      "The topic the write is published on (default the key's prefix before ':').",
			Examples: []any{"plan"}},
	},
	// value and ttl go with op: write, which needs a value.
	Schema: `{"allOf": [{
		"if": {"properties": {"op": {"const": "write"}}, "required": ["op"]},
		"then": {"required": ["value"]},
		"else": {"properties": {"value": false, "handoff": false}}}, {
		"if": {"properties": {"op": {"const": "lock"}}, "required": ["op"]},
		"then": {"required": ["ttl"], "properties": {"expect_version": false}},
		"else": {"properties": {"wait": false}}}, {
		"if": {"properties": {"op": {"enum": ["lock", "write"]}}, "required": ["op"]},
		"else": {"properties": {"ttl": false}}}, {
		"if": {"properties": {"op": {"enum": ["lock", "unlock"]}}, "required": ["op"]},
		"then": {"properties": {"expect_version": false}},
		"else": {"properties": {"owner": false}}}]}`,
	Example: `- label: status
  type: board
  op: write
  key: plan/status
  value: ready
  ttl: 10m`,
	Results: []engine.ResultField{
		{Name: "key", Doc: "The key, rendered."},
		{Name: "version", Doc: "The key's version after the step (0: absent)."},
		{Name: "found", Doc: "read: the key had a live value."},
	},
}

func (boardType) Decode(d *engine.Decoder) engine.Step {
	s := &boardStep{expect: -1}
	s.op = d.Enum("op", "")
	if d.Required("op") && s.op == "" {
		return s
	}
	if d.Required("key") {
		s.key = d.KeyTemplate("key")
	}
	if n := d.Node("value"); n != nil {
		s.value = decodeValue(d, n, "value")
	}
	s.ttl = d.Duration("ttl")
	s.section = d.String("section")
	s.author = d.String("author")
	if s.author == "" {
		s.author = "runner"
	}
	s.topic = d.String("topic")
	s.handoff = d.Bool("handoff", false)
	if d.Has("owner") {
		s.owner = d.Template("owner")
	}
	s.wait = d.Duration("wait")
	if d.Has("expect_version") {
		v := d.Int("expect_version", -1)
		if v < 0 {
			d.Errorf(d.Node("expect_version"), "expect_version must be 0 (key must not exist) or more")
		}
		s.expect = int64(v)
	}
	switch s.op {
	case "write":
		if s.value == nil {
			d.Errorf(nil, "board write %q needs a value", d.Label())
		}
	case "lock", "unlock":
		if s.value != nil {
			d.Errorf(d.Node("value"), "value is only for op: write (a lease's value names its owner)")
		}
		if s.op == "lock" && s.ttl <= 0 {
			d.Errorf(d.Node("ttl"), "op: lock needs a ttl: a lease held by a run that died would never be released")
		}
		if s.op == "unlock" && s.ttl > 0 {
			d.Errorf(d.Node("ttl"), "ttl is for op: write and lock")
		}
		if s.op == "unlock" && s.wait > 0 {
			d.Errorf(d.Node("wait"), "wait is for op: lock")
		}
		if s.expect >= 0 {
			d.Errorf(d.Node("expect_version"), "a lease makes its own compare-and-set: leave out expect_version")
		}
		if s.handoff {
			d.Errorf(d.Node("handoff"), "handoff is only for op: write")
		}
	case "read", "delete":
		if s.value != nil {
			d.Errorf(d.Node("value"), "value is only for op: write")
		}
		if s.ttl > 0 {
			d.Errorf(d.Node("ttl"), "ttl is only for op: write")
		}
		if s.handoff {
			d.Errorf(d.Node("handoff"), "handoff is only for op: write")
		}
		if s.op == "read" && s.expect >= 0 {
			d.Errorf(d.Node("expect_version"), "expect_version is for write and delete")
		}
	}
	if s.owner != nil && s.op != "lock" && s.op != "unlock" {
		d.Errorf(d.Node("owner"), "owner is for op: lock and unlock")
	}
	if s.wait > 0 && s.op != "lock" {
		d.Errorf(d.Node("wait"), "wait is for op: lock")
	}
	return s
}

// Describe is what a dry run shows.
func (s *boardStep) Describe() string {
	if s.key == nil {
		return s.op
	}
	d := s.op + " " + s.key.Src
	if s.value != nil {
		d += " = " + s.value.src
	}
	return d
}

func (s *boardStep) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	key, err := sc.Eval(s.key)
	if err != nil {
		return engine.Result{}, fmt.Errorf("key: %w", err)
	}
	if key == "" {
		return engine.Result{}, errors.New("key is empty")
	}
	res := BoardResult{Key: key}
	if s.op == "lock" || s.op == "unlock" {
		return s.lease(ctx, sc, key)
	}
	op := board.WriteOp{Key: key, TTL: s.ttl, Section: s.section, Author: s.author, Label: sc.Label,
		Role: "step", Meta: engine.VisitMeta(sc.Visit), ExpectVersion: s.expect, Topic: s.topic, Handoff: s.handoff}
	switch s.op {
	case "read":
		kr, err := sc.Read(s.author, key)
		if err != nil {
			return engine.Result{Fields: res}, err
		}
		res.Found, res.Version = kr.Found, kr.Entry.Version
		return engine.Result{Output: kr.Entry.Content, Fields: res}, nil
	case "write":
		if op.Value, err = s.value.eval(sc); err != nil {
			return engine.Result{}, fmt.Errorf("value: %w", err)
		}
	case "delete":
		op.Delete = true
	}
	// The engine commits the write with the step's record (and checks the
	// compare-and-set there), so a resumed run never writes twice.
	if err := sc.Board.Allowed(s.author, "write", key); err != nil {
		return engine.Result{Fields: res}, err
	}
	// One read (recorded in a parallel group, where siblings race) for
	// the checks and the version the write will make.
	cur, err := sc.Read("", key)
	if err != nil {
		return engine.Result{Fields: res}, err
	}
	if s.expect >= 0 && cur.Entry.Version != s.expect {
		return engine.Result{Fields: res}, fmt.Errorf("board: key %q: expected version %d, found %d: %w", key, s.expect, cur.Entry.Version, board.ErrVersion)
	}
	if op.Delete {
		if !cur.Found {
			return engine.Result{Fields: res}, fmt.Errorf("board: key %q does not exist", key)
		}
	} else {
		res.Found = true
		res.Version = cur.Writes + 1
	}
	return engine.Result{Output: op.Value, Fields: res, Write: &op}, nil
}

// lease takes, renews or releases a lease. Whether another owner holds it
// is read here (waiting, if asked, for a release or an expiry) and decided
// again when the engine commits the step's record, under the board's
// lock: a sibling that took it meanwhile fails the step with ErrHeld.
func (s *boardStep) lease(ctx context.Context, sc *engine.StepContext, key string) (engine.Result, error) {
	res := BoardResult{Key: key}
	owner := s.author
	if s.owner != nil {
		o, err := sc.Eval(s.owner)
		if err != nil {
			return engine.Result{}, fmt.Errorf("owner: %w", err)
		}
		if o == "" {
			return engine.Result{}, errors.New("owner is empty")
		}
		owner = o
	}
	op := board.WriteOp{Key: key, TTL: s.ttl, Section: s.section, Author: s.author, Label: sc.Label, Role: "step",
		Meta: engine.VisitMeta(sc.Visit), Topic: s.topic, Lease: s.op, Owner: owner}
	if err := sc.Board.Allowed(s.author, "write", key); err != nil {
		return engine.Result{Fields: res}, err
	}
	deadline := sc.Now().Add(s.wait)
	for {
		changed := sc.Board.Changed()
		cur, err := sc.Read("", key)
		if err != nil {
			return engine.Result{Fields: res}, err
		}
		held, isLease := board.LeaseOwner(cur.Entry)
		switch {
		case !cur.Found && s.op == "unlock":
			return engine.Result{Fields: res}, fmt.Errorf("board: unlock %q: %s holds no lease on it: %w", key, owner, board.ErrAbsent)
		case !cur.Found || (isLease && held == owner):
			res.Found = s.op == "lock"
			if res.Found {
				res.Version = cur.Writes + 1
			}
			return engine.Result{Output: map[string]any{"owner": owner}, Fields: res, Write: &op}, nil
		}
		refusal := &board.HeldError{Key: key, Owner: held, Op: s.op, NotLease: !isLease}
		if !isLease {
			refusal.Owner = cur.Entry.Author
		} else if cur.Entry.TTL != nil {
			refusal.Until = cur.Entry.TS.Add(time.Duration(*cur.Entry.TTL * float64(time.Second)))
		}
		now := sc.Now()
		if s.op == "unlock" || !now.Before(deadline) {
			return engine.Result{Fields: res}, refusal
		}
		// Woken by a change on the board (a release), by the lease's
		// expiry, or by the end of the wait, whichever comes first.
		next := deadline
		if !refusal.Until.IsZero() && refusal.Until.Before(next) {
			next = refusal.Until
		}
		timer := time.NewTimer(max(next.Sub(now), time.Millisecond))
		select {
		case <-ctx.Done():
			timer.Stop()
			return engine.Result{Fields: res}, ctx.Err()
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// Caps: the step only reads and writes the board: a workflow runs it
// inline and a replay runs it again.
func (boardType) Caps() engine.Caps {
	return engine.Caps{Sched: engine.SchedPure, Replay: engine.ReplayRerun}
}

// valueTree is a board write's value as the plan wrote it: a literal, a
// template, or a mapping or list of them.
type valueTree struct {
	src  string // as a dry run shows it
	lit  any
	tmpl *engine.Template
	keys []string // a mapping's keys in plan order
	obj  map[string]*valueTree
	list []*valueTree
	kind yaml.Kind
}

// decodeValue reads a value by one rule (board.ParseValue for unquoted
// text, which `runner board put` follows too), so what a plan writes is
// typed when it loads: a mapping is an object, `42` a number, `"42"`
// text. A quoted scalar that holds a JSON object or list is refused: it
// would be stored as text, and board("key").field would fail only when
// the plan runs.
func decodeValue(d *engine.Decoder, n *yaml.Node, what string) *valueTree {
	n = plans.Resolve(n)
	v := &valueTree{kind: n.Kind}
	switch n.Kind {
	case yaml.MappingNode:
		v.obj = map[string]*valueTree{}
		var parts []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := plans.Resolve(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				d.Errorf(k, "%s: a key must be text, got %s", what, plans.KindName(k))
				continue
			}
			v.keys = append(v.keys, k.Value)
			v.obj[k.Value] = decodeValue(d, n.Content[i+1], what+"."+k.Value)
			parts = append(parts, k.Value+": "+v.obj[k.Value].src)
		}
		v.src = "{" + strings.Join(parts, ", ") + "}"
	case yaml.SequenceNode:
		var parts []string
		for i, c := range n.Content {
			e := decodeValue(d, c, fmt.Sprintf("%s[%d]", what, i))
			v.list = append(v.list, e)
			parts = append(parts, e.src)
		}
		v.src = "[" + strings.Join(parts, ", ") + "]"
	case yaml.ScalarNode:
		v.src = n.Value
		quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
		switch {
		case strings.Contains(n.Value, "${{"):
			v.tmpl = d.TemplateAt(n, what)
		case quoted:
			t := strings.TrimSpace(n.Value)
			if _, text := board.ParseValue(t).(string); !text && (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) {
				d.Errorf(n, "%s is a quoted string holding JSON: it would be stored as text, so board(key).field would fail when the plan runs. "+
					"Write it without quotes (or as a YAML mapping or list) to store the %s", what, map[bool]string{true: "object", false: "list"}[strings.HasPrefix(t, "{")])
			}
			v.lit = n.Value
		default:
			v.lit = board.ParseValue(n.Value)
		}
	default:
		d.Errorf(n, "%s: want a value, got %s", what, plans.KindName(n))
	}
	return v
}

// eval renders the templates of v and builds the value.
func (v *valueTree) eval(sc *engine.StepContext) (any, error) {
	switch {
	case v.tmpl != nil:
		return sc.EvalValue(v.tmpl)
	case v.kind == yaml.MappingNode:
		out := make(map[string]any, len(v.keys))
		for _, k := range v.keys {
			x, err := v.obj[k].eval(sc)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case v.kind == yaml.SequenceNode:
		out := make([]any, 0, len(v.list))
		for _, e := range v.list {
			x, err := e.eval(sc)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	}
	return v.lit, nil
}
