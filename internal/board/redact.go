package board

import (
	"encoding/json"
	"reflect"
	"unsafe"
)

// Redact masks secrets in a text. The board imports nothing of runner's,
// so the masking is handed in (Options.Redact) and applied to everything
// that enters the board, before it is journaled or kept: entries, step
// records, recordings and the run. What is in memory is then what is on
// disk, and a replay sees the same values the run saved.
type Redact func(string) string

// SetRedact masks with r what enters the board from now on (a board
// made with New, such as one a Temporal worker keeps in memory).
func (b *Board) SetRedact(r Redact) {
	b.mu.Lock()
	b.redact = r
	b.mu.Unlock()
}

// RedactValue masks the strings in a JSON-like value (maps, slices,
// strings) with r: for a value that travels before it enters a board.
func RedactValue(v any, r Redact) any { return redactValue(v, r) }

// RedactJSON masks the strings of a JSON document with r.
func RedactJSON(raw []byte, r Redact) []byte { return redactRaw(raw, r) }

func (b *Board) redactEntry(e *Entry) {
	f := b.redact
	if f == nil {
		return
	}
	e.Section, e.Role, e.Author, e.Label, e.Key, e.Topic = f(e.Section), f(e.Role), f(e.Author), f(e.Label), f(e.Key), f(e.Topic)
	e.Content = redactValue(e.Content, f)
	if e.Meta != nil {
		e.Meta = redactValue(e.Meta, f).(map[string]any)
	}
}

func (b *Board) redactStep(s *StepRecord) {
	f := b.redact
	if f == nil {
		return
	}
	s.Error, s.Goto = f(s.Error), f(s.Goto)
	if heldSecret(s.held, f) {
		*s = s.whole() // masked as JSON below, as any other result
	}
	s.Result = redactRaw(s.Result, f)
	if inputsSecret(s.Inputs, f) {
		in := make(map[string]string, len(s.Inputs))
		for k, v := range s.Inputs {
			in[k] = f(v)
		}
		s.Inputs = in
	}
}

func (b *Board) redactRecording(r *Recording) {
	f := b.redact
	if f == nil {
		return
	}
	if heldSecret(r.held, f) {
		*r = r.whole()
	}
	r.Request, r.Response = redactRaw(r.Request, f), redactRaw(r.Response, f)
}

func (b *Board) redactRun(r *Run) {
	f := b.redact
	if f == nil {
		return
	}
	r.Error, r.PlanSource = f(r.Error), f(r.PlanSource)
	if r.Vars != nil {
		r.Vars = redactValue(r.Vars, f).(map[string]any)
	}
}

// redactRaw masks JSON text. The masker knows the JSON-escaped forms of
// its secrets, so masking the text keeps it valid; should a replacement
// ever cut across JSON syntax, the value is decoded and masked string by
// string instead.
func redactRaw(raw json.RawMessage, f Redact) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	// Masked in place of a copy (a 50 MiB answer was copied whole only
	// to find it held no secret): raw is not changed while f reads it,
	// and f's result is kept only as a copy.
	s := f(unsafe.String(&raw[0], len(raw)))
	if unsafe.StringData(s) == &raw[0] && len(s) == len(raw) {
		return raw
	}
	if s == string(raw) {
		return raw
	}
	if out := []byte(s); json.Valid(out) {
		return out
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return json.RawMessage(`"[masked: held a secret]"`)
	}
	out, err := json.Marshal(redactValue(v, f))
	if err != nil {
		return json.RawMessage(`"[masked: held a secret]"`)
	}
	return out
}

// redactValue masks every string in a value built of maps, slices and
// scalars. Other values (a step's struct, tool calls) are masked through
// their JSON form, and replaced by it only when it held a secret.
func redactValue(v any, f Redact) any {
	// What holds nothing to mask is handed back as v itself: the board
	// keeps what enters it, and x as an any again would be a copy of
	// its header on the heap for every step's content.
	switch x := v.(type) {
	case nil, bool, int, int64, float64:
		return v
	case string:
		if masked := f(x); masked != x {
			return masked
		}
		return v
	case map[string]any:
		// Copied only when something in it is masked: the board keeps
		// what enters it, and a copy of every step's meta doubled it.
		if !holdsSecret(v, f) {
			return v
		}
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[f(k)] = redactValue(val, f)
		}
		return out
	case []any:
		if !holdsSecret(v, f) {
			return v
		}
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = redactValue(val, f)
		}
		return out
	case json.RawMessage:
		if masked := redactRaw(x, f); len(masked) != len(x) || len(x) > 0 && &masked[0] != &x[0] {
			return masked
		}
		return v
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		if masked := f(rv.String()); masked != rv.String() {
			return masked
		}
		return v
	}
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	if masked := redactRaw(data, f); string(masked) != string(data) {
		return masked
	}
	return v
}

// maskLocked is s masked, for an error message.
func (b *Board) maskLocked(s string) string {
	if b.redact == nil {
		return s
	}
	return b.redact(s)
}

// heldSecret reports whether a text a record's maker held apart (Hold)
// holds something f masks; the masker reads it in place.
func heldSecret(h held, f Redact) bool {
	for _, s := range h {
		if m := f(s); len(m) != len(s) || unsafe.StringData(m) != unsafe.StringData(s) && m != s {
			return true
		}
	}
	return false
}

// holdsSecret reports whether f masks anything in a value built of maps,
// slices and scalars (other values: see redactValue).
func holdsSecret(v any, f Redact) bool {
	switch x := v.(type) {
	case nil, bool, int, int64, float64:
		return false
	case string:
		return masks(x, f)
	case map[string]any:
		for k, val := range x {
			if masks(k, f) || holdsSecret(val, f) {
				return true
			}
		}
		return false
	case []any:
		for _, val := range x {
			if holdsSecret(val, f) {
				return true
			}
		}
		return false
	}
	// Anything else: masked if its masked form is another value.
	masked := redactValue(v, f)
	return !reflect.DeepEqual(masked, v)
}

// masks reports whether f changes s.
func masks(s string, f Redact) bool {
	m := f(s)
	return len(m) != len(s) || unsafe.StringData(m) != unsafe.StringData(s) && m != s
}

// inputsSecret reports whether f masks any of a step's inputs.
func inputsSecret(in map[string]string, f Redact) bool {
	for _, v := range in {
		if masks(v, f) {
			return true
		}
	}
	return false
}
