package agents

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/plans"
)

func scriptAgent(responses ...plans.Response) *plans.Agent {
	return &plans.Agent{Name: "bot", Provider: "script", Responses: responses}
}

func TestScriptOrderAndLabels(t *testing.T) {
	h := newHarness(t, onePlan(scriptAgent(
		plans.Response{Text: "free 1"},
		plans.Response{Label: "review", Text: "review 1"},
		plans.Response{Text: "free 2"},
		plans.Response{Label: "review", Text: "review 2"},
	)), nil)
	// A label's own answers first, in order; then the unlabeled list.
	steps := []struct{ label, want string }{
		{"review", "review 1"}, {"write", "free 1"}, {"review", "review 2"}, {"review", "free 2"},
	}
	for _, s := range steps {
		resp, err := h.session(t, s.label, "bot").Send(context.Background(), user("q"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != s.want {
			t.Errorf("step %s got %q, want %q", s.label, resp.Text, s.want)
		}
	}
	_, err := h.session(t, "write", "bot").Send(context.Background(), user("q"))
	if err == nil || !strings.Contains(err.Error(), "script agent bot has no answer left for step write") {
		t.Errorf("running out: %v", err)
	}
}

func TestScriptToolCalls(t *testing.T) {
	h := newHarness(t, onePlan(scriptAgent(plans.Response{ToolCalls: []plans.ToolCall{
		{Name: "board_write", Args: map[string]any{"key": "k", "value": map[string]any{"n": 1}}},
	}})), nil)
	resp, err := h.session(t, "s", "bot").Send(context.Background(), user("q"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Args) != `{"key":"k","value":{"n":1}}` || resp.FinishReason != "tool_calls" {
		t.Errorf("response = %+v", resp)
	}
}

func TestScriptResumesWhereItStopped(t *testing.T) {
	plan := onePlan(scriptAgent(plans.Response{Text: "a"}, plans.Response{Text: "b"}))
	h := newHarness(t, plan, nil)
	if _, err := h.session(t, "one", "bot").Send(context.Background(), user("q")); err != nil {
		t.Fatal(err)
	}
	// A new Set on the same board (a resumed run) serves the next answer.
	h2 := newHarness(t, plan, nil)
	ss, _ := h2.set.Session(h.board, "two", 1, "bot")
	resp, err := ss.Send(context.Background(), user("q"))
	if err != nil || resp.Text != "b" {
		t.Errorf("after resume: %v, %+v", err, resp)
	}
}

func TestScriptResponsesFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "answers.yaml"), []byte("ask:\n  - from the file\n"), 0o644)
	plan := onePlan(&plans.Agent{Name: "bot", Provider: "script", ResponsesFile: "answers.yaml"})
	plan.Path = filepath.Join(dir, "plan.yaml")
	h := newHarness(t, plan, nil)
	resp, err := h.session(t, "ask", "bot").Send(context.Background(), user("q"))
	if err != nil || resp.Text != "from the file" {
		t.Errorf("%v, %+v", err, resp)
	}
}

// Answers keyed by a fan-out's step go to its items by index, whatever
// order the items ask in; an item's own answers come first, a second call
// of an item goes on to the unlabeled answers, and the default answers
// every call left over.
func TestScriptFanOutByItem(t *testing.T) {
	agent := scriptAgent(
		plans.Response{Label: "fan", Text: "fan 0"},
		plans.Response{Label: "fan", Text: "fan 1"},
		plans.Response{Label: "fan", Text: "fan 2"},
		plans.Response{Label: "fan", Text: "fan 3"},
		plans.Response{Label: "fan[1]", Text: "own 1"},
		plans.Response{Label: "ask", Text: "ask 0"},
		plans.Response{Label: "ask", Text: "ask 1"},
		plans.Response{Text: "free"},
		plans.Response{Label: "*", Text: "default"},
	)
	calls := []struct {
		label string
		visit int
		want  string
	}{
		{"fan[2]", 1, "fan 2"},
		{"fan[0]", 1, "fan 0"},
		{"fan[1]", 1, "own 1"},     // its own answer first
		{"fan[0]", 1, "free"},      // a second call of item 0
		{"blk[1]/ask", 1, "ask 1"}, // a step of a block's item
		{"blk[0]/ask", 1, "ask 0"},
		{"fan[0]", 2, "fan 3"},        // the next visit goes on after the answers used
		{"fan[1]", 2, "default"},      // past the list
		{"other", 1, "default"},       // no answers of its own
		{"call/fan[0]", 3, "default"}, // visit 3 starts past the list
	}
	h := newHarness(t, onePlan(agent), nil)
	sc := h.set.agents["bot"].p.(*script)
	for _, c := range calls {
		r, ok, err := sc.take(c.label, c.visit)
		if err != nil || !ok || r.Text != c.want {
			t.Errorf("%s visit %d: %q (%v, %v), want %q", c.label, c.visit, r.Text, ok, err, c.want)
		}
	}
}
