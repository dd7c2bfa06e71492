// Package agents talks to language models for runner's llm step.
//
// An agent (a plan's `agents:` entry) is a provider, a model and its
// parameters. A Set holds a plan's agents, checked before the run starts
// (a missing API key is an error then, not at step 7). A Session is one
// step visit's conversation with one agent: each call's messages and
// answer go on the board as entries, and the exchange itself goes into a
// board.Recording so that a replay can answer it without the network.
//
// The providers (openai, anthropic, script) speak their wire format over
// net/http themselves, so the recordings are byte-stable and every retry is
// ours to log and count; the a2a provider asks a remote agent through
// internal/a2a (the A2A SDK), and is recorded the same way. Requests and responses are kept in a
// provider-neutral form; that form is what is hashed and recorded.
package agents

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Request is one call to a model, in provider-neutral form. Its canonical
// JSON (see Canonical) is what a recording keeps and hashes: everything
// that decides the answer, and nothing secret (no key, headers or URL).
type Request struct {
	Model       string          `json:"model"`
	System      string          `json:"system,omitempty"`
	Messages    []Message       `json:"messages"`
	Tools       []Tool          `json:"tools,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"` // JSON Schema the answer must match
	Temperature *float64        `json:"temperature,omitempty"`
	MaxTokens   int             `json:"max_tokens,omitempty"`
	Seed        *int            `json:"seed,omitempty"`
	// ReasoningEffort is the agent's reasoning_effort ("": the model's).
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// Thinking is the token budget of extended thinking (0: off).
	Thinking int `json:"thinking,omitempty"`
	// Memory, for an agent with memory: conversation, says which leading
	// Messages are its earlier turns (memory.go).
	Memory *MemoryRef `json:"memory,omitempty"`
}

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // user, assistant or tool
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant turn makes.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and Name say which call a tool turn answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
	// IsError marks a tool result that is an error the model should see.
	IsError bool `json:"is_error,omitempty"`
	// Reasoning is an assistant turn's reasoning as its provider sent it
	// (Response.Reasoning), sent back as it came.
	Reasoning []json.RawMessage `json:"reasoning,omitempty"`
	// Thinking is an assistant turn's thinking, sent back as it came
	// (signed) where the provider requires it.
	Thinking []Thinking `json:"thinking,omitempty"`
}

// Thinking is one block of a model's extended thinking: its text and
// signature, or, redacted, the opaque data the provider gave.
type Thinking struct {
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Redacted  string `json:"redacted,omitempty"`
}

// Tool is a function the model may call.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments
}

// ToolCall is a call the model made. Args is the arguments as JSON; when a
// model sends arguments that are not JSON, Args is that text as a JSON
// string, so the tool can report the problem back instead of us failing.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Response is a model's answer, in provider-neutral form.
type Response struct {
	Text      string     `json:"text"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Reasoning is the provider's reasoning items, opaque (OpenAI's
	// Responses API `reasoning` items, encrypted content included): a
	// later turn of the conversation sends them back, as the API asks.
	Reasoning []json.RawMessage `json:"reasoning,omitempty"`
	// Thinking is the answer's extended thinking (Anthropic's), kept for
	// the next turn.
	Thinking []Thinking `json:"thinking,omitempty"`
	Usage    Usage      `json:"usage"`
	// FinishReason is normalised across providers: stop, length,
	// tool_calls, content_filter; anything else is passed on as sent.
	FinishReason string `json:"finish_reason"`
	Model        string `json:"model"`
	// FailedOver lists the agents whose calls failed before this answer's
	// agent, a fallback, took over (none: the step's own agent answered).
	FailedOver []Failure `json:"failed_over,omitempty"`
	// CostUSD is what the answer cost at its model's price when it was
	// made (0: no known price), kept so a saved run reports what it cost
	// then, whatever the price table says later.
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Priced: CostUSD is what the call cost the agent that answered, 0
	// included (a script agent costs nothing), and every total sums it
	// as it is. Without it (the price was not known, or the recording
	// does not say) a total prices the answer at its model's price.
	Priced bool `json:"priced,omitempty"`
	// Retries is how many HTTP retries getting this answer took (those of
	// failed agents before a fallback included), kept so a replay reports
	// the same step result.
	Retries int `json:"retries,omitempty"`
	// Reused: the answer was taken from an earlier run's recording
	// (--reuse), not asked of the model; a run's reuse counts are read
	// from its recordings where no one process saw every call (Temporal).
	Reused bool `json:"reused,omitempty"`
	// Batch is the id of the provider batch that answered the call (an
	// llm step with batch: true), priced at the batch price.
	Batch string `json:"batch,omitempty"`
}

// Usage counts tokens. InputTokens is every input token, cached or not (for
// Anthropic the sum of input, cache creation and cache read), so that the
// same number means the same thing for every provider.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
	// ReasoningTokens are the output tokens a reasoning model spent
	// thinking: part of OutputTokens, billed as output.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
}

// Total is what a call costs against limits.max_tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + v.InputTokens,
		OutputTokens:             u.OutputTokens + v.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + v.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + v.CacheReadInputTokens,
		ReasoningTokens:          u.ReasoningTokens + v.ReasoningTokens,
	}
}

// Canonical returns the request's canonical JSON and its SHA-256 (hex). Two
// requests that would get the same answer give the same bytes: object keys
// inside schemas and arguments are sorted and every value is compact.
func (r *Request) Canonical() ([]byte, string, error) {
	c := *r
	var err error
	if c.Schema, err = canonicalJSON(c.Schema); err != nil {
		return nil, "", err
	}
	c.Tools = append([]Tool(nil), r.Tools...)
	for i := range c.Tools {
		if c.Tools[i].Parameters, err = canonicalJSON(c.Tools[i].Parameters); err != nil {
			return nil, "", err
		}
	}
	c.Messages = append([]Message(nil), r.Messages...)
	for i := range c.Messages {
		m := &c.Messages[i]
		if len(m.ToolCalls) == 0 {
			continue
		}
		m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
		for j := range m.ToolCalls {
			m.ToolCalls[j].Args = normalizeArgs(m.ToolCalls[j].Args)
			if m.ToolCalls[j].Args, err = canonicalJSON(m.ToolCalls[j].Args); err != nil {
				return nil, "", err
			}
		}
	}
	// json.Marshal (HTML escaping on) on purpose: the board stores these
	// bytes as a json.RawMessage, which encoding/json re-emits with the same
	// escaping, so the saved request re-hashes to the same value.
	b, err := json.Marshal(c)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:]), nil
}

// canonicalJSON re-encodes a JSON value with sorted keys (nil stays nil).
func canonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // keep numbers exactly as written
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// normalizeArgs makes a model's tool arguments valid JSON: compact JSON as
// is, anything else (a truncated or malformed argument string) as a JSON
// string holding the text.
func normalizeArgs(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{}`)
	}
	var buf bytes.Buffer
	if json.Valid(raw) && json.Compact(&buf, raw) == nil {
		return buf.Bytes()
	}
	s, _ := json.Marshal(string(raw))
	return s
}

// argsObject decodes tool arguments into an object; ok is false when they
// are not one.
func argsObject(raw json.RawMessage) (map[string]any, bool) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}
