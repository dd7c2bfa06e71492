package board

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/planrunner/runner/internal/bigjson"
)

// A value stored once, slices too. An llm step's output is its
// answer trimmed (strings.TrimSpace in internal/steps/llm.go): in memory a
// substring sharing the answer's bytes, but a different string, with its
// own key. The table held it as a second value (70 MB of JSON beside the
// answer's 70 MB for a 50 MiB answer with newlines), and loading decoded
// both texts. Now a value of the table whose text lies within the bytes of
// a longer one the file (or, for a journal line, the file and earlier
// lines) holds is written as a slice of it:
//
//	"sha256:<its hex>": {"slice_of": "sha256:<hex>", "start": S, "end": E}
//
// S and E byte offsets into the other's text (UTF-8), E exclusive. Its
// key is still the SHA-256 of its own text, so the records that hold it
// are unchanged (their blob_refs and the lookalike rule as before), and a
// reader checks the slice hashes to its key. Loaded, its text is a
// substring of the other's: one copy in memory.

// sliceRef is a slice value as written: of which value, which bytes.
type sliceRef struct {
	Of    string `json:"slice_of"`
	Start *int64 `json:"start"`
	End   *int64 `json:"end"`
}

// textSpan is a slice resolved to a value stored as text (its root).
type textSpan struct {
	root       string
	start, end int
}

// parseSlice reads a slice value: an object with exactly slice_of, start
// and end, 0 <= start <= end.
func parseSlice(lit []byte) (sliceRef, error) {
	var r sliceRef
	d := json.NewDecoder(bytes.NewReader(lit))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return r, fmt.Errorf("not a JSON string nor a slice {\"slice_of\", \"start\", \"end\"}: %w", err)
	}
	if d.More() {
		return r, errors.New("a slice followed by more JSON")
	}
	switch {
	case r.Start == nil || r.End == nil || r.Of == "":
		return r, errors.New(`a slice needs "slice_of", "start" and "end"`)
	case !isBlobRef(r.Of):
		return r, fmt.Errorf("slice_of %.80q is not sha256:<64 hex digits>", r.Of)
	case *r.Start < 0 || *r.End < *r.Start:
		return r, fmt.Errorf("slice [%d:%d]: want 0 <= start <= end", *r.Start, *r.End)
	}
	return r, nil
}

// link checks the slices put since the last call: each of a value the
// table holds (a slice of a slice is followed to the text), in range, and
// hashing to its key.
func (t *blobTable) link() error {
	if len(t.pend) == 0 {
		return nil
	}
	keys := make([]string, 0, len(t.pend))
	for k := range t.pend {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same error for the same file
	for _, k := range keys {
		sp, err := t.resolve(k)
		if err != nil {
			return fmt.Errorf("blobs: %s: %w", k, err)
		}
		n, got := hashWindow(t.lit[sp.root], sp.start, sp.end)
		if n < sp.end {
			return fmt.Errorf("blobs: %s: a slice [%d:%d] of %s, whose text is %d bytes (the file is damaged)", k, sp.start, sp.end, sp.root, n)
		}
		if got != k {
			return fmt.Errorf("blobs: %s: its text (a slice of %s) hashes to %s (the file is damaged)", k, sp.root, got)
		}
		t.slice[k] = sp
	}
	for _, k := range keys {
		t.ref[k] = t.pend[k]
		delete(t.pend, k)
	}
	return nil
}

// resolve follows k's slice to the value stored as text.
func (t *blobTable) resolve(k string) (textSpan, error) {
	r := t.pend[k]
	start, end := *r.Start, *r.End
	for steps := 0; ; steps++ {
		if steps > len(t.pend)+len(t.slice) {
			return textSpan{}, errors.New("its slices form a cycle (the file is damaged)")
		}
		if sp, ok := t.slice[r.Of]; ok { // a slice checked already
			if end > int64(sp.end-sp.start) {
				return textSpan{}, fmt.Errorf("a slice [%d:%d] of %s, which is %d bytes (the file is damaged)", start, end, r.Of, sp.end-sp.start)
			}
			return textSpan{sp.root, sp.start + int(start), sp.start + int(end)}, nil
		}
		base, ok := t.pend[r.Of]
		if !ok {
			if t.lit[r.Of] == nil {
				return textSpan{}, fmt.Errorf("a slice of %s, which is not in the file's blobs", r.Of)
			}
			if end > int64(len(t.lit[r.Of])) { // the text is never longer than its literal
				return textSpan{}, fmt.Errorf("a slice [%d:%d] of %s, whose text is shorter (the file is damaged)", start, end, r.Of)
			}
			return textSpan{r.Of, int(start), int(end)}, nil
		}
		if end > *base.End-*base.Start {
			return textSpan{}, fmt.Errorf("a slice [%d:%d] of %s, which is %d bytes (the file is damaged)", start, end, r.Of, *base.End-*base.Start)
		}
		start, end = start+*base.Start, end+*base.Start
		r = base
	}
}

// window hashes the bytes [start, end) of what is written to it.
type window struct {
	h               hash.Hash
	pos, start, end int
}

func (w *window) Write(p []byte) (int, error) {
	lo, hi := max(w.start-w.pos, 0), min(w.end-w.pos, len(p))
	if lo < hi {
		w.h.Write(p[lo:hi])
	}
	w.pos += len(p)
	return len(p), nil
}

// hashWindow decodes a string literal (checked by put) piece by piece,
// returning its text's length and the key of its bytes [start, end).
func hashWindow(lit []byte, start, end int) (int, string) {
	w := &window{h: sha256.New(), start: start, end: end}
	bigjson.UnquoteTo(w, lit)
	return w.pos, blobKey(w.h)
}

// keepIn adds the value k to the table x writes as it was read, and the
// values its slice refers to. A value stored as text whose text was
// decoded is kept with it: a text of the board within it (a loaded step's
// output, a slice of this answer) is then written as a slice of it.
func (t *blobTable) keepIn(x *blobSink, k string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for range len(t.ref) + 1 { // linked: no cycle
		x.keep(k, t.lit[k], t.str[k])
		r, ok := t.ref[k]
		if !ok {
			return
		}
		k = r.Of
	}
}

// slices marks each value of the table, held as text, whose bytes lie
// within a longer text of the table or of known (texts a reader finds
// elsewhere, by key) as a slice of the longest such text; then each left
// whose content is a prefix, a suffix or the start after white space of
// a longer one as a slice of that one.
func (s *blobSink) slices(known map[string]string) {
	type at struct {
		p   uintptr
		n   int
		key string
		i   int // in the table; -1: known
		s   string
	}
	var ats []at
	for i := range s.table {
		if b := &s.table[i]; b.s != "" && (b.lit == nil || b.lit[0] == '"') {
			ats = append(ats, at{uintptr(unsafe.Pointer(unsafe.StringData(b.s))), len(b.s), b.key, i, b.s})
		}
	}
	if len(ats) == 0 {
		return
	}
	for k, v := range known {
		if v != "" {
			ats = append(ats, at{uintptr(unsafe.Pointer(unsafe.StringData(v))), len(v), k, -1, v})
		}
	}
	// By start, the longest first: a text is then within the one seen
	// before it that reaches furthest, if in any, and that one is in none.
	slices.SortFunc(ats, func(a, b at) int {
		return cmp.Or(cmp.Compare(a.p, b.p), cmp.Compare(b.n, a.n))
	})
	// A slice reads back as the bytes it names only when both texts are
	// UTF-8 (a byte that is not reads back as U+FFFD, see hashText).
	valid := map[string]bool{}
	utf := func(key, s string) bool {
		v, ok := valid[key]
		if !ok {
			v = utf8.ValidString(s)
			valid[key] = v
		}
		return v
	}
	root := ats[0]
	for _, a := range ats[1:] {
		if a.p+uintptr(a.n) > root.p+uintptr(root.n) {
			root = a
			continue
		}
		if a.i >= 0 && a.key != root.key && utf(root.key, root.s) && utf(a.key, a.s) {
			b := &s.table[a.i]
			b.of, b.start = root.key, int(a.p-root.p)
			b.end = b.start + a.n
		}
	}
	// A text made by copying part of another (trimmed and a newline
	// added, say: an llm step's edits) is found by its content, where a
	// copy of a prefix or a suffix is, or of what follows leading white
	// space. The texts are indexed by their first and last bytes, so a
	// value is compared only with the few that begin or end as it does,
	// and a comparison stops at the first differing byte: little cost
	// unless it finds a copy, and none growing with the square of the
	// table. A value it marks is shorter than the one it refers to, so
	// marks never form a cycle.
	const edge, perEdge = 64, 8
	head, tail := map[string][]int{}, map[string][]int{}
	add := func(m map[string][]int, k string, i int) {
		if len(m[k]) < perEdge {
			m[k] = append(m[k], i)
		}
	}
	for i, a := range ats {
		add(head, a.s[:min(edge, a.n)], i)
		add(tail, a.s[a.n-min(edge, a.n):], i)
		if lead := len(a.s) - len(strings.TrimLeftFunc(a.s, unicode.IsSpace)); lead > 0 && lead < a.n {
			add(head, a.s[lead:lead+min(edge, a.n-lead)], i)
		}
	}
	for _, a := range ats {
		b := s.tableAt(a.i)
		if b == nil || b.of != "" {
			continue
		}
		e := min(edge, a.n)
	find:
		for _, cs := range [][]int{head[a.s[:e]], tail[a.s[a.n-e:]]} {
			for _, ci := range cs {
				c := ats[ci]
				if c.n <= a.n {
					continue
				}
				if at, ok := within(c.s, b.s); ok && utf(c.key, c.s) && utf(a.key, a.s) {
					b.of, b.start, b.end = c.key, at, at+a.n
					break find
				}
			}
		}
	}
}

func (s *blobSink) tableAt(i int) *blob {
	if i < 0 {
		return nil
	}
	return &s.table[i]
}

// within reports where s is in t as a prefix, a suffix or what follows
// t's leading white space.
func within(t, s string) (int, bool) {
	switch {
	case strings.HasPrefix(t, s):
		return 0, true
	case strings.HasSuffix(t, s):
		return len(t) - len(s), true
	}
	lead := len(t) - len(strings.TrimLeftFunc(t, unicode.IsSpace))
	if lead > 0 && strings.HasPrefix(t[lead:], s) {
		return lead, true
	}
	return 0, false
}

// appendSlice is a slice value as written in the table.
func (bl *blob) appendSlice(b []byte) []byte {
	b = append(b, `{"slice_of":"`...)
	b = append(b, bl.of...)
	b = append(b, `","start":`...)
	b = strconv.AppendInt(b, int64(bl.start), 10)
	b = append(b, `,"end":`...)
	b = strconv.AppendInt(b, int64(bl.end), 10)
	return append(b, '}')
}

// recentTexts are the texts t holds of the keys of recent that known
// holds: the values a journal line's may be slices of. Not every known
// value: a line would then cost as much as the table (a 100k-step run).
func (t *texts) recentTexts(recent []string, known map[string]bool) map[string]string {
	if t == nil || len(t.byKey) == 0 || len(recent) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, k := range recent {
		if s, ok := t.byKey[k]; ok && known[k] {
			m[k] = s
		}
	}
	return m
}

// recentMax is how many of the values it wrote last a journal looks at
// for a line's slices (blobSink.slices): the answers of the parallel
// steps finishing about then.
const recentMax = 64

// noteRecent adds the values of a line written to the journal's recent.
func (j *journal) noteRecent(table []blob) {
	for _, b := range table {
		if b.s == "" || b.of != "" {
			continue
		}
		if len(j.recent) == recentMax {
			j.recent = append(j.recent[:0], j.recent[1:]...)
		}
		j.recent = append(j.recent, b.key)
	}
}
