package agents

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/planrunner/runner/internal/sys/mask"
)

// oaChunk is one event of a streamed Chat Completions answer (a
// "chat.completion.chunk"), or an error the server sends in its place.
type oaChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// readChatStream assembles a streamed Chat Completions answer: text and
// refusal deltas, tool calls whose arguments come in pieces, the finish
// reason, and the usage a last chunk of its own brings (stream_options
// include_usage). The text goes to show as it comes. The answer is whole
// once a finish reason has come and the stream ended ("data: [DONE]", or
// the end of the body at servers that omit it); a stream that ends before
// the finish reason was cut.
func readChatStream(r io.Reader, m *mask.Masker, show io.Writer) (*Response, error) {
	out := &Response{}
	var text, refusal []byte
	type call struct {
		id, name string
		args     []byte
	}
	calls := map[int]*call{}
	finish := ""
	done := false
	err := readSSE(r, func(ev sseEvent) error {
		if done {
			return nil
		}
		if ev.Data == "[DONE]" {
			done = true
			return nil
		}
		data := m.Bytes([]byte(ev.Data))
		var c oaChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("a malformed event in the stream (%v): %s", err, errorBody(200, data))
		}
		if c.Error != nil {
			e := openAIError(200, data)
			return &streamError{api: e, retryable: c.Error.Type == "" || c.Error.Type == "server_error" || c.Error.Type == "rate_limit_error" || c.Error.Type == "overloaded_error"}
		}
		if c.Model != "" {
			out.Model = c.Model
		}
		if c.Usage != nil {
			out.Usage = c.Usage.usage()
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				continue
			}
			d := ch.Delta
			if d.Content != nil {
				text = append(text, *d.Content...)
				if show != nil {
					io.WriteString(show, m.String(*d.Content))
				}
			}
			if d.Refusal != nil {
				refusal = append(refusal, *d.Refusal...)
			}
			for _, tc := range d.ToolCalls {
				k := calls[tc.Index]
				if k == nil {
					k = &call{}
					calls[tc.Index] = k
				}
				if tc.ID != "" {
					k.id = tc.ID
				}
				if tc.Function.Name != "" {
					k.name = tc.Function.Name
				}
				k.args = append(k.args, tc.Function.Arguments...)
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				finish = *ch.FinishReason
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if finish == "" {
		return nil, errStreamCut
	}
	out.Text, out.FinishReason = string(text), normalizeFinish(finish)
	if out.Text == "" && len(refusal) > 0 {
		out.Text, out.FinishReason = string(refusal), "content_filter"
	}
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for n, i := range idx {
		k := calls[i]
		id := k.id
		if id == "" {
			id = fmt.Sprintf("call_%d", n+1)
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: k.name, Args: normalizeArgs(k.args)})
	}
	return out, nil
}

// maskResponse masks the run's secrets in an answer put together from a
// stream, whose pieces were masked one by one: a secret split across two
// pieces is masked here.
func maskResponse(r *Response, m *mask.Masker) *Response {
	if r == nil {
		return nil
	}
	r.Text = m.String(r.Text)
	for i := range r.ToolCalls {
		r.ToolCalls[i].Args = normalizeArgs(m.Bytes(r.ToolCalls[i].Args))
	}
	return r
}
