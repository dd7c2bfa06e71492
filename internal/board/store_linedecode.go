package board

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/planrunner/runner/internal/bigjson"
)

// The file runner writes holds one step record or entry per line (see
// encodeLocked). Decoding those lines with encoding/json's reflection
// was a fifth of a 100k-step resume: the header fields are
// picked out here by hand, in one pass over each line, and the values a
// reader may never ask for (an entry's content and meta, a step's
// result) kept as the line's bytes. Any line not in the shape runner
// writes (a key spelled in another case, a duplicate field, a number in
// another form, a null where a value is written, a string this scanner
// cannot take as it is) is handed to encoding/json whole, so both paths
// give the same records and the same errors (TestLineDecoderAsJSON,
// FuzzLineDecoder).

// lineDec scans one line: a JSON object.
type lineDec struct {
	b []byte
	i int
	// alias: strings may share the line's bytes (what is read is let
	// go of with the file's buffer); else they are copied, those that
	// repeat (labels, keys, authors) once per worker when intern is set.
	alias  bool
	intern map[string]string
}

func (d *lineDec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips whitespace and reports the next byte (0 at the end).
func (d *lineDec) next() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// eat consumes c after whitespace.
func (d *lineDec) eat(c byte) bool {
	if d.next() != c {
		return false
	}
	d.i++
	return true
}

// rawString returns the quoted string at d.i, quotes included, and
// whether it is plain: no escape, valid UTF-8, so its text is its bytes.
// It steps over eight bytes at a time while none of them needs a look
// (quote, backslash, control or non-ASCII byte): byte by byte it was the
// largest item of a resume's board read.
func (d *lineDec) rawString() (raw []byte, plain, ok bool) {
	if d.next() != '"' {
		return nil, false, false
	}
	st := d.i
	plain = true
	ascii := true
	b := d.b
	for i := st + 1; ; i++ {
		i = bigjson.PlainRun(b, i)
		if i >= len(b) {
			return nil, false, false
		}
		c := b[i]
		switch {
		case c == '"':
			d.i = i + 1
			raw = b[st:d.i]
			if !ascii && !utf8.Valid(raw) {
				plain = false // encoding/json replaces bad bytes with U+FFFD
			}
			return raw, plain, true
		case c == '\\':
			plain = false
			i++
			if i >= len(b) {
				return nil, false, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return nil, false, false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return nil, false, false
					}
				}
				i += 4
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		case c >= 0x80:
			ascii = false
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// str decodes a string value; repeat says it is likely to recur across
// lines (interned when copied).
func (d *lineDec) str(repeat bool) (string, bool) {
	raw, plain, ok := d.rawString()
	if !ok {
		return "", false
	}
	if !plain {
		var s string // escapes: rare in a header, done as encoding/json does
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	body := raw[1 : len(raw)-1]
	switch {
	case len(body) == 0:
		return "", true
	case d.alias:
		return unsafe.String(&body[0], len(body)), true
	case repeat && d.intern != nil:
		if s, ok := d.intern[string(body)]; ok {
			return s, true
		}
		s := string(body)
		d.intern[s] = s
		return s, true
	}
	return string(body), true
}

// number returns a JSON number's text at d.i, checked against the grammar.
func (d *lineDec) number() ([]byte, bool) {
	d.ws()
	st, i := d.i, d.i
	b := d.b
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	d.i = i
	return b[st:i], true
}

// int64 decodes an integer written as one (no fraction or exponent: those
// are encoding/json's to accept or refuse).
func (d *lineDec) int64() (int64, bool) {
	n, ok := d.number()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(unsafe.String(&n[0], len(n)), 10, 64)
	return v, err == nil
}

func (d *lineDec) lit(s string) bool {
	d.ws()
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// isNull consumes a null.
func (d *lineDec) isNull() bool { return d.next() == 'n' && d.lit("null") }

func (d *lineDec) time() (time.Time, bool) {
	raw, plain, ok := d.rawString()
	if !ok || !plain {
		return time.Time{}, false
	}
	if t, ok := utcTime(raw[1 : len(raw)-1]); ok {
		return t, true
	}
	var t time.Time
	if t.UnmarshalJSON(raw) != nil {
		return time.Time{}, false
	}
	return t, true
}

// utcTime reads the one form of RFC 3339 runner writes, a UTC time to
// the nanosecond at most ("2006-01-02T15:04:05.999999999Z"), by hand:
// time's parser was a tenth of the line decoder's time on a 100k-step
// board. Any other form, or a field out of range, is not taken
// (time.Time.UnmarshalJSON decides), so both give the same times.
func utcTime(s []byte) (time.Time, bool) {
	if len(s) < len("2006-01-02T15:04:05Z") || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
		s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	digits := func(b []byte) (int, bool) {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
		return time.Time{}, false
	}
	ns := 0
	if frac := s[19 : len(s)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		n, ok := digits(frac[1:])
		if !ok {
			return time.Time{}, false
		}
		for k := len(frac) - 1; k < 9; k++ {
			n *= 10
		}
		ns = n
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, ns, time.UTC), true
}

// daysIn is the number of days of a month (1-12) in a year.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// value skips any JSON value, checking it, and returns its bytes.
func (d *lineDec) value() ([]byte, bool) {
	st := d.next()
	start := d.i
	if !d.skip(st, 0) {
		return nil, false
	}
	return d.b[start:d.i], true
}

// maxDepth: deeper values go to encoding/json, which has its own limit.
const maxDepth = 200

func (d *lineDec) skip(c byte, depth int) bool {
	switch c {
	case '"':
		_, _, ok := d.rawString()
		return ok
	case '{', '[':
		if depth > maxDepth {
			return false
		}
		d.i++
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		if d.eat(end) {
			return true
		}
		for {
			if c == '{' {
				if _, _, ok := d.rawString(); !ok || !d.eat(':') {
					return false
				}
			}
			if !d.skip(d.next(), depth+1) {
				return false
			}
			if d.eat(',') {
				continue
			}
			return d.eat(end)
		}
	case 't':
		return d.lit("true")
	case 'f':
		return d.lit("false")
	case 'n':
		return d.lit("null")
	}
	_, ok := d.number()
	return ok
}

// list decodes a JSON array whose items elem reads (nil for null, an
// empty list for [], as encoding/json).
func list[T any](d *lineDec, elem func() (T, bool)) ([]T, bool) {
	if d.isNull() {
		return nil, true
	}
	if !d.eat('[') {
		return nil, false
	}
	out := []T{}
	if d.eat(']') {
		return out, true
	}
	for {
		v, ok := elem()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if d.eat(',') {
			continue
		}
		return out, d.eat(']')
	}
}

func (d *lineDec) strings() ([]string, bool) {
	return list(d, func() (string, bool) { return d.str(false) })
}

func (d *lineDec) int64s() ([]int64, bool) { return list(d, d.int64) }

func (d *lineDec) stringMap() (map[string]string, bool) {
	if d.isNull() {
		return nil, true
	}
	if !d.eat('{') {
		return nil, false
	}
	out := map[string]string{}
	if d.eat('}') {
		return out, true
	}
	for {
		k, ok := d.str(true)
		if !ok || !d.eat(':') {
			return nil, false
		}
		v, ok := d.str(false)
		if !ok {
			return nil, false
		}
		out[k] = v
		if d.eat(',') {
			continue
		}
		return out, d.eat('}')
	}
}

// fields walks the line's object, calling field with each key (plain,
// case as written) positioned at its value; field returns false for a
// value it cannot take. A key given twice, or one that matches a known
// field only when case is ignored, gives the line to encoding/json.
func (d *lineDec) fields(known []string, field func(k int) bool) bool {
	if !d.eat('{') {
		return false
	}
	var seen uint64
	want := 0 // the field runner writes next: tried first
	if !d.eat('}') {
		for {
			raw, plain, ok := d.rawString()
			if !ok || !plain || !d.eat(':') {
				return false
			}
			name := raw[1 : len(raw)-1]
			k := -1
			if want < len(known) && string(name) == known[want] {
				k = want
			} else {
				for j, f := range known {
					if string(name) == f {
						k = j
						break
					}
				}
			}
			if k >= 0 {
				want = k + 1
			}
			if k < 0 {
				for _, f := range known {
					if strings.EqualFold(string(name), f) {
						return false
					}
				}
				if _, ok := d.value(); !ok {
					return false
				}
			} else {
				if seen&(1<<k) != 0 || !field(k) {
					return false
				}
				seen |= 1 << k
			}
			if d.eat(',') {
				continue
			}
			if !d.eat('}') {
				return false
			}
			break
		}
	}
	d.ws()
	return d.i == len(d.b)
}

// The fields of an entry's line, in the order runner writes them.
var entryFields = []string{"id", "seq", "section", "role", "author", "label", "key", "version", "topic",
	"content", "meta", "ts", "ttl_s", "deleted", "blob_refs"}

// entryLine decodes an entry's line: its header, with content and meta
// kept as raw bytes (for a lazy entry) or decoded.
func (d *lineDec) entryLine(line []byte) (h entryHead, content, meta []byte, ok bool) {
	d.b, d.i = line, 0
	ok = d.fields(entryFields, func(k int) bool {
		var ok bool
		switch k {
		case 0:
			h.ID, ok = d.str(false)
		case 1:
			h.Seq, ok = d.int64()
		case 2:
			h.Section, ok = d.str(true)
		case 3:
			h.Role, ok = d.str(true)
		case 4:
			h.Author, ok = d.str(true)
		case 5:
			h.Label, ok = d.str(true)
		case 6:
			h.Key, ok = d.str(true)
		case 7:
			h.Version, ok = d.int64()
		case 8:
			h.Topic, ok = d.str(true)
		case 9:
			content, ok = d.value()
		case 10:
			meta, ok = d.value()
			ok = ok && (meta[0] == '{' || string(meta) == "null")
		case 11:
			h.TS, ok = d.time()
		case 12:
			if d.isNull() {
				return true
			}
			var n []byte
			if n, ok = d.number(); ok {
				f, err := strconv.ParseFloat(string(n), 64)
				h.TTL, ok = &f, err == nil
			}
		case 13:
			switch d.next() {
			case 't':
				h.Deleted, ok = true, d.lit("true")
			case 'f':
				ok = d.lit("false")
			}
		case 14:
			h.Refs, ok = d.strings()
		}
		return ok
	})
	return h, content, meta, ok
}

// entry decodes an entry's line whole (Load) into in (whose Entry is
// given, zero): the header by hand, its content and meta by
// encoding/json, as values of any type. Not ok: in is left as it was.
func (d *lineDec) entry(line []byte, in *entryIn) bool {
	h, content, meta, ok := d.entryLine(line)
	if !ok {
		return false
	}
	e := Entry{ID: h.ID, Seq: h.Seq, Section: h.Section, Role: h.Role, Author: h.Author, Label: h.Label,
		Key: h.Key, Version: h.Version, Topic: h.Topic, TS: h.TS, TTL: h.TTL, Deleted: h.Deleted}
	if len(content) > 0 && content[0] == '"' {
		// Most contents are text: taken as the header's strings are.
		sub := lineDec{b: content}
		s, ok := sub.str(false)
		if !ok {
			return false
		}
		e.Content = s
	} else if content != nil {
		sub := lineDec{b: content, intern: d.intern}
		if e.Content, ok = sub.anyValue(0); !ok && json.Unmarshal(content, &e.Content) != nil {
			return false
		}
	}
	if meta != nil && meta[0] == '{' {
		sub := lineDec{b: meta, intern: d.intern}
		v, ok := sub.anyValue(0)
		if ok {
			e.Meta = v.(map[string]any)
		} else if json.Unmarshal(meta, &e.Meta) != nil {
			return false
		}
	}
	*in.Entry, in.Refs = e, h.Refs
	return true
}

// anyValue decodes a value (checked whole already, by value) as
// json.Unmarshal into an any does: objects as map[string]any, lists as
// []any, numbers as float64. Through encoding/json's reflection an
// entry's meta was a third of a whole load (replay, report). Not ok: a
// value it leaves to encoding/json (a number out of float64's range, a
// string with escapes or bad UTF-8 it does not unquote itself, one too
// deep).
func (d *lineDec) anyValue(depth int) (any, bool) {
	switch d.next() {
	case '"':
		raw, plain, ok := d.rawString()
		if !ok || !plain {
			return nil, false
		}
		return string(raw[1 : len(raw)-1]), true
	case '{':
		if depth > maxDepth {
			return nil, false
		}
		d.i++
		m := map[string]any{}
		if d.eat('}') {
			return m, true
		}
		for {
			k, ok := d.str(true)
			if !ok || !d.eat(':') {
				return nil, false
			}
			v, ok := d.anyValue(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			if d.eat(',') {
				continue
			}
			return m, d.eat('}')
		}
	case '[':
		if depth > maxDepth {
			return nil, false
		}
		d.i++
		l := []any{}
		if d.eat(']') {
			return l, true
		}
		for {
			v, ok := d.anyValue(depth + 1)
			if !ok {
				return nil, false
			}
			l = append(l, v)
			if d.eat(',') {
				continue
			}
			return l, d.eat(']')
		}
	case 't':
		return true, d.lit("true")
	case 'f':
		return false, d.lit("false")
	case 'n':
		return nil, d.lit("null")
	}
	n, ok := d.number()
	if !ok {
		return nil, false
	}
	f, err := strconv.ParseFloat(unsafe.String(&n[0], len(n)), 64)
	return f, err == nil
}

// The fields of a step record's line, in the order runner writes them.
var stepFields = []string{"label", "visit", "type", "parent", "status", "started_at", "finished_at",
	"duration_ms", "attempts", "goto", "result", "error", "retry_delays_ms", "inputs", "host", "agent", "blob_refs"}

// step decodes a step record's line into s; its result is the line's
// bytes (shared when d.alias, else copied).
func (d *lineDec) step(line []byte, s *StepRecord) (refs []string, ok bool) {
	d.b, d.i = line, 0
	ok = d.fields(stepFields, func(k int) bool {
		var ok bool
		var n int64
		switch k {
		case 0:
			s.Label, ok = d.str(true)
		case 1:
			n, ok = d.int64()
			s.Visit = int(n)
		case 2:
			s.Type, ok = d.str(true)
		case 3:
			s.Parent, ok = d.str(true)
		case 4:
			s.Status, ok = d.str(true)
		case 5:
			s.StartedAt, ok = d.time()
		case 6:
			s.FinishedAt, ok = d.time()
		case 7:
			s.DurationMS, ok = d.int64()
		case 8:
			n, ok = d.int64()
			s.Attempts = int(n)
		case 9:
			s.Goto, ok = d.str(true)
		case 10:
			var raw []byte
			if raw, ok = d.value(); ok {
				if !d.alias {
					raw = append([]byte(nil), raw...)
				}
				s.Result = raw
			}
		case 11:
			s.Error, ok = d.str(false)
		case 12:
			s.Delays, ok = d.int64s()
		case 13:
			s.Inputs, ok = d.stringMap()
		case 14:
			s.Host, ok = d.str(true)
		case 15:
			s.Agent, ok = d.str(true)
		case 16:
			refs, ok = d.strings()
		}
		return ok
	})
	return refs, ok
}

// The fields of a recording's line, in the order runner writes them.
var recFields = []string{"label", "visit", "kind", "call", "agent", "request_sha256", "request", "response", "blob_refs"}

// recording decodes a recording's line into r, as step does a step
// record's: a replay of a 100k-step run read each through encoding/json.
func (d *lineDec) recording(line []byte, r *Recording) (refs []string, ok bool) {
	d.b, d.i = line, 0
	raw := func(dst *json.RawMessage) bool {
		v, ok := d.value()
		if ok {
			if !d.alias {
				v = append([]byte(nil), v...)
			}
			*dst = v
		}
		return ok
	}
	ok = d.fields(recFields, func(k int) bool {
		var ok bool
		var n int64
		switch k {
		case 0:
			r.Label, ok = d.str(true)
		case 1:
			n, ok = d.int64()
			r.Visit = int(n)
		case 2:
			r.Kind, ok = d.str(true)
		case 3:
			n, ok = d.int64()
			r.Call = int(n)
		case 4:
			r.Agent, ok = d.str(true)
		case 5:
			r.RequestSHA256, ok = d.str(false)
		case 6:
			ok = raw(&r.Request)
		case 7:
			ok = raw(&r.Response)
		case 8:
			refs, ok = d.strings()
		}
		return ok
	})
	return refs, ok
}
