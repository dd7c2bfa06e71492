package plans

import (
	"gopkg.in/yaml.v3"
)

// Memory modes of an agent (`memory:`).
const (
	// MemoryNone: every step visit starts a fresh conversation (the
	// default).
	MemoryNone = "none"
	// MemoryConversation: a visit's request starts with the agent's
	// earlier turns in the run, oldest dropped first past MaxTokens.
	MemoryConversation = "conversation"
)

// DefaultMemoryTokens bounds a conversation memory that names no
// max_tokens: large enough for a loop of a few dozen short turns, well
// inside every current model's context window.
const DefaultMemoryTokens = 32000

// AgentMemory is an agent's `memory:`: the short form `memory:
// conversation`, or `{mode: conversation, max_tokens: N}`.
type AgentMemory struct {
	Mode      string // MemoryNone or MemoryConversation
	MaxTokens int    // the bound of system prompt, memory and prompt together
	Node      *yaml.Node
}

// On reports whether the agent keeps a conversation across visits.
func (m *AgentMemory) On() bool { return m != nil && m.Mode == MemoryConversation }

var memoryModes = []string{MemoryConversation, MemoryNone}

func parseMemory(r *Reporter, n *yaml.Node, what string) *AgentMemory {
	what += ": memory"
	n = Resolve(n)
	m := &AgentMemory{Mode: MemoryNone, Node: n}
	mode := func(v *yaml.Node) {
		s, ok := String(r, v, what+".mode")
		if !ok {
			return
		}
		if !contains(memoryModes, s) {
			r.At(v, "%s: unknown mode %q (one of conversation, none)%s", what, s, Suggest(s, memoryModes))
			return
		}
		m.Mode = s
	}
	if n != nil && n.Kind == yaml.ScalarNode {
		mode(n)
		if m.Mode == MemoryConversation {
			m.MaxTokens = DefaultMemoryTokens
		}
		return m
	}
	var hasMode bool
	for _, f := range Fields(r, n, what) {
		switch f.Key {
		case "mode":
			hasMode = true
			mode(f.Value)
		case "max_tokens":
			if v, ok := Int(r, f.Value, what+".max_tokens"); ok {
				if v < 1 {
					r.At(f.Value, "%s.max_tokens must be at least 1", what)
				}
				m.MaxTokens = v
			}
		default:
			Unknown(r, f, what, []string{"mode", "max_tokens"})
		}
	}
	if !hasMode && n != nil && n.Kind == yaml.MappingNode {
		r.At(n, "%s needs a mode (conversation or none)", what)
	}
	if m.Mode == MemoryConversation && m.MaxTokens == 0 {
		m.MaxTokens = DefaultMemoryTokens
	}
	return m
}
