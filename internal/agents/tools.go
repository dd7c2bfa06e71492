package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// BoardTools are the tools `tools: [board]` offers: reading, writing
// (with TTL, compare-and-set and a topic), listing board keys, and reading
// a topic. An agent that subscribes to topics sees, through every one of
// them, only those topics and keys without one.
var BoardTools = []Tool{
	{
		Name:        "board_read",
		Description: "Read the live value of a key on the shared blackboard. Returns found, value, version (the number of writes to the key), author and topic.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"key":{"type":"string","description":"the key to read"}},"required":["key"],"additionalProperties":false}`),
	},
	{
		Name: "board_write",
		Description: "Write a value to a key on the shared blackboard. ttl (a duration such as \"10m\", or seconds) makes it expire. " +
			"expect_version makes the write conditional: it succeeds only if the key's current version equals it (0: the key must not exist yet). " +
			"topic publishes the write on a topic channel (default: the key's prefix before ':', if any). " +
			"handoff: true takes the key over from its current author knowingly (you pick up their task): no conflict is recorded.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"},"value":{"description":"any JSON value"},` +
			`"topic":{"type":"string","description":"the topic channel to publish on"},` +
			`"ttl":{"type":["string","number"],"description":"expiry, e.g. \"10m\" or 600"},` +
			`"expect_version":{"type":"integer","minimum":0,"description":"compare-and-set: the version the key must have"},` +
			`"handoff":{"type":"boolean","description":"take the key over from its current author knowingly"}},"required":["key","value"],"additionalProperties":false}`),
	},
	{
		Name: "board_lock",
		Description: "Take a lease on a key of the shared blackboard (a lock: only you hold it) for ttl, or renew the one you hold. " +
			"While another agent holds it, the answer says who and until when: try again later. " +
			"A lease you stop renewing expires, so renew it before its ttl runs out while you still need it.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string","description":"the key to lock, e.g. lock:deploy"},` +
			`"ttl":{"type":["string","number"],"description":"how long the lease lasts unless renewed, e.g. \"30s\" or 30"}},"required":["key","ttl"],"additionalProperties":false}`),
	},
	{
		Name:        "board_unlock",
		Description: "Release a lease you hold on a key of the shared blackboard (see board_lock).",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"],"additionalProperties":false}`),
	},
	{
		Name:        "board_list",
		Description: "List the live keys of the shared blackboard that start with prefix (all keys without one), with their versions, authors and topics.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"prefix":{"type":"string"}},"additionalProperties":false}`),
	},
	{
		Name: "board_topic",
		Description: "Topic channels of the shared blackboard. action \"list\": the topics you see, with their number of live keys. " +
			"action \"read\": the newest live keys of one topic (at most limit, default 20), with values. Your subscriptions are set by the plan.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"action":{"enum":["list","read"]},"topic":{"type":"string"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["action"],"additionalProperties":false}`),
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
		if err := ss.mayRead(key); err != nil {
			return nil, err
		}
		if e, found := ss.board.GetAt(key, ss.now); found {
			if err := ss.seesTopic(key, e.Topic); err != nil {
				return nil, err
			}
		}
		e, found, err := ss.read(ss.agent.Name, key)
		if err != nil {
			return nil, errors.New(strings.TrimPrefix(err.Error(), "board: "))
		}
		if !found {
			return map[string]any{"key": key, "found": false}, nil
		}
		if err := ss.seesTopic(key, e.Topic); err != nil {
			return nil, err // written between the two reads
		}
		out := withTopic(map[string]any{"key": key, "found": true, "value": e.Content, "version": e.Version, "author": e.Author}, e.Topic)
		if c, ok := openConflict(ss.board, key); ok {
			out["conflict"] = c
		}
		return out, nil

	case "board_write":
		key, err := keyArg(args)
		if err != nil {
			return nil, err
		}
		if err := allowed(ss.agent.Name, "write", key, perms.Write); err != nil {
			return nil, err
		}
		if err := ss.inScope("write", key); err != nil {
			return nil, err
		}
		if ss.set.privateKey(key, ss.agent.Name) {
			return nil, fmt.Errorf("key %q is another agent's private note; write under %s%s/ for your own", key, NotesPrefix, ss.agent.Name)
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
		if v, ok := args["topic"]; ok && v != nil {
			if op.Topic, ok = v.(string); !ok {
				return nil, fmt.Errorf("topic must be a string, got %v", v)
			}
		}
		if v, ok := args["handoff"]; ok && v != nil {
			if op.Handoff, ok = v.(bool); !ok {
				return nil, fmt.Errorf("handoff must be true or false, got %v", v)
			}
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
		ss.noteWrite(key)
		return withTopic(map[string]any{"key": key, "ok": true, "version": e.Version}, e.Topic), nil

	case "board_lock", "board_unlock":
		return ss.leaseTool(tc, args)

	case "board_list":
		prefix := ""
		if v, ok := args["prefix"]; ok && v != nil {
			if prefix, ok = v.(string); !ok {
				return nil, fmt.Errorf("prefix must be a string, got %v", v)
			}
		}
		keys := []map[string]any{}
		for _, k := range ss.board.KeysAt(prefix, ss.now) {
			if ss.mayRead(k.Key) != nil {
				continue
			}
			if e, ok := ss.board.GetAt(k.Key, ss.now); ok && Subscribed(ss.agent.Spec.Subscribe, e.Topic) {
				keys = append(keys, withTopic(map[string]any{"key": k.Key, "version": e.Version, "author": e.Author}, e.Topic))
			}
		}
		return map[string]any{"keys": keys}, nil

	case "board_topic":
		return ss.topicTool(args)
	}
	names := make([]string, len(BoardTools))
	for i, t := range BoardTools {
		names[i] = t.Name
	}
	return nil, fmt.Errorf("unknown tool %q (available: %s)", tc.Name, strings.Join(names, ", "))
}

// leaseTool is board_lock and board_unlock: the lease's owner is the
// agent, so one agent cannot release another's.
func (ss *Session) leaseTool(tc ToolCall, args map[string]any) (any, error) {
	key, err := keyArg(args)
	if err != nil {
		return nil, err
	}
	if err := allowed(ss.agent.Name, "write", key, ss.agent.Spec.Board.Write); err != nil {
		return nil, err
	}
	if err := ss.inScope("write", key); err != nil {
		return nil, err
	}
	op := board.WriteOp{Key: key, Author: ss.agent.Name, Label: ss.label, Role: RoleTool, Lease: board.LeaseUnlock,
		Meta: map[string]any{"visit": ss.visit, "call": ss.call, "tool_call_id": tc.ID}}
	if tc.Name == "board_lock" {
		op.Lease = board.LeaseLock
		if op.TTL, err = ttlArg(args["ttl"]); err != nil {
			return nil, err
		}
		if op.TTL <= 0 {
			return nil, errors.New("board_lock needs a ttl (such as \"30s\"): a lease nobody renews must expire")
		}
	}
	e, err := ss.board.Write(op)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "board: "))
	}
	if tc.Name == "board_unlock" {
		return map[string]any{"key": key, "ok": true, "released": true}, nil
	}
	until := e.TS.Add(op.TTL).UTC().Format(time.RFC3339)
	return map[string]any{"key": key, "ok": true, "owner": ss.agent.Name, "version": e.Version, "until": until}, nil
}

// mayRead checks a key against the agent's read patterns and other
// agents' private notes.
func (ss *Session) mayRead(key string) error {
	if err := allowed(ss.agent.Name, "read", key, ss.agent.Spec.Board.Read); err != nil {
		return err
	}
	if err := ss.inScope("read", key); err != nil {
		return err
	}
	if ss.set.privateKey(key, ss.agent.Name) {
		return fmt.Errorf("key %q is another agent's private note", key)
	}
	return nil
}

// seesTopic refuses a key on a topic the agent does not subscribe to.
// The answer names the topic, never the value.
func (ss *Session) seesTopic(key, topic string) error {
	subs := ss.agent.Spec.Subscribe
	if Subscribed(subs, topic) {
		return nil
	}
	return fmt.Errorf("key %q is on topic %q; agent %s subscribes to %s only", key, topic, ss.agent.Name, strings.Join(subs, ", "))
}

// topicTool is board_topic: the topics an agent sees, or the newest keys
// of one of them.
func (ss *Session) topicTool(args map[string]any) (any, error) {
	action, _ := args["action"].(string)
	subs := ss.agent.Spec.Subscribe
	var live []board.Entry
	for _, k := range ss.board.Keys("") {
		if ss.mayRead(k.Key) != nil {
			continue
		}
		if e, ok := ss.board.Get(k.Key); ok && e.Topic != "" && Subscribed(subs, e.Topic) {
			live = append(live, e)
		}
	}
	switch action {
	case "list":
		counts := map[string]int{}
		for _, e := range live {
			counts[e.Topic]++
		}
		for _, t := range subs {
			counts[t] += 0 // a subscribed topic with no keys yet is still one
		}
		topics := []map[string]any{}
		for _, t := range sortedKeys(counts) {
			topics = append(topics, map[string]any{"topic": t, "keys": counts[t]})
		}
		return map[string]any{"topics": topics, "subscribed": subs}, nil
	case "read":
		topic, _ := args["topic"].(string)
		if strings.TrimSpace(topic) == "" {
			return nil, errors.New(`board_topic read needs a topic`)
		}
		if !Subscribed(subs, topic) {
			return nil, fmt.Errorf("agent %s does not subscribe to topic %q (it subscribes to %s)", ss.agent.Name, topic, strings.Join(subs, ", "))
		}
		limit := 20
		if v, ok := args["limit"].(float64); ok && v >= 1 && v == math.Trunc(v) {
			limit = min(int(v), 100)
		}
		var on []board.Entry
		for _, e := range live {
			if e.Topic == topic {
				on = append(on, e)
			}
		}
		sort.SliceStable(on, func(i, j int) bool { return on[i].Seq > on[j].Seq })
		left := max(len(on)-limit, 0)
		on = on[:len(on)-left]
		keys := []map[string]any{}
		for _, e := range on {
			keys = append(keys, map[string]any{"key": e.Key, "value": e.Content, "version": e.Version, "author": e.Author})
		}
		return map[string]any{"topic": topic, "keys": keys, "left_out": left}, nil
	}
	return nil, fmt.Errorf(`action must be "list" or "read", got %v`, args["action"])
}

// withTopic adds an entry's topic to a tool answer, when it has one.
func withTopic(m map[string]any, topic string) map[string]any {
	if topic != "" {
		m["topic"] = topic
	}
	return m
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func keyArg(args map[string]any) (string, error) {
	key, ok := args["key"].(string)
	if !ok || strings.TrimSpace(key) == "" {
		return "", errors.New("key must be a non-empty string")
	}
	return key, nil
}

// TTLArg reads a TTL a model gave as a Go duration ("10m") or seconds.
func TTLArg(v any) (time.Duration, error) { return ttlArg(v) }

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
