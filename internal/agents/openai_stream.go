package agents

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
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

// readChatStream reads a streamed Chat Completions answer and returns the
// chat.completion it amounts to, as the non-streaming API would have sent
// it, so that one parser reads both and a recording does not say whether
// the answer streamed: text and refusal deltas, tool calls whose
// arguments come in pieces, the finish reason, and the usage a last chunk
// of its own brings (stream_options include_usage). Each piece of text
// goes to delta (nil: nowhere) as it comes. The answer is whole once a
// finish reason has come and the stream ended ("data: [DONE]", or the end
// of the body at servers that omit it); a stream that ends before the
// finish reason was cut, an error, and nothing of it is kept. An error
// event is returned as its body with the status the API gives that error
// otherwise.
func readChatStream(r io.Reader, delta func(string)) ([]byte, int, error) {
	var out oaResponse
	var text, refusal []byte
	type call struct {
		id, name string
		args     []byte
	}
	calls := map[int]*call{}
	finish := ""
	done := false
	var failed []byte
	failStatus := 0
	err := readSSE(r, func(ev sseEvent) error {
		if done || failed != nil {
			return nil
		}
		if ev.Data == "[DONE]" {
			done = true
			return nil
		}
		data := []byte(ev.Data)
		var c oaChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("a malformed event in the stream (%v): %s", err, errorBody(200, data))
		}
		if c.Error != nil {
			kind := c.Error.Type
			if code, ok := c.Error.Code.(string); ok && kind == "" {
				kind = code
			}
			failed, failStatus = data, openAIStreamErrorStatus(kind)
			return nil
		}
		if c.Model != "" {
			out.Model = c.Model
		}
		if c.Usage != nil {
			out.Usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				continue
			}
			d := ch.Delta
			if d.Content != nil {
				text = append(text, *d.Content...)
				if delta != nil && *d.Content != "" {
					delta(*d.Content)
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
	switch {
	case failed != nil:
		return failed, failStatus, nil
	case err != nil:
		return nil, 0, err
	case finish == "":
		return nil, 0, errStreamCut
	}
	out.Choices = make([]oaChoice, 1)
	ch := &out.Choices[0]
	ch.FinishReason = finish
	ch.Message.Content, _ = json.Marshal(string(text))
	if len(refusal) > 0 {
		s := string(refusal)
		ch.Message.Refusal = &s
	}
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		k := calls[i]
		tc := oaToolCall{ID: k.id, Type: "function"}
		tc.Function.Name = k.name
		tc.Function.Arguments, _ = json.Marshal(string(k.args))
		ch.Message.ToolCalls = append(ch.Message.ToolCalls, tc)
	}
	body, err := json.Marshal(&out)
	return body, 200, err
}
