package board

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/planrunner/runner/internal/bigjson"
)

// Hand-written encoders for the journal's hot path: one entry and one step
// record per finished step. encoding/json would reflect over every field
// and re-validate the result bytes the engine already encoded; this is
// several times faster. The output is the same JSON (tests check that it
// decodes to equal values).

// appendRecord appends a journal record's fields after its number
// (",\"entries\":[...]..."), its large strings moved to x (nil: none).
func appendRecord(buf []byte, rec *record, x *blobSink) ([]byte, error) {
	var err error
	switch {
	case rec.Entry != nil:
		buf = append(buf, `,"entry":`...)
		buf, err = withBlobs(buf, x, func(b []byte, x *blobSink) ([]byte, error) { return appendEntry(b, rec.Entry, x) })
	case rec.Step != nil || len(rec.Entries) > 0:
		if len(rec.Entries) > 0 {
			buf = append(buf, `,"entries":[`...)
			for i, e := range rec.Entries {
				if i > 0 {
					buf = append(buf, ',')
				}
				if buf, err = withBlobs(buf, x, func(b []byte, x *blobSink) ([]byte, error) { return appendEntry(b, e, x) }); err != nil {
					return buf, err
				}
			}
			buf = append(buf, ']')
		}
		if rec.Step != nil {
			buf = append(buf, `,"step":`...)
			buf, err = withBlobs(buf, x, func(b []byte, x *blobSink) ([]byte, error) { return appendStep(b, rec.Step, x) })
		}
	case rec.Rec != nil:
		buf = append(buf, `,"rec":`...)
		buf, err = withBlobs(buf, x, func(b []byte, x *blobSink) ([]byte, error) { return appendRecording(b, rec.Rec, x) })
	case rec.Run != nil:
		var data []byte
		data, err = json.Marshal(rec.Run)
		buf = append(buf, `,"run":`...)
		buf = append(buf, data...)
		if rec.SameSource {
			buf = append(buf, `,"same_plan_source":true`...)
		}
	}
	return buf, err
}

// withBlobs encodes one record (an entry, a step, a recording) through x
// and adds its "blob_refs"; a record whose own text holds a string equal
// to one of its keys is encoded again whole (see blobSink.end).
func withBlobs(b []byte, x *blobSink, enc func([]byte, *blobSink) ([]byte, error)) ([]byte, error) {
	if x == nil {
		return enc(b, nil)
	}
	start := len(b)
	x.begin()
	b, err := enc(b, x)
	if err != nil {
		return b, err
	}
	rec, ok := x.end(b[start:])
	if !ok {
		return enc(b[:start], nil)
	}
	return append(b[:start], rec...), nil
}

// appendRecording encodes r as encoding/json does.
func appendRecording(b []byte, r *Recording, x *blobSink) ([]byte, error) {
	b = append(b, `{"label":`...)
	b = bigjson.AppendString(b, r.Label)
	b = append(b, `,"visit":`...)
	b = strconv.AppendInt(b, int64(r.Visit), 10)
	b = appendField(b, "kind", r.Kind)
	if r.Call != 0 {
		b = append(b, `,"call":`...)
		b = strconv.AppendInt(b, int64(r.Call), 10)
	}
	if r.Agent != "" {
		b = appendField(b, "agent", r.Agent)
	}
	b = appendField(b, "request_sha256", r.RequestSHA256)
	var err error
	if len(r.Request) > 0 {
		b = append(b, `,"request":`...)
		if b, err = appendRaw(b, r.Request, r.held, x, "request"); err != nil {
			return b, err
		}
	}
	b = append(b, `,"response":`...)
	if b, err = appendRaw(b, r.Response, r.held, x, "response"); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// appendRaw appends a raw JSON field, checked: null when empty. h holds
// the texts of the keys raw holds in place of its large strings (held.go).
func appendRaw(b, raw []byte, h held, x *blobSink, what string) ([]byte, error) {
	if len(raw) == 0 {
		return append(b, "null"...), nil
	}
	if !json.Valid(raw) {
		return b, &json.UnsupportedValueError{Str: what + " is not valid JSON"}
	}
	if h != nil {
		return appendHeld(b, raw, h, x), nil
	}
	return x.raw(b, raw)
}

func appendEntry(b []byte, e *Entry, x *blobSink) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = bigjson.AppendString(b, e.ID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = appendField(b, "section", e.Section)
	b = appendField(b, "role", e.Role)
	b = appendField(b, "author", e.Author)
	b = appendField(b, "label", e.Label)
	b = appendField(b, "key", e.Key)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, e.Version, 10)
	if e.Topic != "" {
		b = appendField(b, "topic", e.Topic)
	}
	b = append(b, `,"content":`...)
	var err error
	if b, err = appendJSON(b, e.Content, x); err != nil {
		return b, err
	}
	b = append(b, `,"meta":`...)
	if e.packedMeta != "" {
		b = append(b, e.packedMeta...)
	} else if b, err = appendJSON(b, e.Meta, x); err != nil {
		return b, err
	}
	b = append(b, `,"ts":`...)
	b = appendTime(b, e.TS)
	b = append(b, `,"ttl_s":`...)
	if e.TTL == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendFloat(b, *e.TTL, 'g', -1, 64)
	}
	if e.Deleted {
		b = append(b, `,"deleted":true`...)
	}
	return append(b, '}'), nil
}

func appendStep(b []byte, s *StepRecord, x *blobSink) ([]byte, error) {
	b = append(b, `{"label":`...)
	b = bigjson.AppendString(b, s.Label)
	b = append(b, `,"visit":`...)
	b = strconv.AppendInt(b, int64(s.Visit), 10)
	if s.Type != "" {
		b = appendField(b, "type", s.Type)
	}
	if s.Parent != "" {
		b = appendField(b, "parent", s.Parent)
	}
	b = appendField(b, "status", s.Status)
	b = append(b, `,"started_at":`...)
	b = appendTime(b, s.StartedAt)
	b = append(b, `,"finished_at":`...)
	b = appendTime(b, s.FinishedAt)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, s.DurationMS, 10)
	if s.Attempts != 0 {
		b = append(b, `,"attempts":`...)
		b = strconv.AppendInt(b, int64(s.Attempts), 10)
	}
	if s.Goto != "" {
		b = appendField(b, "goto", s.Goto)
	}
	b = append(b, `,"result":`...)
	var err error
	if b, err = appendRaw(b, s.Result, s.held, x, "step result"); err != nil {
		return b, err
	}
	b = append(b, `,"error":`...)
	b = x.str(b, s.Error)
	if len(s.Delays) > 0 {
		b = append(b, `,"retry_delays_ms":[`...)
		for i, d := range s.Delays {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, d, 10)
		}
		b = append(b, ']')
	}
	if s.packedInputs != "" {
		b = append(b, `,"inputs":`...)
		b = append(b, s.packedInputs...)
	} else if len(s.Inputs) > 0 {
		b = append(b, `,"inputs":`...)
		if b, err = appendJSON(b, s.Inputs, x); err != nil {
			return b, err
		}
	}
	if s.Host != "" {
		b = appendField(b, "host", s.Host)
	}
	if s.Agent != "" {
		b = appendField(b, "agent", s.Agent)
	}
	return append(b, '}'), nil
}

func appendField(b []byte, name, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return bigjson.AppendString(b, value)
}

// appendJSON encodes free-form values; plain strings skip reflection.
func appendJSON(b []byte, v any, x *blobSink) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return x.str(b, v), nil
	case map[string]any:
		return appendMap(b, v, x)
	case map[string]string:
		return appendMap(b, v, x)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e, x); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return x.raw(b, data)
}

// appendMap encodes a map as encoding/json does (keys sorted), its values
// through appendJSON: a large string in it is not copied into a JSON
// text of its own first.
func appendMap[V any](b []byte, m map[string]V, x *blobSink) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = bigjson.AppendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendJSON(b, m[k], x); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
