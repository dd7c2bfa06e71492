package agents

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// readAnthropicStream reads a streamed Messages API answer (server-sent
// events: message_start, content_block_start/delta/stop, message_delta,
// message_stop, ping, error) and returns the Message it amounts to, as
// the non-streaming API would have sent it, so that one parser reads
// both and a recording does not say whether the answer streamed. Each
// piece of the answer's text goes to delta (nil: nowhere) as it comes.
// An error event is returned as its body with the HTTP status the API
// gives that error type otherwise; a stream that ends before
// message_stop is an error, and nothing of it is kept.
func readAnthropicStream(r io.Reader, delta func(string)) ([]byte, int, error) {
	var (
		msg     anResponse
		partial = map[int]*strings.Builder{} // tool_use input JSON by block
		started bool
	)
	block := func(i int) (*anBlock, error) {
		if i < 0 || i >= len(msg.Content) {
			return nil, fmt.Errorf("anthropic: the stream names content block %d, which it did not start", i)
		}
		return &msg.Content[i], nil
	}
	handle := func(event string, data []byte) (done bool, status int, err error) {
		var ev struct {
			Type    string          `json:"type"`
			Index   int             `json:"index"`
			Message json.RawMessage `json:"message"`
			Block   json.RawMessage `json:"content_block"`
			Delta   struct {
				Type         string `json:"type"`
				Text         string `json:"text"`
				PartialJSON  string `json:"partial_json"`
				Thinking     string `json:"thinking"`
				Signature    string `json:"signature"`
				StopReason   string `json:"stop_reason"`
				StopSequence string `json:"stop_sequence"`
			} `json:"delta"`
			Usage *anUsage `json:"usage"`
			Error *struct {
				Type string `json:"type"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return false, 0, fmt.Errorf("anthropic: malformed %s event (%v): %s", event, err, errorBody(200, data))
		}
		if ev.Type == "" {
			ev.Type = event
		}
		if ev.Type != "error" && ev.Type != "ping" && ev.Type != "message_start" && !started {
			return false, 0, fmt.Errorf("anthropic: the stream sent %s before message_start", ev.Type)
		}
		switch ev.Type {
		case "message_start":
			if err := json.Unmarshal(ev.Message, &msg); err != nil {
				return false, 0, fmt.Errorf("anthropic: malformed message_start (%v)", err)
			}
			started = true
		case "content_block_start":
			if ev.Index != len(msg.Content) {
				return false, 0, fmt.Errorf("anthropic: the stream started content block %d after %d blocks", ev.Index, len(msg.Content))
			}
			var b anBlock
			if err := json.Unmarshal(ev.Block, &b); err != nil {
				return false, 0, fmt.Errorf("anthropic: malformed content_block_start (%v)", err)
			}
			msg.Content = append(msg.Content, b)
		case "content_block_delta":
			b, err := block(ev.Index)
			if err != nil {
				return false, 0, err
			}
			switch ev.Delta.Type {
			case "text_delta":
				b.Text += ev.Delta.Text
				if delta != nil && ev.Delta.Text != "" {
					delta(ev.Delta.Text)
				}
			case "input_json_delta":
				if partial[ev.Index] == nil {
					partial[ev.Index] = &strings.Builder{}
				}
				partial[ev.Index].WriteString(ev.Delta.PartialJSON)
			case "thinking_delta":
				b.Thinking += ev.Delta.Thinking
			case "signature_delta":
				b.Signature += ev.Delta.Signature
			}
			// Other deltas (citations...) add nothing runner keeps.
		case "content_block_stop":
			b, err := block(ev.Index)
			if err != nil {
				return false, 0, err
			}
			if p := partial[ev.Index]; p != nil {
				b.Input = json.RawMessage(p.String())
				delete(partial, ev.Index)
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				msg.StopReason = ev.Delta.StopReason
			}
			if u := ev.Usage; u != nil {
				// Counts are cumulative; input counts come again only on
				// some models.
				if msg.Usage == nil {
					msg.Usage = &anUsage{}
				}
				msg.Usage.OutputTokens = u.OutputTokens
				if u.InputTokens > 0 {
					msg.Usage.InputTokens = u.InputTokens
				}
				if u.CacheCreationInputTokens > 0 {
					msg.Usage.CacheCreationInputTokens = u.CacheCreationInputTokens
				}
				if u.CacheReadInputTokens > 0 {
					msg.Usage.CacheReadInputTokens = u.CacheReadInputTokens
				}
			}
		case "message_stop":
			return true, 0, nil
		case "error":
			t := ""
			if ev.Error != nil {
				t = ev.Error.Type
			}
			return true, anthropicErrorStatus(t), nil
		}
		// ping, and event types added later, carry nothing runner needs.
		return false, 0, nil
	}

	br := bufio.NewReader(r)
	var event string
	var data []byte
	for {
		line, err := br.ReadString('\n')
		if err != nil && !(errors.Is(err, io.EOF) && line != "") {
			if errors.Is(err, io.EOF) {
				return nil, 0, fmt.Errorf("the stream ended before message_stop")
			}
			return nil, 0, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if len(data) == 0 {
				event = ""
				continue
			}
			done, status, herr := handle(event, data)
			if herr != nil {
				return nil, 0, herr
			}
			if status != 0 {
				return data, status, nil
			}
			if done {
				out, merr := json.Marshal(&msg)
				return out, 200, merr
			}
			event, data = "", nil
		case strings.HasPrefix(line, ":"): // a comment
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			v := strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
		if err != nil { // the last line had no newline: the stream is over
			return nil, 0, fmt.Errorf("the stream ended before message_stop")
		}
	}
}

// anthropicErrorStatus is the HTTP status the API answers an error type
// with outside a stream: a stream's error is then retried, or not, as
// that status would be. An unknown type counts as a server error.
func anthropicErrorStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return 400
	case "authentication_error":
		return 401
	case "billing_error":
		return 402
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "request_too_large":
		return 413
	case "rate_limit_error":
		return 429
	case "timeout_error":
		return 504
	case "overloaded_error":
		return 529
	}
	return 500
}
