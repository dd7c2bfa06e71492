// Package boardview presents a blackboard as text for people: the
// markdown document of docs/live-board.md (swarm-blackboard.md), printed
// by `runner board FILE show`, served by the MCP server, and kept current
// in a file while a run goes on.
//
// It reads the board through its exported methods only, so the board's
// logic and storage know nothing of it. Every value it shows goes
// through internal/view/mdtext, so a key, value, label or error reads as
// written and cannot add markup or a link. It may import the standard
// library, internal/board and internal/view/mdtext; nothing that runs or
// serves a plan.
package boardview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/view/mdtext"
)

// Markdown writes b as the markdown document of docs/live-board.md (swarm-blackboard.md):
// active tasks from the task: keys, the knowledge cache (every other live
// key, as its BlackboardEntry JSON), coordination signals from the signal:
// keys, and the execution history (the steps, and the trace: keys). Runner
// adds the run's header and the conflicts, when there are any.
func Markdown(w io.Writer, b *board.Board) error {
	var buf bytes.Buffer
	run := b.Run()
	now := b.Now()
	updated := run.StartedAt
	if n := b.Len(); n > 0 {
		updated = b.Query(board.Filter{Limit: 1})[0].TS
	}
	if run.FinishedAt != nil && run.FinishedAt.After(updated) {
		updated = *run.FinishedAt
	}
	fmt.Fprintf(&buf, "# Swarm Blackboard\nLast Updated: %s\n\n", iso(updated))
	fmt.Fprintf(&buf, "Run %s: %s", cell(run.ID), cell(string(run.Status)))
	if run.PlanPath != "" {
		fmt.Fprintf(&buf, " (plan %s)", cell(run.PlanPath))
	}
	buf.WriteString("\n")
	if run.Error != "" {
		fmt.Fprintf(&buf, "Error: %s\n", cell(oneLine(run.Error)))
	}

	var tasks, signals, traces, cache []board.Entry
	for _, k := range b.Keys("") {
		e, ok := b.Get(k.Key)
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(k.Key, "task:"):
			tasks = append(tasks, e)
		case strings.HasPrefix(k.Key, "signal:"):
			signals = append(signals, e)
		case strings.HasPrefix(k.Key, "trace:"):
			traces = append(traces, e)
		default:
			cache = append(cache, e)
		}
	}

	buf.WriteString("\n## Active Tasks\n| TaskID | Agent | Status | Started | Description |\n|--------|-------|--------|---------|-------------|\n")
	for _, e := range tasks {
		agent := field(e.Content, "assigned_to", "agent", "for")
		if agent == "" {
			agent = e.Author
		}
		started := field(e.Content, "started_at")
		if started == "" {
			started = iso(e.TS)
		}
		desc := field(e.Content, "description", "desc", "summary")
		if s, ok := e.Content.(string); ok {
			desc = s
		}
		fmt.Fprintf(&buf, "| %s | %s | %s | %s | %s |\n", cell(strings.TrimPrefix(e.Key, "task:")), cell(agent),
			cell(orDash(field(e.Content, "status"))), cell(started), cell(orDash(desc)))
	}

	buf.WriteString("\n## Knowledge Cache\n")
	for _, e := range cache {
		fmt.Fprintf(&buf, "### %s\n", cell(e.Key))
		writeEntryJSON(&buf, e)
	}

	buf.WriteString("\n## Coordination Signals\n")
	if len(signals) > 0 {
		buf.WriteString("| Signal | Agent | Status | Current Task | Last Heartbeat | State | Expires |\n|--------|-------|--------|--------------|----------------|-------|---------|\n")
	}
	for _, e := range signals {
		agent := field(e.Content, "agent_id", "agent")
		if agent == "" {
			agent = e.Author
		}
		beat := field(e.Content, "last_heartbeat")
		if beat == "" {
			beat = iso(e.TS)
		}
		status := field(e.Content, "status")
		if s, ok := e.Content.(string); ok {
			status = s
		}
		exp := "-"
		if e.TTL != nil {
			left := e.TS.Add(time.Duration(*e.TTL * float64(time.Second))).Sub(now).Round(time.Second)
			exp = "in " + left.String()
		}
		fmt.Fprintf(&buf, "| %s | %s | %s | %s | %s | %s | %s |\n", cell(strings.TrimPrefix(e.Key, "signal:")), cell(agent),
			cell(orDash(status)), cell(orDash(field(e.Content, "current_task"))), cell(beat), board.HeartbeatState(e, now), cell(exp))
	}

	buf.WriteString("\n## Execution History\n")
	steps := b.Steps()
	if len(steps) > 0 {
		buf.WriteString("| Step | Visit | Status | Started | ms | Output / Error |\n|------|-------|--------|---------|----|----------------|\n")
	}
	for _, s := range steps {
		var res struct{ Output any }
		json.Unmarshal(s.Result, &res)
		text := oneLine(text(res.Output))
		if s.Error != "" {
			text = oneLine(s.Error)
		}
		fmt.Fprintf(&buf, "| %s | %d | %s | %s | %d | %s |\n", cell(s.Label), s.Visit, cell(s.Status), iso(s.StartedAt), s.DurationMS, cell(text))
	}
	for _, e := range traces {
		fmt.Fprintf(&buf, "### %s\n", cell(e.Key))
		writeEntryJSON(&buf, e)
	}

	if cs := b.Conflicts(""); len(cs) > 0 {
		buf.WriteString("\n## Conflicts\n| Key | Written by | Value | Overwrote | Value |\n|-----|------------|-------|-----------|-------|\n")
		for _, c := range cs {
			m, _ := c.Content.(map[string]any)
			wr, _ := m["written"].(map[string]any)
			ov, _ := m["overwritten"].(map[string]any)
			fmt.Fprintf(&buf, "| %s | %s v%s | %s | %s v%s | %s |\n", cell(text(m["key"])),
				cell(text(wr["author"])), cell(text(wr["version"])), cell(oneLine(text(wr["value"]))),
				cell(text(ov["author"])), cell(text(ov["version"])), cell(oneLine(text(ov["value"]))))
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// writeEntryJSON writes e as a BlackboardEntry (docs/live-board.md), in a JSON fence.
func writeEntryJSON(buf *bytes.Buffer, e board.Entry) {
	var ttl any
	if e.TTL != nil {
		ttl = *e.TTL
	}
	// Keys in the seed's order (a map would sort them).
	parts := []struct {
		k string
		v any
	}{{"key", e.Key}, {"value", e.Content}, {"source_agent", e.Author}, {"timestamp", iso(e.TS)}, {"ttl", ttl}, {"version", e.Version}}
	var body strings.Builder
	body.WriteString("{\n")
	for i, p := range parts {
		v, err := json.MarshalIndent(p.v, "  ", "  ")
		if err != nil {
			v = []byte(`null`)
		}
		fmt.Fprintf(&body, "  %q: %s", p.k, v)
		if i < len(parts)-1 {
			body.WriteByte(',')
		}
		body.WriteByte('\n')
	}
	body.WriteString("}\n")
	buf.WriteString(mdtext.Fence("json", body.String()))
}

// field is the first of names that the value (a JSON object) has, as text.
func field(v any, names ...string) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	for _, n := range names {
		if x, ok := m[n]; ok && x != nil {
			return text(x)
		}
	}
	return ""
}

func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

func iso(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func oneLine(s string) string {
	line, _, more := strings.Cut(strings.TrimSpace(s), "\n")
	if len(line) > 120 {
		line, more = line[:120], true
	}
	if more {
		line += " …"
	}
	return line
}

// cell is a value as Markdown text on one line (mdtext.Text): in a
// table cell, a heading or a line, it cannot add markup or a link.
func cell(s string) string { return mdtext.Text(s) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
