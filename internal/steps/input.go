package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/schemacheck"
	"gopkg.in/yaml.v3"
)

func init() { add(inputType{}) }

// inputType asks a person. The run does not hold a process open while it
// waits: it saves, ends with status waiting (exit 4) and names the
// `runner answer` command; the answer is a recording on the board, so a
// replay takes it from there like a model's answer.
type inputType struct{}

// KindInput is the recording kind of an input's answer.
const KindInput = "input"

// InputResult is what an input step reports; its output is the answer.
type InputResult struct {
	Answer  map[string]any `json:"answer"`
	By      string         `json:"by"`      // who answered; "" when the default was taken
	Default bool           `json:"default"` // the input's timeout passed and it took its default
}

// InputAnswer is the response of an input recording.
type InputAnswer struct {
	Answer map[string]any `json:"answer"`
	By     string         `json:"by,omitempty"`
	// Asked is the text the person answered (nil in answers recorded
	// without it, or given before the step asked).
	Asked *board.Asked `json:"asked,omitempty"`
}

type inputStep struct {
	prompt  *engine.Template
	form    *Form
	formRaw json.RawMessage
	timeout time.Duration
	def     map[string]any // nil: a timeout fails the step
	// answerers, when set, are the only people who may answer.
	answerers []string
}

func (inputType) Name() string           { return "input" }
func (inputType) Result() any            { return InputResult{} }
func (inputType) Spec() *engine.TypeSpec { return &inputSpec }

var inputSpec = engine.TypeSpec{
	Doc: "Asks a person. The run does not hold a process open while it waits: it saves, ends with status " +
		"waiting (exit 4) and names the `runner answer` command that continues it. The answer, checked against " +
		"the form, is the step's output; a replay takes it from the run's recordings.",
	Fields: []engine.Field{
		{Name: "prompt", Kind: engine.KindTemplate, Required: true,
			Doc:      "What the person is asked (templated); the run waits (exit 4) until `runner answer`.",
			Examples: []any{"Apply this diff?\n${{ steps.generate.output }}"}},
		{Name: "form", Kind: engine.KindMapping, Required: true, Schema: formSchema,
			Doc:      "A flat JSON Schema: fields of type string, number, integer or boolean, with enum; required.",
			Examples: []any{map[string]any{"properties": map[string]any{"approve": map[string]any{"type": "boolean"}}, "required": []any{"approve"}}}},
		{Name: "default", Kind: engine.KindMapping,
			Doc:      "The answer taken when the step's timeout passes unanswered.",
			Examples: []any{map[string]any{"approve": false}}},
		{Name: "answerers", Kind: engine.KindList,
			Doc: "Who may answer (default: anyone who can reach the run): operating-system user names for `runner answer`, " +
				"names from serve's trusted proxy header or per-person tokens. Anyone else is refused and the input keeps waiting.",
			Examples: []any{[]any{"alice", "bob"}}},
	},
	Example: `- label: approve
  type: input
  prompt: Deploy the new version?
  form:
    properties:
      approve: {type: boolean, description: go ahead}
    required: [approve]
  timeout: 1h
  default: {approve: false}`,
	Results: []engine.ResultField{
		{Name: "answer", Doc: "The answer, a mapping of the form's fields."},
		{Name: "by", Doc: "Who answered; empty when the default was taken."},
		{Name: "default", Doc: "The input's timeout passed and it took its default."},
	},
}

// formSchema is the JSON Schema of a form, as strict as ParseForm.
const formSchema = `{"additionalProperties": false, "required": ["properties"], "properties": {
	"type": {"const": "object", "description": "Always object.", "examples": ["object"]},
	"title": {"type": "string", "description": "The form's title.", "examples": ["Review"]},
	"description": {"type": "string", "description": "What the form is for.", "examples": ["Approve the change"]},
	"required": {"type": "array", "items": {"type": "string"}, "description": "Fields an answer must have.", "examples": [["approve"]]},
	"properties": {"type": "object", "minProperties": 1, "description": "The fields, asked in this order.",
		"examples": [{"approve": {"type": "boolean"}}],
		"additionalProperties": {"type": "object", "additionalProperties": false, "required": ["type"], "properties": {
			"type": {"enum": ["string", "number", "integer", "boolean"], "description": "The field's type.", "examples": ["boolean"]},
			"enum": {"type": "array", "minItems": 1, "description": "The values allowed.", "examples": [["low", "high"]]},
			"description": {"type": "string", "description": "What the field means, shown when asking.", "examples": ["apply the diff"]},
			"title": {"type": "string", "description": "A short name for the field.", "examples": ["Approve"]}}}}}}`

func (inputType) Decode(d *engine.Decoder) engine.Step {
	s := &inputStep{timeout: d.Step.Timeout}
	if d.Required("prompt") {
		s.prompt = d.Template("prompt")
	}
	if d.Required("form") {
		n := d.Node("form")
		raw, err := nodeJSON(n)
		if err == nil {
			s.form, err = ParseForm(raw)
		}
		if err != nil {
			// Each mistake at its place in the form: properties.age.type.
			var list FormErrors
			if !errors.As(err, &list) {
				list = FormErrors{err}
			}
			for _, e := range list {
				at := n
				if fe, ok := e.(*FormError); ok {
					for _, seg := range fe.Path {
						if c := schemacheck.Child(at, seg); c != nil {
							at = c
						}
					}
				}
				d.Errorf(at, "%v", e)
			}
			return s
		}
		s.formRaw = raw
	}
	if n := d.Node("answerers"); n != nil {
		s.answerers = plans.StringList(d.Reporter(), n, "answerers")
	}
	if n := d.Node("default"); n != nil {
		raw, err := nodeJSON(n)
		var def map[string]any
		if err == nil {
			err = json.Unmarshal(raw, &def)
		}
		if err != nil || def == nil {
			d.Errorf(n, "default must be an answer: a mapping of the form's fields")
			return s
		}
		if s.form != nil {
			if s.def, err = s.form.Check(def); err != nil {
				d.Errorf(n, "default: %v", err)
			}
		}
		if s.timeout <= 0 {
			d.Errorf(n, "default is taken when the input's timeout passes: give the step a timeout")
		}
	}
	return s
}

func (s *inputStep) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	if a, ok := FindAnswer(sc.Board.Recordings(), sc.Label, sc.Visit); ok {
		ans, err := s.form.Check(a.Answer)
		if err != nil {
			return engine.Result{}, fmt.Errorf("the recorded answer does not fit the form: %v", err)
		}
		if err := s.done(sc); err != nil {
			return engine.Result{}, err
		}
		return engine.Result{Output: ans, Fields: InputResult{Answer: ans, By: a.By}}, nil
	}
	prompt, err := sc.Eval(s.prompt)
	if err != nil {
		return engine.Result{}, err
	}
	now := sc.Now()
	w, found := waitingFor(sc.Board.Run(), sc.Label, sc.Visit)
	if found && w.Deadline != nil && !now.Before(*w.Deadline) {
		if s.def == nil {
			return engine.Result{TimedOut: true}, fmt.Errorf("no answer within its timeout of %s (the input has no default)", s.timeout)
		}
		if err := s.done(sc); err != nil {
			return engine.Result{}, err
		}
		return engine.Result{Output: s.def, TimedOut: true, Fields: InputResult{Answer: s.def, Default: true}}, nil
	}
	if !found {
		w = board.WaitingInput{Label: sc.Label, Visit: sc.Visit, Prompt: prompt, Form: s.formRaw, Since: now, Answerers: s.answerers}
		if s.timeout > 0 {
			d := now.Add(s.timeout)
			w.Deadline = &d
		}
		err := sc.Board.UpdateRun(func(r *board.Run) {
			r.Waiting = append(append([]board.WaitingInput(nil), r.Waiting...), w)
		})
		if err != nil {
			return engine.Result{}, err
		}
	}
	return engine.Result{}, engine.ErrWaiting
}

// done takes the visit off the run's waiting list.
func (s *inputStep) done(sc *engine.StepContext) error {
	if _, ok := waitingFor(sc.Board.Run(), sc.Label, sc.Visit); !ok {
		return nil
	}
	return sc.Board.UpdateRun(func(r *board.Run) {
		var keep []board.WaitingInput
		for _, w := range r.Waiting {
			if w.Label != sc.Label || w.Visit != sc.Visit {
				keep = append(keep, w)
			}
		}
		r.Waiting = keep
	})
}

// FindAnswer returns the answer recorded for an input step visit.
func FindAnswer(recs []board.Recording, label string, visit int) (InputAnswer, bool) {
	for _, r := range recs {
		if r.Kind == KindInput && r.Label == label && r.Visit == visit {
			var a InputAnswer
			if json.Unmarshal(r.Response, &a) == nil && a.Answer != nil {
				return a, true
			}
		}
	}
	return InputAnswer{}, false
}

func waitingFor(run board.Run, label string, visit int) (board.WaitingInput, bool) {
	for _, w := range run.Waiting {
		if w.Label == label && w.Visit == visit {
			return w, true
		}
	}
	return board.WaitingInput{}, false
}

// nodeJSON turns a YAML value into JSON, keeping the order of mapping
// keys (a form's fields are asked in the order they are written).
func nodeJSON(n *yaml.Node) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := writeNodeJSON(&buf, plans.Resolve(n)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeNodeJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			buf.Write(k)
			buf.WriteByte(':')
			if err := writeNodeJSON(buf, plans.Resolve(n.Content[i+1])); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeNodeJSON(buf, plans.Resolve(c)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		b, err := json.Marshal(schemacheck.JSONValue(v))
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	return nil
}

// Describe is what a dry run shows: the run would stop here and wait.
func (s *inputStep) Describe() string {
	if s.form == nil {
		return ""
	}
	d := "asks a person (the run waits: exit 4, then runner answer) for: " + s.form.names()
	if s.timeout > 0 {
		d += fmt.Sprintf("; after %s ", s.timeout)
		if s.def != nil {
			d += "takes its default"
		} else {
			d += "fails"
		}
	}
	return d
}

// Caps: the step waits for a person's answer: a workflow waits for it
// durably, and a replay takes the answer from the recording.
func (inputType) Caps() engine.Caps {
	return engine.Caps{Sched: engine.SchedWaits, Replay: engine.ReplayRecorded, Shows: engine.ShowsAsk}
}

// askedBefore reports whether the step visit has asked a person a
// question of the kind is tells (an approval, an elicitation): one waits,
// or was answered.
func askedBefore(sc *engine.StepContext, is func(label, input string) bool) bool {
	for _, w := range sc.Board.Run().Waiting {
		if w.Visit == sc.Visit && is(sc.Label, w.Label) {
			return true
		}
	}
	for _, r := range sc.Board.Recordings() {
		if r.Kind == KindInput && r.Visit == sc.Visit && is(sc.Label, r.Label) {
			return true
		}
	}
	return false
}

// clearAsked takes the visit's answered questions of the kinds given off
// the run's waiting list once the visit is done.
func clearAsked(sc *engine.StepContext, kinds ...func(label, input string) bool) error {
	mine := func(w board.WaitingInput) bool {
		if w.Visit != sc.Visit {
			return false
		}
		for _, is := range kinds {
			if is(sc.Label, w.Label) {
				return true
			}
		}
		return false
	}
	if !slices.ContainsFunc(sc.Board.Run().Waiting, mine) {
		return nil
	}
	return sc.Board.UpdateRun(func(r *board.Run) {
		r.Waiting = slices.DeleteFunc(slices.Clone(r.Waiting), mine)
		if len(r.Waiting) == 0 {
			r.Waiting = nil // as a run that never waited
		}
	})
}
