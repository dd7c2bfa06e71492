package board

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"sync"
	"unicode/utf8"

	"github.com/planrunner/runner/internal/bigjson"
)

// Large strings are stored once (docs/spec.md §3, "Large values"). A model
// answer of 50 MiB used to be written four times (the step's result, its
// audit entry, the conversation entry, the recording), in the file and in
// the journal. Now every string of BlobMin bytes or more (as encoded) is
// moved to the file's "blobs" table, keyed by the SHA-256 of its text,
// and the place that held it holds the key instead ("sha256:<hex>"), the
// record listing the keys it holds in "blob_refs". A string equal to a
// key is a reference only in a record that lists it; a record whose own
// text holds such a string is written whole (see blobSink.end), so no
// value is ever mistaken for a reference.

// BlobMin is the size (in bytes, as a JSON string) from which a string is
// stored in the blob table. A variable so tests can lower it.
var BlobMin = 64 << 10

const blobPrefix = "sha256:"

// isBlobRef reports whether s has the form of a blob key.
func isBlobRef(s string) bool {
	if len(s) != len(blobPrefix)+64 || s[:len(blobPrefix)] != blobPrefix {
		return false
	}
	for i := len(blobPrefix); i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func blobKey(h hash.Hash) string { return blobPrefix + hex.EncodeToString(h.Sum(nil)) }

// hashText hashes s without copying it whole, as the file holds it: each
// byte that is not UTF-8 as U+FFFD, which is what JSON makes of it
// (bigjson.AppendString, as encoding/json) and what reads back. Hashed as given,
// a large value with such bytes (a command's binary output) made the
// saved run unreadable: its text read back hashed to another key.
func hashText(s string) string {
	h := sha256.New()
	var buf [32 << 10]byte
	for len(s) > 0 {
		n := min(len(s), len(buf)-utf8.UTFMax)
		// Cut where a character starts: a valid one is never split (a
		// byte that follows three continuation bytes is in none).
		for k := 0; k < utf8.UTFMax-1 && n < len(s) && !utf8.RuneStart(s[n]); k++ {
			n--
		}
		chunk := s[:n]
		s = s[n:]
		if utf8.ValidString(chunk) {
			h.Write(buf[:copy(buf[:], chunk)])
			continue
		}
		b := buf[:0]
		for len(chunk) > 0 {
			r, size := utf8.DecodeRuneInString(chunk)
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, chunk[:size]...)
			}
			chunk = chunk[size:]
			if len(b) > len(buf)-utf8.UTFMax {
				h.Write(b)
				b = buf[:0]
			}
		}
		h.Write(b)
	}
	return blobKey(h)
}

// hashLiteral hashes the text of a JSON string literal (quotes included)
// as encoding/json would decode it, without building the text: escapes
// are decoded into a small buffer. It also checks the literal is one.
func hashLiteral(lit []byte) (string, error) {
	h := sha256.New()
	if err := bigjson.UnquoteTo(h, lit); err != nil {
		return "", err
	}
	return blobKey(h), nil
}

// nextString finds the next string literal in valid JSON raw at or after
// from: [start, end) holds it with its quotes; start < 0 when none.
func nextString(raw []byte, from int) (start, end int) {
	i := bytes.IndexByte(raw[from:], '"')
	if i < 0 {
		return -1, -1
	}
	start = from + i
	for j := start + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return start, j + 1
		}
	}
	return -1, -1
}

// blob is one value of the table being written: its text (s) or its
// literal as another encoder wrote it (lit; s then, if set, is its text,
// only to find slices by).
type blob struct {
	key string
	s   string
	lit []byte
	// of, when set, is the key of a value whose text holds s at
	// [start, end): written as that slice (store_blobslice.go).
	of         string
	start, end int
}

// blobSink moves the large strings of the records being encoded to a
// table. known holds the keys a reader finds elsewhere (in the file, for
// a journal line); table collects the new ones.
type blobSink struct {
	known map[string]bool
	have  map[string]bool // known, and the keys in table
	table []blob
	// the record being encoded
	mark int
	refs map[string]int // key -> places that hold it
	list []string
	// texts, when set, are the board's: a string it has hashed is not
	// hashed again.
	texts *texts
}

func newBlobSink(known map[string]bool) *blobSink {
	return &blobSink{known: known, have: map[string]bool{}, refs: map[string]int{}}
}

func (s *blobSink) begin() {
	s.mark = len(s.table)
	clear(s.refs)
	s.list = s.list[:0]
}

func (s *blobSink) ref(key string) {
	if s.refs[key] == 0 {
		s.list = append(s.list, key)
	}
	s.refs[key]++
}

func (s *blobSink) add(b blob) {
	if !s.known[b.key] && !s.have[b.key] {
		s.have[b.key] = true
		s.table = append(s.table, b)
	}
	s.ref(b.key)
}

// end finishes a record encoded as rec (an object) and returns it with
// its "blob_refs". ok is false when the record's own text holds a string
// equal to one of its keys: it must then be written whole (with a nil
// sink), and what it added to the table is taken back.
func (s *blobSink) end(rec []byte) (_ []byte, ok bool) {
	if len(s.list) == 0 {
		return rec, true
	}
	for _, k := range s.list {
		// Counting the quoted key may count one inside a longer string
		// (after an escaped quote): that only costs the record its blobs.
		if bytes.Count(rec, []byte(`"`+k+`"`)) != s.refs[k] {
			for _, b := range s.table[s.mark:] {
				delete(s.have, b.key)
			}
			s.table = s.table[:s.mark]
			return rec, false
		}
	}
	rec = rec[:len(rec)-1] // the closing brace
	rec = append(rec, `,"blob_refs":[`...)
	for i, k := range s.list {
		if i > 0 {
			rec = append(rec, ',')
		}
		rec = append(rec, '"')
		rec = append(rec, k...)
		rec = append(rec, '"')
	}
	return append(rec, "]}"...), true
}

// str appends s as a JSON string, or its key if it goes to the table.
func (s *blobSink) str(b []byte, v string) []byte {
	if s == nil || len(v) < BlobMin {
		return bigjson.AppendString(b, v)
	}
	var k string
	if s.texts != nil {
		k = s.texts.keyOfText(v)
	} else {
		k = hashText(v)
	}
	s.add(blob{key: k, s: v})
	return bigjson.AppendString(b, k)
}

// raw appends the JSON value raw, its large strings replaced by keys.
func (s *blobSink) raw(b, raw []byte) ([]byte, error) {
	if s == nil || len(raw) < BlobMin {
		return append(b, raw...), nil
	}
	pos := 0
	err := longStrings(raw, func(st, en int, k string) {
		b = append(b, raw[pos:st]...)
		s.add(blob{key: k, lit: raw[st:en]})
		b = bigjson.AppendString(b, k)
		pos = en
	})
	if err != nil {
		return b, err
	}
	return append(b, raw[pos:]...), nil
}

// longStrings calls each with the place and key of every string literal
// of raw as long as BlobMin or longer, in order.
func longStrings(raw []byte, each func(st, en int, key string)) error {
	for from := 0; ; {
		st, en := nextString(raw, from)
		if st < 0 {
			return nil
		}
		from = en
		if en-st < BlobMin {
			continue
		}
		k, err := hashLiteral(raw[st:en])
		if err != nil {
			return err
		}
		each(st, en, k)
	}
}

// writeTo writes the table's value: the literal kept, or the text
// quoted piece by piece (a whole quoted copy of 50 MiB would be 50 MiB
// more at the peak).
func (bl *blob) writeTo(w interface{ Write([]byte) (int, error) }, scratch []byte) ([]byte, error) {
	if bl.of != "" {
		scratch = bl.appendSlice(scratch[:0])
		_, err := w.Write(scratch)
		return scratch, err
	}
	if bl.lit != nil {
		_, err := w.Write(bl.lit)
		return scratch, err
	}
	if _, err := w.Write([]byte{'"'}); err != nil {
		return scratch, err
	}
	for s := bl.s; len(s) > 0; {
		n := min(len(s), 32<<10)
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		scratch = bigjson.AppendString(scratch[:0], s[:n])
		if _, err := w.Write(scratch[1 : len(scratch)-1]); err != nil {
			return scratch, err
		}
		s = s[n:]
	}
	_, err := w.Write([]byte{'"'})
	return scratch, err
}

// blobTable is the table of a file being read: each value's literal, its
// text decoded when first asked for (and then shared by every entry that
// holds it). A slice of another value (store_blobslice.go) is a substring of
// that one's text.
type blobTable struct {
	mu  sync.Mutex
	lit map[string][]byte
	str map[string]string
	// The slices: put and not yet checked (link), as written, and
	// resolved to the value stored as text.
	pend, ref map[string]sliceRef
	slice     map[string]textSpan
}

func newBlobTable() *blobTable {
	return &blobTable{lit: map[string][]byte{}, str: map[string]string{},
		pend: map[string]sliceRef{}, ref: map[string]sliceRef{}, slice: map[string]textSpan{}}
}

// put adds a value read from the file (or a journal line), checking that
// it is a string and that its text hashes to its key, or a slice of
// another value, checked by link once the values it may refer to are put.
func (t *blobTable) put(key string, lit []byte) error {
	if !isBlobRef(key) {
		return fmt.Errorf("blobs: key %.80q is not sha256:<64 hex digits>", key)
	}
	// A value given again (a journal line after the file) replaces the
	// form it had: its text is the same, its key says so.
	delete(t.ref, key)
	delete(t.slice, key)
	if len(lit) > 0 && lit[0] == '{' {
		r, err := parseSlice(lit)
		if err != nil {
			return fmt.Errorf("blobs: %s: %w", key, err)
		}
		t.lit[key], t.pend[key] = lit, r
		return nil
	}
	delete(t.pend, key)
	got, err := hashLiteral(lit)
	if err != nil {
		return fmt.Errorf("blobs: %s: %w", key, err)
	}
	if got != key {
		return fmt.Errorf("blobs: %s: its text hashes to %s (the file is damaged)", key, got)
	}
	t.lit[key] = lit
	return nil
}

// own copies the literals read from a file, for the table to outlive
// the file's bytes.
func (t *blobTable) own() {
	for k, lit := range t.lit {
		t.lit[k] = bytes.Clone(lit)
	}
}

func (t *blobTable) text(key string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.textLocked(key)
}

func (t *blobTable) textLocked(key string) string {
	if s, ok := t.str[key]; ok {
		return s
	}
	if sp, ok := t.slice[key]; ok {
		return t.textLocked(sp.root)[sp.start:sp.end]
	}
	// One allocation of the text's size (internal/bigjson): json.Unmarshal
	// would copy a 50 MiB answer with newlines twice.
	s, _ := bigjson.Unquote(t.lit[key]) // checked by put
	t.str[key] = s
	return s
}

// check refuses refs that are not in the table; what names the record.
func (t *blobTable) check(what string, refs []string) (map[string]bool, error) {
	set := make(map[string]bool, len(refs))
	for _, k := range refs {
		if t == nil || t.lit[k] == nil {
			return nil, fmt.Errorf("%s: blob_refs names %.80q, which is not in the file's blobs", what, k)
		}
		set[k] = true
	}
	return set, nil
}

// value replaces, in a decoded value, the strings that are refs.
func (t *blobTable) value(v any, refs map[string]bool) any {
	switch x := v.(type) {
	case string:
		if refs[x] {
			return t.text(x)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = t.value(e, refs)
		}
	case []any:
		for i, e := range x {
			x[i] = t.value(e, refs)
		}
	}
	return v
}

// The records of a file or journal line as read: each with its refs.
type entryIn struct {
	*Entry
	Refs []string `json:"blob_refs"`
}

type stepIn struct {
	*StepRecord
	Refs []string `json:"blob_refs"`
}

type recIn struct {
	*Recording
	Refs []string `json:"blob_refs"`
}

func (t *blobTable) resolveEntry(e *Entry, refs []string) error {
	if len(refs) == 0 {
		return nil
	}
	set, err := t.check(fmt.Sprintf("entry seq %d (id %s)", e.Seq, e.ID), refs)
	if err != nil {
		return err
	}
	e.Content = t.value(e.Content, set)
	for k, v := range e.Meta {
		e.Meta[k] = t.value(v, set)
	}
	return nil
}

func (t *blobTable) resolveStep(s *StepRecord, refs []string) error {
	if len(refs) == 0 {
		return nil
	}
	set, err := t.check(fmt.Sprintf("step %s visit %d", s.Label, s.Visit), refs)
	if err != nil {
		return err
	}
	s.held = t.held(s.Result, set, s.held)
	if s.held != nil && s.built == nil {
		s.built = new(built)
	}
	if set[s.Error] {
		s.Error = t.text(s.Error)
	}
	for k, v := range s.Inputs {
		if set[v] {
			s.Inputs[k] = t.text(v)
		}
	}
	return nil
}

func (t *blobTable) resolveRec(r *Recording, refs []string) error {
	if len(refs) == 0 {
		return nil
	}
	set, err := t.check(fmt.Sprintf("recording of step %s visit %d call %d", r.Label, r.Visit, r.Call), refs)
	if err != nil {
		return err
	}
	r.held = t.held(r.Request, set, r.held)
	r.held = t.held(r.Response, set, r.held)
	if r.held != nil && r.built == nil {
		r.built = new(built)
	}
	return nil
}

// held adds to h the texts of the refs raw holds: the record keeps them
// as keys, the texts shared with every entry and record that holds them
// (held.go), rather than a copy of each literal put back in its JSON.
func (t *blobTable) held(raw []byte, refs map[string]bool, h held) held {
	for from := 0; ; {
		st, en := nextString(raw, from)
		if st < 0 {
			return h
		}
		from = en
		if en-st != len(blobPrefix)+66 || !refs[string(raw[st+1:en-1])] {
			continue
		}
		if h == nil {
			h = held{}
		}
		k := string(raw[st+1 : en-1])
		h[k] = t.text(k)
	}
}

func (e *entryIn) get() *Entry {
	if e.Entry == nil {
		e.Entry = new(Entry)
	}
	return e.Entry
}

func (s *stepIn) get() *StepRecord {
	if s.StepRecord == nil {
		s.StepRecord = new(StepRecord)
	}
	return s.StepRecord
}

func (r *recIn) get() *Recording {
	if r.Recording == nil {
		r.Recording = new(Recording)
	}
	return r.Recording
}

// recordIn is a journal line as read.
type recordIn struct {
	N       int64                      `json:"n"`
	Blobs   map[string]json.RawMessage `json:"blobs"`
	Entry   *entryIn                   `json:"entry"`
	Entries []*entryIn                 `json:"entries"`
	Step    *stepIn                    `json:"step"`
	Rec     *recIn                     `json:"rec"`
	Run     *Run                       `json:"run"`
	// SameSource: see record.SameSource.
	SameSource bool `json:"same_plan_source"`
}

// resolveRecord adds a journal line's blobs to the board's table and puts
// their values back in its records.
func (b *Board) resolveRecord(in *recordIn) (record, error) {
	t := b.loadBlobs
	if t == nil {
		t = newBlobTable()
		b.loadBlobs = t
	}
	if b.blobsKnown == nil {
		b.blobsKnown = map[string]bool{}
	}
	for k, v := range in.Blobs {
		if err := t.put(k, v); err != nil {
			return record{}, err
		}
		b.blobsKnown[k] = true
	}
	if err := t.link(); err != nil {
		return record{}, err
	}
	rec := record{N: in.N, Run: in.Run, SameSource: in.SameSource}
	if in.Entry != nil {
		rec.Entry = in.Entry.get()
		if err := t.resolveEntry(rec.Entry, in.Entry.Refs); err != nil {
			return record{}, err
		}
	}
	for i, e := range in.Entries {
		if e == nil {
			return record{}, fmt.Errorf("entries[%d] is null", i)
		}
		if err := t.resolveEntry(e.get(), e.Refs); err != nil {
			return record{}, err
		}
		rec.Entries = append(rec.Entries, e.Entry)
	}
	if in.Step != nil {
		rec.Step = in.Step.get()
		if err := t.resolveStep(rec.Step, in.Step.Refs); err != nil {
			return record{}, err
		}
	}
	if in.Rec != nil {
		rec.Rec = in.Rec.get()
		if err := t.resolveRec(rec.Rec, in.Rec.Refs); err != nil {
			return record{}, err
		}
	}
	return rec, nil
}
