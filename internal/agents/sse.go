package agents

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// sseEvent is one server-sent event: its type ("" when the server sent no
// `event:` line) and its data lines joined by newlines.
type sseEvent struct {
	Type string
	Data string
}

// readSSE reads server-sent events from r (the WHATWG event-stream
// format: `event:` and `data:` fields, a blank line ends an event, `:`
// starts a comment) and hands each to fn until r ends or fn fails. An
// event the stream ends in the middle of is not dispatched.
func readSSE(r io.Reader, fn func(sseEvent) error) error {
	br := bufio.NewReaderSize(r, 32<<10)
	var ev sseEvent
	var data strings.Builder
	has := false
	for {
		line, err := br.ReadString('\n')
		if err != nil && (err != io.EOF || line == "") {
			if err == io.EOF {
				return nil
			}
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if has {
				ev.Data = data.String()
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, has = sseEvent{}, false
			data.Reset()
			continue
		}
		if err == io.EOF {
			return nil // a last line without its blank line: the stream was cut there
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Type, has = value, true
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			has = true
		}
	}
}

// errStreamCut is a stream that ended before the event that says the
// answer is complete: a broken connection or a proxy's cut, retried.
var errStreamCut = errors.New("the stream ended before the answer was complete")

// openAIStreamErrorStatus is the HTTP status OpenAI answers an error of
// this type or code with outside a stream: an error sent inside a stream
// is then retried, or not, as that status would be. A server error, or
// one that names nothing, counts as a 500.
func openAIStreamErrorStatus(kind string) int {
	switch kind {
	case "", "server_error", "api_error":
		return 500
	case "rate_limit_error", "rate_limit_exceeded":
		return 429
	case "overloaded_error", "server_is_overloaded":
		return 503
	case "authentication_error", "invalid_api_key":
		return 401
	case "permission_error":
		return 403
	case "not_found_error", "model_not_found":
		return 404
	}
	return 400
}
