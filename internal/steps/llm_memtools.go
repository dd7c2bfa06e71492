package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/memstore"
)

// Memory that outlives the run (tools: [memory]): memory_write,
// memory_read and memory_list over a store in the workdir
// (internal/memstore). They are offered as the plan's tools are, so the
// session records each call and its answer: a replay, --reuse and a fork
// take the answers from the recording and never open the store.

var memoryTools = []agents.Tool{
	{
		Name: "memory_write",
		Description: "Remember a value under a key in the long-term memory, which outlives this run: later runs in this workspace read it. " +
			"ttl (a duration such as \"24h\", or seconds) makes it expire. Returns the key's version.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"},"value":{"description":"any JSON value"},` +
			`"ttl":{"type":["string","number"],"description":"expiry, e.g. \"24h\" or 86400"}},"required":["key","value"],"additionalProperties":false}`),
	},
	{
		Name:        "memory_read",
		Description: "Read a key of the long-term memory: found, value, version, when and by whom (agent, run, step) it was written.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"],"additionalProperties":false}`),
	},
	{
		Name:        "memory_list",
		Description: "List the keys of the long-term memory that start with prefix (all without one), with versions and provenance, not values.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"prefix":{"type":"string"}},"additionalProperties":false}`),
	},
}

// offerMemoryTools hands the session the memory tools over the step's
// store.
func (s *llmStep) offerMemoryTools(sc *engine.StepContext, ss *agents.Session, agent string) ([]agents.Tool, error) {
	if !s.memTools {
		return nil, nil
	}
	path, err := memstore.Path(sc.Workdir, s.memStore)
	if err != nil {
		return nil, err
	}
	st := memstore.Open(path)
	by := memstore.Provenance{Agent: agent, RunID: sc.RunID, Label: sc.Label, Visit: sc.Visit}
	var offer []agents.PlanTool
	for _, t := range memoryTools {
		offer = append(offer, agents.PlanTool{Tool: t, Kind: "memory", Run: func(_ context.Context, args map[string]any) (string, bool, error) {
			return memoryCall(st, t.Name, args, by)
		}})
	}
	return ss.AddPlanTools(offer)
}

// memoryCall performs one memory tool call; a problem is an answer the
// model reads.
func memoryCall(st *memstore.Store, name string, args map[string]any, by memstore.Provenance) (string, bool, error) {
	var out any
	var err error
	key, _ := args["key"].(string)
	switch name {
	case "memory_write":
		d, terr := agents.TTLArg(args["ttl"])
		if terr != nil {
			return "error: " + terr.Error(), true, nil
		}
		var e memstore.Entry
		e, err = st.Write(key, args["value"], d, by)
		out = map[string]any{"key": key, "ok": true, "version": e.Version}
	case "memory_read":
		e, found, rerr := st.Read(key)
		err = rerr
		if found {
			out = map[string]any{"key": key, "found": true, "entry": e}
		} else {
			out = map[string]any{"key": key, "found": false}
		}
	case "memory_list":
		prefix, _ := args["prefix"].(string)
		es, lerr := st.List(prefix)
		err = lerr
		keys := []map[string]any{}
		for _, e := range es {
			keys = append(keys, map[string]any{"key": e.Key, "version": e.Version, "agent": e.Agent, "run_id": e.RunID, "written": e.Written})
		}
		out = map[string]any{"keys": keys}
	}
	if err != nil {
		return "error: " + strings.TrimPrefix(err.Error(), "board: "), true, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", name, err)
	}
	return string(b), false, nil
}
