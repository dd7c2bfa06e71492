// Package mask hides secret values (API keys, tokens a plan names) in
// everything runner writes: the way GitHub Actions masks secrets in logs.
//
// A Masker knows the secrets of a run and replaces each one, and its
// common encodings (JSON-escaped, URL-escaped, base64 at any alignment),
// with "***". It is safe for concurrent use; a nil *Masker masks nothing.
package mask

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// Replacement is what a secret is replaced with.
const Replacement = "***"

// MinLen is the shortest value masked: masking "1" or "yes" would garble
// every text and hide nothing worth hiding.
const MinLen = 4

// Masker replaces known secret values.
type Masker struct {
	mu       sync.RWMutex
	values   map[string]bool // secrets as given
	patterns []string        // every form searched for, longest first
	r        *strings.Replacer
	idx      *index
}

// index finds the patterns in one pass over a text: a bitmap of their
// first two bytes, checked at every position, and the patterns under each
// pair. Text without a secret (nearly all of it) costs one table lookup a
// byte, whatever the number of patterns.
type index struct {
	pairs  [1 << 16 / 64]uint64
	byPair map[uint16][]string
}

func newIndex(patterns []string) *index {
	x := &index{byPair: map[uint16][]string{}}
	for _, p := range patterns {
		k := uint16(p[0])<<8 | uint16(p[1])
		x.pairs[k/64] |= 1 << (k % 64)
		x.byPair[k] = append(x.byPair[k], p)
	}
	return x
}

// in reports whether s holds one of the patterns.
func (x *index) in(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		k := uint16(s[i])<<8 | uint16(s[i+1])
		if x.pairs[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		for _, p := range x.byPair[k] {
			if strings.HasPrefix(s[i:], p) {
				return true
			}
		}
	}
	return false
}

// New returns a Masker for values (those shorter than MinLen are ignored).
func New(values ...string) *Masker {
	m := &Masker{values: map[string]bool{}}
	m.Add(values...)
	return m
}

// Add makes more values secret.
func (m *Masker) Add(values ...string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < MinLen || m.values[v] {
			continue
		}
		m.values[v] = true
		changed = true
	}
	if !changed {
		return
	}
	set := map[string]bool{}
	for v := range m.values {
		for _, p := range forms(v) {
			if len(p) >= MinLen {
				set[p] = true
			}
		}
	}
	m.patterns = m.patterns[:0]
	for p := range set {
		m.patterns = append(m.patterns, p)
	}
	// Longest first: where two forms match at one place, the longer one
	// (a JSON-escaped form holding the raw one, say) is replaced whole.
	sort.Slice(m.patterns, func(i, j int) bool {
		if len(m.patterns[i]) != len(m.patterns[j]) {
			return len(m.patterns[i]) > len(m.patterns[j])
		}
		return m.patterns[i] < m.patterns[j]
	})
	args := make([]string, 0, 2*len(m.patterns))
	for _, p := range m.patterns {
		args = append(args, p, Replacement)
	}
	m.r = strings.NewReplacer(args...)
	m.idx = newIndex(m.patterns)
}

// Empty reports whether there is nothing to mask.
func (m *Masker) Empty() bool {
	if m == nil {
		return true
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.r == nil
}

// String returns s with every secret replaced.
func (m *Masker) String(s string) string {
	if m == nil || len(s) < MinLen {
		return s
	}
	m.mu.RLock()
	r, idx := m.r, m.idx
	m.mu.RUnlock()
	if r == nil || !idx.in(s) {
		return s
	}
	return r.Replace(s)
}

// Bytes returns b with every secret replaced; b itself when it holds none.
func (m *Masker) Bytes(b []byte) []byte {
	if m == nil || len(b) < MinLen {
		return b
	}
	m.mu.RLock()
	r, idx := m.r, m.idx
	m.mu.RUnlock()
	if r == nil || !idx.in(string(b)) {
		return b
	}
	return []byte(r.Replace(string(b)))
}

// Contains reports whether s holds a secret in any form.
func (m *Masker) Contains(s string) bool {
	if m == nil {
		return false
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.idx != nil && m.idx.in(s)
}

// forms are the ways a secret shows up in text: as is, each line of a
// multi-line secret, JSON-escaped (how logs and blackboard.json hold it),
// URL-escaped, and base64 in every alignment (a key inside a longer
// encoded string, like HTTP Basic credentials "user:key").
func forms(v string) []string {
	out := []string{v}
	if strings.Contains(v, "\n") {
		for _, line := range strings.Split(v, "\n") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	for _, s := range append([]string(nil), out...) {
		out = append(out, jsonForms(s)...)
		out = append(out, url.QueryEscape(s), url.PathEscape(s))
	}
	out = append(out, base64Forms(v)...)
	return out
}

func jsonForms(s string) []string {
	var out []string
	if b, err := json.Marshal(s); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) == nil {
		b := bytes.TrimSpace(buf.Bytes())
		out = append(out, string(b[1:len(b)-1]))
	}
	// A JSON string inside a JSON string (a tool call's arguments, a
	// request body in an error message) escapes it twice.
	if len(out) > 0 {
		if b, err := json.Marshal(out[0]); err == nil {
			out = append(out, string(b[1:len(b)-1]))
		}
	}
	return out
}

// base64Forms are the characters of v's base64 encoding that do not
// depend on the bytes around it, for each of the three alignments v can
// have inside a longer encoded text; standard and URL alphabets.
func base64Forms(v string) []string {
	var out []string
	for shift := 0; shift < 3; shift++ {
		enc := base64.StdEncoding.EncodeToString(append(make([]byte, shift), v...))
		total := 8 * (shift + len(v)) // bits
		first := (8*shift + 5) / 6    // first char made of v's bits only
		last := total/6 - 1           // last char wholly inside v's bits
		if last < first+MinLen {
			continue
		}
		s := enc[first : last+1]
		out = append(out, s, strings.NewReplacer("+", "-", "/", "_").Replace(s))
	}
	return out
}

// Writer returns a writer that masks what it passes on to w. Each Write
// is masked on its own: zerolog writes one event per call, the progress
// display one line.
func (m *Masker) Writer(w io.Writer) io.Writer {
	if m == nil {
		return w
	}
	return &writer{m: m, w: w}
}

type writer struct {
	m *Masker
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.m.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Fd lets terminal detection see through the mask.
func (w *writer) Fd() uintptr {
	if f, ok := w.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}
