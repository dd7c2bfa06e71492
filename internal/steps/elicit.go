package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/agents/mcp"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
)

// What an MCP server asks a person during a tool call (an elicitation)
// waits for one as an input step does: the run saves and ends waiting,
// `runner answer --step LABEL/elicit-N` (or serve, or the MCP server)
// answers the form below, and the resumed visit goes through its
// recorded calls again up to the tool call, which is made again; the
// server's question is then answered from the board, and the call's
// result recorded, so a replay needs neither the server nor the person.
// N counts the visit's elicitations from 1.

// elicitMark is what follows a step's label in its elicitations' labels.
const elicitMark = "/elicit-"

// ElicitationLabel is the input label of elicitation n of step label's
// visit.
func ElicitationLabel(label string, n int) string { return label + elicitMark + strconv.Itoa(n) }

// IsElicitation reports whether an input label is an MCP server's
// elicitation during step label.
func IsElicitation(label, input string) bool {
	rest, ok := strings.CutPrefix(input, label+elicitMark)
	if !ok {
		return false
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}

// elicitations asks a person what MCP servers ask during one llm step
// visit's tool calls.
type elicitations struct {
	sc *engine.StepContext
	ss *agents.Session
	mu sync.Mutex
	n  int
}

// elicitHold is how long at most a tool call is held open for a
// person's answer to its server's question (runner answer, serve, the MCP
// server: they reach the running run) before the run stops to wait for
// it; half the call's remaining bound when that is shorter.
var elicitHold = time.Minute

// elicitPoll is how often a held call looks for the answer.
const elicitPoll = 100 * time.Millisecond

// ask answers e from the board: an answer recorded already, or one
// given while the call is held open (elicitHold). Otherwise the input
// keeps waiting, and ask returns engine.ErrWaiting, which stops the tool
// call: the run ends waiting, to go on when resumed.
func (el *elicitations) ask(ctx context.Context, e mcp.Elicitation) (mcp.ElicitAnswer, error) {
	el.mu.Lock()
	el.n++
	n := el.n
	el.mu.Unlock()
	sc := el.sc
	label := ElicitationLabel(sc.Label, n)
	form, action, left := elicitForm(e.Schema)
	answered := func() (mcp.ElicitAnswer, bool) {
		a, ok := FindAnswer(sc.Board.Recordings(), label, sc.Visit)
		if !ok {
			return mcp.ElicitAnswer{}, false
		}
		out := mcp.ElicitAnswer{Action: "accept", Content: map[string]any{}}
		for k, v := range a.Answer {
			if k == action {
				out.Action, _ = v.(string)
				continue
			}
			out.Content[k] = v
		}
		return out, true
	}
	if a, ok := answered(); ok {
		return a, nil
	}
	if _, found := waitingFor(sc.Board.Run(), label, sc.Visit); found {
		return el.hold(ctx, answered)
	}
	agent := el.ss.Agent()
	var p strings.Builder
	fmt.Fprintf(&p, "MCP server %s asks, during tool call %s.%s of agent %s (step %s):\n%s\n",
		e.Server, e.Server, e.Tool, agent.Name, VisitName(sc.Label, sc.Visit), e.Message)
	if e.Mode == "url" {
		fmt.Fprintf(&p, "It asks you to open %s and finish there.\n", e.URL)
	}
	fmt.Fprintf(&p, "Answer %s: accept (with the fields you give; those you leave out take their defaults), decline or cancel.", action)
	if len(left) > 0 {
		fmt.Fprintf(&p, "\nNot asked here (the server gets its default): %s.", strings.Join(left, ", "))
	}
	w := board.WaitingInput{Label: label, Visit: sc.Visit, Since: sc.Now(), Form: form, Prompt: p.String()}
	if err := sc.Board.UpdateRun(func(r *board.Run) {
		r.Waiting = append(append([]board.WaitingInput(nil), r.Waiting...), w)
	}); err != nil {
		return mcp.ElicitAnswer{}, err
	}
	sc.Log.Info().Str("mcp_server", e.Server).Str("tool", e.Tool).Str("input", label).Msg("an MCP server asks a person; the run waits for the answer")
	return el.hold(ctx, answered)
}

// hold waits for answered while the call may be held open, then stops
// it (engine.ErrWaiting).
func (el *elicitations) hold(ctx context.Context, answered func() (mcp.ElicitAnswer, bool)) (mcp.ElicitAnswer, error) {
	limit := elicitHold
	if dl, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(dl)/2)
	}
	if limit <= 0 {
		return mcp.ElicitAnswer{}, engine.ErrWaiting
	}
	end := time.NewTimer(limit)
	defer end.Stop()
	tick := time.NewTicker(elicitPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return mcp.ElicitAnswer{}, engine.ErrWaiting
		case <-end.C:
			el.sc.Log.Info().Dur("held", limit).Msg("no answer while the tool call was held open: the run stops to wait for it")
			return mcp.ElicitAnswer{}, engine.ErrWaiting
		case <-tick.C:
			if a, ok := answered(); ok {
				return a, nil
			}
		}
	}
}

// elicitForm is the input form of an elicitation's schema: a field that
// says the action (named action, or _action when the server asks a field
// of that name), then the server's fields that a form can ask, in its
// order, each with its default and whether the server requires it said
// in its description. The fields a form cannot ask (a list) are left,
// named.
func elicitForm(schema json.RawMessage) (form json.RawMessage, action string, left []string) {
	var doc struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	_ = json.Unmarshal(schema, &doc)
	var props map[string]json.RawMessage
	_ = json.Unmarshal(doc.Properties, &props)
	names, _ := keysInOrder(doc.Properties)
	action = "action"
	if _, clash := props[action]; clash {
		action = "_action"
	}
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	field := func(name string, f map[string]any) {
		k, _ := json.Marshal(name)
		v, _ := json.Marshal(f)
		b.WriteByte(',')
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	k, _ := json.Marshal(action)
	b.Write(k)
	b.WriteString(`:{"type":"string","enum":["accept","decline","cancel"],"description":"accept sends the fields to the server; decline or cancel sends none"}`)
	for _, name := range names {
		var p struct {
			Type        string `json:"type"`
			Title       string `json:"title"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
			OneOf       []struct {
				Const any    `json:"const"`
				Title string `json:"title"`
			} `json:"oneOf"`
			Default any `json:"default"`
		}
		if json.Unmarshal(props[name], &p) != nil {
			left = append(left, name)
			continue
		}
		switch p.Type {
		case "string", "number", "integer", "boolean":
		default:
			left = append(left, name)
			continue
		}
		f := map[string]any{"type": p.Type}
		desc := strings.TrimSpace(strings.Join([]string{p.Title, p.Description}, ": "))
		desc = strings.Trim(desc, ": ")
		enum := p.Enum
		if len(enum) == 0 && len(p.OneOf) > 0 {
			var titles []string
			for _, o := range p.OneOf {
				enum = append(enum, o.Const)
				titles = append(titles, fmt.Sprintf("%v: %s", o.Const, o.Title))
			}
			desc += " (" + strings.Join(titles, "; ") + ")"
		}
		if len(enum) > 0 {
			f["enum"] = enum
		}
		if p.Default != nil {
			d, _ := json.Marshal(p.Default)
			desc += " (default " + string(d) + ")"
		}
		for _, r := range doc.Required {
			if r == name {
				desc += " (required to accept)"
			}
		}
		if desc = strings.TrimSpace(desc); desc != "" {
			f["description"] = desc
		}
		field(name, f)
	}
	b.WriteString(`},"required":[`)
	b.Write(k)
	b.WriteString(`]}`)
	return b.Bytes(), action, left
}
