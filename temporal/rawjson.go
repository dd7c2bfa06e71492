package temporal

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// RawJSON is a step's saved result inside an activity's payload. A plain
// []byte is written as base64, so Temporal's Web UI and `temporal
// workflow show` showed every result as an opaque string; RawJSON writes
// a JSON object as itself, readable there.
//
// Histories recorded before it hold the base64 string, and a workflow
// replaying them must read the same bytes: a JSON string is decoded as
// base64, as encoding/json decodes a []byte. The result is always an
// object (engine.EncodeResult), so the two forms cannot be confused;
// anything else is still written as base64.
type RawJSON []byte

// MarshalJSON writes an object as itself, anything else as []byte would.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	t := bytes.TrimSpace(r)
	if len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return t, nil
	}
	return json.Marshal([]byte(r))
}

// UnmarshalJSON takes an object as itself and a string as base64.
func (r *RawJSON) UnmarshalJSON(b []byte) error {
	t := bytes.TrimSpace(b)
	switch {
	case bytes.Equal(t, []byte("null")):
		*r = nil
	case len(t) > 0 && t[0] == '{':
		*r = append(RawJSON(nil), t...)
	case len(t) > 0 && t[0] == '"':
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return err
		}
		d, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("a step result: neither a JSON object nor base64: %w", err)
		}
		*r = d
	default:
		return fmt.Errorf("a step result: want a JSON object or a base64 string, got %.20s", t)
	}
	return nil
}
