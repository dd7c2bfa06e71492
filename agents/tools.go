package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"strings"
	"time"

	"github.com/planrunner/runner/board"
)

// BoardTools are the tools `tools: [board]` offers: reading, writing
// (with TTL and compare-and-set) and listing board keys.
var BoardTools = []Tool{
	{
		Name:        "board_read",
		Description: "Read the live value of a key on the shared blackboard. Returns found, value and version (the number of writes to the key).",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"key":{"type":"string","description":"the key to read"}},"required":["key"],"additionalProperties":false}`),
	},
	{
		Name: "board_write",
		Description: "Write a value to a key on the shared blackboard. ttl (a duration such as \"10m\", or seconds) makes it expire. " +
			"expect_version makes the write conditional: it succeeds only if the key's current version equals it (0: the key must not exist yet).",
		Parameters: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"},"value":{"description":"any JSON value"},` +
			`"ttl":{"type":["string","number"],"description":"expiry, e.g. \"10m\" or 600"},` +
			`"expect_version":{"type":"integer","minimum":0,"description":"compare-and-set: the version the key must have"}},"required":["key","value"],"additionalProperties":false}`),
	},
	{
		Name:        "board_list",
		Description: "List the live keys of the shared blackboard that start with prefix (all keys without one), with their versions and authors.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"prefix":{"type":"string"}},"additionalProperties":false}`),
	},
}

// maxToolText bounds what a tool returns to the model.
const maxToolText = 64 << 10

// RunTool performs one of the model's tool calls and returns the tool turn
// that answers it. Problems (bad arguments, a key outside the agent's
// board patterns, a compare-and-set that lost) are answers the model sees,
// with IsError set, so it can correct itself; they do not fail the step.
func (ss *Session) RunTool(tc ToolCall) Message {
	m := Message{Role: RoleTool, ToolCallID: tc.ID, Name: tc.Name}
	out, err := ss.runTool(tc)
	if err != nil {
		m.Content, m.IsError = "error: "+err.Error(), true
		return m
	}
	b, err := json.Marshal(out)
	if err != nil {
		m.Content, m.IsError = "error: "+err.Error(), true
		return m
	}
	if len(b) > maxToolText {
		m.Content, m.IsError = fmt.Sprintf("error: the result is %d bytes, more than the %d a tool may return; read a smaller key or list with a prefix", len(b), maxToolText), true
		return m
	}
	m.Content = string(b)
	return m
}

func (ss *Session) runTool(tc ToolCall) (any, error) {
	if ss.board == nil {
		return nil, errors.New("no board")
	}
	args, ok := argsObject(tc.Args)
	if !ok {
		return nil, fmt.Errorf("the arguments of %s must be a JSON object, got %s", tc.Name, clip(string(tc.Args), 200))
	}
	perms := ss.agent.Spec.Board
	switch tc.Name {
	case "board_read":
		key, err := keyArg(args)
		if err != nil {
			return nil, err
		}
		if err := allowed(ss.agent.Name, "read", key, perms.Read); err != nil {
			return nil, err
		}
		e, found := ss.board.Get(key)
		if !found {
			return map[string]any{"key": key, "found": false}, nil
		}
		return map[string]any{"key": key, "found": true, "value": e.Content, "version": e.Version, "author": e.Author}, nil

	case "board_write":
		key, err := keyArg(args)
		if err != nil {
			return nil, err
		}
		if err := allowed(ss.agent.Name, "write", key, perms.Write); err != nil {
			return nil, err
		}
		value, ok := args["value"]
		if !ok {
			return nil, errors.New("board_write needs a value")
		}
		op := board.WriteOp{Key: key, Value: value, Author: ss.agent.Name, Label: ss.label, Role: RoleTool,
			ExpectVersion: -1, Meta: map[string]any{"visit": ss.visit, "call": ss.call, "tool_call_id": tc.ID}}
		if op.TTL, err = ttlArg(args["ttl"]); err != nil {
			return nil, err
		}
		if v, ok := args["expect_version"]; ok && v != nil {
			n, ok := v.(float64)
			if !ok || n < 0 || n != math.Trunc(n) {
				return nil, fmt.Errorf("expect_version must be a whole number, 0 or more (0: the key must not exist), got %v", v)
			}
			op.ExpectVersion = int64(n)
		}
		e, err := ss.board.Write(op)
		if err != nil {
			return nil, errors.New(strings.TrimPrefix(err.Error(), "board: "))
		}
		return map[string]any{"key": key, "ok": true, "version": e.Version}, nil

	case "board_list":
		prefix := ""
		if v, ok := args["prefix"]; ok && v != nil {
			if prefix, ok = v.(string); !ok {
				return nil, fmt.Errorf("prefix must be a string, got %v", v)
			}
		}
		keys := []map[string]any{}
		for _, k := range ss.board.Keys(prefix) {
			if allowed(ss.agent.Name, "read", k.Key, perms.Read) == nil {
				keys = append(keys, map[string]any{"key": k.Key, "version": k.Version, "author": k.Author})
			}
		}
		return map[string]any{"keys": keys}, nil
	}
	names := make([]string, len(BoardTools))
	for i, t := range BoardTools {
		names[i] = t.Name
	}
	return nil, fmt.Errorf("unknown tool %q (available: %s)", tc.Name, strings.Join(names, ", "))
}

func keyArg(args map[string]any) (string, error) {
	key, ok := args["key"].(string)
	if !ok || strings.TrimSpace(key) == "" {
		return "", errors.New("key must be a non-empty string")
	}
	return key, nil
}

// ttlArg reads a TTL given as a Go duration ("10m") or seconds.
func ttlArg(v any) (time.Duration, error) {
	switch t := v.(type) {
	case nil:
		return 0, nil
	case float64:
		if t < 0 || t > 1e9 {
			return 0, fmt.Errorf("ttl %v is out of range", t)
		}
		return time.Duration(t * float64(time.Second)), nil
	case string:
		d, err := time.ParseDuration(t)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("ttl %q is not a duration such as 30s or 10m", t)
		}
		return d, nil
	}
	return 0, fmt.Errorf("ttl must be a duration string or a number of seconds, got %v", v)
}

// allowed checks a key against an agent's board patterns (path.Match;
// none: any key).
func allowed(agent, op, key string, patterns []string) error {
	if len(patterns) == 0 {
		return nil
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, key); ok {
			return nil
		}
	}
	return fmt.Errorf("agent %s may not %s key %q (board.%s allows %s)", agent, op, key, op, strings.Join(patterns, ", "))
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
