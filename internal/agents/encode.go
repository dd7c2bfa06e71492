package agents

import (
	"bytes"
	"encoding/json"

	"github.com/planrunner/runner/internal/bigjson"
	"github.com/planrunner/runner/internal/board"
)

// encodeResponseHeld is encodeResponse for the board: a large answer's
// text written as its key and held in h (board.Held), so the recording's
// JSON, 1.4 times an answer with newlines, is never built in memory;
// the board writes the text once in the file's "blobs".
func encodeResponseHeld(resp *Response) ([]byte, *board.Held, error) {
	if !board.Large(resp.Text) {
		b, err := encodeResponse(resp)
		return b, nil, err
	}
	h := new(board.Held)
	keyed := *resp
	keyed.Text = h.Key(resp.Text)
	b, err := json.Marshal(&keyed)
	return b, h, err
}

// encodeResponse is json.Marshal(resp), the same bytes, with the answer's
// text written once into a buffer of the final size: json.Marshal
// allocates about four times a large answer to record it.
// The rest of the response is small and encoded by json.Marshal, with an
// empty text that the answer's replaces (Text is its first field).
func encodeResponse(resp *Response) ([]byte, error) {
	if len(resp.Text) < bigjson.Large {
		return json.Marshal(resp)
	}
	rest := *resp
	rest.Text = ""
	b, err := json.Marshal(&rest)
	if err != nil {
		return nil, err
	}
	const empty = `{"text":""`
	if !bytes.HasPrefix(b, []byte(empty)) {
		return json.Marshal(resp) // Response changed shape: the slow way, still right
	}
	out := make([]byte, 0, len(`{"text":`)+bigjson.StringLen(resp.Text)+len(b)-len(empty))
	out = append(out, `{"text":`...)
	out = bigjson.AppendString(out, resp.Text)
	return append(out, b[len(empty):]...), nil
}
