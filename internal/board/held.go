package board

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"unsafe"
	"weak"

	"github.com/planrunner/runner/internal/bigjson"
)

// A large string is held once in memory too. A model's answer of 50 MiB
// with newlines would be live three times for as long as the board
// lived: the entries' text, the step result's JSON and the recording's
// JSON, the two JSON copies each 1.4 times the text with its escapes.
// Now a step record's result and a recording's request and response are
// kept as the file keeps them: each string of BlobMin bytes or more
// replaced by its key ("sha256:<hex>"), its text held in the record's
// held map and shared, by key, with every entry and record that holds
// the same text (Board.texts). Steps, Recordings, LastStep and
// LastRecording hand out the JSON whole, as it was given, built from the
// text when asked for; the file and the journal write the keys and the
// text once in "blobs" without building the whole JSON at all.

// held maps the keys a record's raw JSON holds in place of its large
// strings to their texts.
type held map[string]string

// built keeps the JSON a record was last built into for as long as a
// reader holds it (a weak pointer: the collector frees it when none
// does), so readers that ask again meanwhile (a loop over Recordings per
// item) share it rather than building it each time. One per record,
// shared by the copies of it; slot 0 the result or request, 1 the
// response.
type built struct {
	mu sync.Mutex
	w  [2]weak.Pointer[byte]
	n  [2]int
}

func (c *built) get(i int, h held, raw json.RawMessage) json.RawMessage {
	if c == nil {
		return h.expand(raw)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.w[i].Value(); p != nil {
		return unsafe.Slice(p, c.n[i])
	}
	out := h.expand(raw)
	if len(out) > 0 && !same(out, raw) {
		c.w[i], c.n[i] = weak.Make(&out[0]), len(out)
	}
	return out
}

// textID names a string by where its bytes are: the same text handed in
// again (an entry's content that is also a step's output) is not hashed
// twice.
type textID struct {
	p *byte
	n int
}

func idOf(s string) textID { return textID{unsafe.StringData(s), len(s)} }

// texts is the board's table of the large strings it holds, by key, and
// the keys of the strings it has hashed, by where their bytes are.
type texts struct {
	byKey map[string]string
	keyOf map[textID]string
}

// key returns the key of s (hashed once per string) and the text the
// board already holds under it: s itself the first time.
func (t *texts) key(s string) (string, string) {
	if t.byKey == nil {
		t.byKey, t.keyOf = map[string]string{}, map[textID]string{}
	}
	id := idOf(s)
	k, ok := t.keyOf[id]
	if !ok {
		k = hashText(s)
		t.keyOf[id] = k
	}
	if have, ok := t.byKey[k]; ok {
		return k, have
	}
	t.byKey[k] = s
	return k, s
}

// keyOfText is s's key, hashed now unless the board hashed it already.
// It only reads the tables: Encode calls it under the read lock.
func (t *texts) keyOfText(s string) string {
	if k, ok := t.keyOf[idOf(s)]; ok {
		return k
	}
	return hashText(s)
}

// intern returns v with its large strings (at the top, or in maps and
// lists as decoded JSON and step outputs hold them) replaced by the text
// the board already holds under the same key, and that text registered:
// an entry holding the answer a recording holds shares its bytes.
//
// v is never changed: the caller may still hold it, and other steps may
// be reading it (a sibling's template rendering a step's output while
// the step's entry is written). A map or list with a string to replace
// is copied; one without is returned as it is.
func (t *texts) intern(v any, depth int) any {
	out, _ := t.internValue(v, depth)
	return out
}

// internValue is intern, also saying whether the result differs from v.
func (t *texts) internValue(v any, depth int) (any, bool) {
	if depth > 100 {
		return v, false
	}
	switch x := v.(type) {
	case string:
		if len(x) >= BlobMin {
			_, s := t.key(x)
			return s, idOf(s) != idOf(x)
		}
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			if s, ok := e.(string); ok && len(s) < BlobMin {
				continue
			}
			if n, changed := t.internValue(e, depth+1); changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = n
			}
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, e := range x {
			if s, ok := e.(string); ok && len(s) < BlobMin {
				continue
			}
			if n, changed := t.internValue(e, depth+1); changed {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = n
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}

// hold replaces the large string literals of raw by their keys, adding
// their texts to h (made when nil). A text the board holds already is
// shared, not decoded again. raw is returned as it is (and h unchanged)
// when it holds no large string, or when it also holds a string equal to
// one of the keys (the key would be taken for a reference when the JSON
// is built again).
func (t *texts) hold(raw json.RawMessage, h held) (json.RawMessage, held, error) {
	if len(raw) < BlobMin {
		return raw, h, nil
	}
	type lit struct {
		st, en int
		key    string
	}
	var lits []lit
	if err := longStrings(raw, func(st, en int, k string) { lits = append(lits, lit{st, en, k}) }); err != nil {
		return raw, h, err
	}
	if len(lits) == 0 {
		return raw, h, nil
	}
	for _, l := range lits {
		if bytes.Contains(raw, []byte(`"`+l.key+`"`)) {
			return raw, h, nil
		}
	}
	if t.byKey == nil {
		t.byKey, t.keyOf = map[string]string{}, map[textID]string{}
	}
	if h == nil {
		h = held{}
	}
	n := len(raw)
	for _, l := range lits {
		n += len(blobPrefix) + 66 - (l.en - l.st)
	}
	out := make([]byte, 0, n)
	pos := 0
	for _, l := range lits {
		s, ok := t.byKey[l.key]
		if !ok {
			// One allocation of the text's size (bigjson.Unquote).
			var err error
			if s, err = bigjson.Unquote(raw[l.st:l.en]); err != nil {
				return raw, h, err
			}
			t.byKey[l.key] = s
			t.keyOf[idOf(s)] = l.key
		}
		h[l.key] = s
		out = append(out, raw[pos:l.st]...)
		out = bigjson.AppendString(out, l.key)
		pos = l.en
	}
	return append(out, raw[pos:]...), h, nil
}

// expand returns raw with the keys h holds replaced by their texts as
// JSON strings, in one allocation of the final size.
func (h held) expand(raw json.RawMessage) json.RawMessage {
	if len(h) == 0 || len(raw) == 0 {
		return raw
	}
	type at struct {
		st, en int
		s      string
	}
	var ats []at
	n := len(raw)
	for from := 0; ; {
		st, en := nextString(raw, from)
		if st < 0 {
			break
		}
		from = en
		if en-st != len(blobPrefix)+66 {
			continue
		}
		s, ok := h[string(raw[st+1:en-1])]
		if !ok {
			continue
		}
		ats = append(ats, at{st, en, s})
		n += bigjson.StringLen(s) - (en - st)
	}
	if len(ats) == 0 {
		return raw
	}
	out := make([]byte, 0, n)
	pos := 0
	for _, a := range ats {
		out = append(out, raw[pos:a.st]...)
		out = bigjson.AppendString(out, a.s)
		pos = a.en
	}
	return append(out, raw[pos:]...)
}

// appendHeld appends raw, a record's JSON holding the keys of h: as it is,
// its texts added to x's table, or (x nil: the record written whole) built
// whole.
func appendHeld(b, raw []byte, h held, x *blobSink) []byte {
	if x == nil {
		return append(b, h.expand(raw)...)
	}
	for k, s := range h {
		n := bytes.Count(raw, []byte(`"`+k+`"`))
		if n == 0 {
			continue
		}
		x.add(blob{key: k, s: s})
		for range n - 1 {
			x.ref(k)
		}
	}
	return append(b, raw...)
}

// holdStep keeps s's result with its large strings held apart.
func (t *texts) holdStep(s *StepRecord) error {
	if s.held != nil {
		if t.adopt(s.held, s.Result) {
			return nil
		}
		*s = s.whole()
	}
	var err error
	s.Result, s.held, err = t.hold(s.Result, s.held)
	if s.held != nil {
		s.built = new(built)
	}
	return err
}

// holdRec keeps r's request and response with their large strings held
// apart; both or neither, so a key in one is never taken for a
// reference because the other held the same text.
func (t *texts) holdRec(r *Recording) error {
	if r.held != nil {
		if t.adopt(r.held, r.Request, r.Response) {
			return nil
		}
		*r = r.whole()
	}
	req, h, err := t.hold(r.Request, nil)
	if err != nil {
		return err
	}
	resp, h2, err := t.hold(r.Response, h)
	if err != nil {
		return err
	}
	if h2 == nil {
		return nil
	}
	for k := range h2 {
		// A key held for one that the other holds as a plain string.
		inReq, inResp := bytes.Contains(req, []byte(`"`+k+`"`)), bytes.Contains(resp, []byte(`"`+k+`"`))
		if inReq && same(req, r.Request) || inResp && same(resp, r.Response) {
			return nil
		}
	}
	r.Request, r.Response, r.held, r.built = req, resp, h2, new(built)
	return nil
}

// Whole is s with its result whole, as it was given: a record from
// StepsKeyed built for reading its large strings.
func (s StepRecord) Whole() StepRecord { return s.whole() }

// whole is s as it was given: its result built whole.
func (s StepRecord) whole() StepRecord {
	if s.packedInputs != "" {
		s.Inputs, s.packedInputs = s.inputs(), ""
	}
	if s.held != nil {
		s.Result = s.built.get(0, s.held, s.Result)
		s.held, s.built = nil, nil
	}
	return s
}

// Whole is r with its request and response whole, as it was given: a
// record from RecordingsKeyed built for reading its large strings.
func (r Recording) Whole() Recording { return r.whole() }

// whole is r as it was given: its request and response built whole.
func (r Recording) whole() Recording {
	if r.held != nil {
		r.Request = r.built.get(0, r.held, r.Request)
		r.Response = r.built.get(1, r.held, r.Response)
		r.held, r.built = nil, nil
	}
	return r
}

// same reports whether a and b are the same bytes (hold gave raw back
// as it was).
func same(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Held collects the large strings of a record's JSON while its maker
// builds it (the engine a step's result, the agents a model's answer):
// Key stands for the string in the JSON, so the whole JSON, 1.4 times an
// answer with newlines, is never built only to be held apart again.
type Held struct{ m held }

// Large reports whether s is held apart: its JSON string (quotes
// included) is BlobMin bytes or more, the file's rule for a literal.
func Large(s string) bool { return bigjson.StringLen(s) >= BlobMin }

// Key returns the key ("sha256:<hex>") to write in s's place and holds s.
func (h *Held) Key(s string) string {
	k := hashText(s)
	if h.m == nil {
		h.m = held{}
	}
	h.m[k] = s
	return k
}

// Hold says that s.Result holds the keys h made in place of their texts.
func (s *StepRecord) Hold(h *Held) {
	if h != nil && len(h.m) > 0 {
		s.held, s.built = h.m, new(built)
	}
}

// Hold says that r's request and response hold the keys h made in place
// of their texts.
func (r *Recording) Hold(h *Held) {
	if h != nil && len(h.m) > 0 {
		r.held, r.built = h.m, new(built)
	}
}

// Text is v's text when v is the key of a string the record holds apart
// (a record from StepsKeyed, or one an engine.Observer is handed), else v.
func (s StepRecord) Text(v string) string {
	if t, ok := s.held[v]; ok {
		return t
	}
	return v
}

// adopt takes a record its maker held (Hold): each key must stand once,
// where the maker wrote it (else the record is built whole and held
// again, the lookalike check included), and a text the board holds
// already is shared. ok is false when it was built whole.
func (t *texts) adopt(h held, raws ...json.RawMessage) bool {
	for k := range h {
		n := 0
		for _, raw := range raws {
			n += bytes.Count(raw, []byte(`"`+k+`"`))
		}
		if n != 1 {
			return false
		}
	}
	if t.byKey == nil {
		t.byKey, t.keyOf = map[string]string{}, map[textID]string{}
	}
	for k, s := range h {
		if have, ok := t.byKey[k]; ok {
			h[k] = have
			continue
		}
		t.byKey[k] = s
		t.keyOf[idOf(s)] = k
	}
	return true
}

// Text is v's text when v is the key of a string the recording holds
// apart (a record from RecordingsKeyed), else v.
func (r Recording) Text(v string) string {
	if t, ok := r.held[v]; ok {
		return t
	}
	return v
}

// HoldResponseOf makes r's response src's, byte for byte, with the texts
// src holds apart shared rather than built into it (a replay recording
// the answer it served).
func (r *Recording) HoldResponseOf(src Recording) {
	r.Response = src.Response
	var h held
	for k, s := range src.held {
		if bytes.Contains(src.Response, []byte(`"`+k+`"`)) {
			if h == nil {
				h = held{}
			}
			h[k] = s
		}
	}
	if h != nil {
		r.held, r.built = h, new(built)
	}
}
