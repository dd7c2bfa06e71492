package agents

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/plans"
)

// Seed 003's debate: two agents write the same key without reading each
// other. The judge's board view and board_read show the disagreement
// (both values, both authors) without any plan wiring; once the judge
// has read the key and written its resolution, the mark is gone. A
// hand-off through board_write records no conflict at all.
func TestConflictShownToAgents(t *testing.T) {
	pro, con, judge := scriptAgent(plans.Response{Text: "x"}), scriptAgent(plans.Response{Text: "x"}), scriptAgent(plans.Response{Text: "x"})
	pro.Name, con.Name, judge.Name = "pro", "con", "judge"
	h := newHarness(t, onePlan(pro, con, judge), nil)
	write := func(ss *Session, args string) Message {
		t.Helper()
		m := ss.RunTool(ToolCall{ID: "c", Name: "board_write", Args: json.RawMessage(args)})
		if m.IsError {
			t.Fatalf("board_write %s: %s", args, m.Content)
		}
		return m
	}
	write(h.session(t, "argue", "pro"), `{"key":"verdict","value":"ship it"}`)
	write(h.session(t, "argue", "con"), `{"key":"verdict","value":"hold the release"}`)

	js := h.session(t, "judge", "judge")
	view := h.set.View(h.board, "judge", nil, ViewLimits{})
	for _, want := range []string{"verdict (con, v2): hold the release", "CONFLICT", "pro's v1", "ship it"} {
		if !strings.Contains(view, want) {
			t.Errorf("judge's view lacks %q:\n%s", want, view)
		}
	}
	read := js.RunTool(ToolCall{ID: "r", Name: "board_read", Args: json.RawMessage(`{"key":"verdict"}`)})
	for _, want := range []string{`"conflict":{`, `"overwritten_author":"pro"`, `"overwritten_value":"ship it"`, `"written_by":"con"`} {
		if !strings.Contains(read.Content, want) {
			t.Errorf("board_read lacks %s: %s", want, read.Content)
		}
	}
	write(js, `{"key":"verdict","value":"ship it, behind a flag"}`)
	if n := len(h.board.Conflicts("verdict")); n != 1 {
		t.Errorf("the judge's resolution, written after reading, made %d conflicts; want the first one only", n)
	}
	view = h.set.View(h.board, "judge", nil, ViewLimits{})
	if strings.Contains(view, "CONFLICT") {
		t.Errorf("resolved key still marked:\n%s", view)
	}
	read = js.RunTool(ToolCall{ID: "r2", Name: "board_read", Args: json.RawMessage(`{"key":"verdict"}`)})
	if strings.Contains(read.Content, "conflict") {
		t.Errorf("board_read of a resolved key: %s", read.Content)
	}

	// Seed 001's hand-off: con picks up pro's task knowingly.
	write(h.session(t, "plan", "pro"), `{"key":"task:q4","value":{"status":"pending"}}`)
	write(h.session(t, "pick", "con"), `{"key":"task:q4","value":{"status":"in_progress"},"handoff":true}`)
	if n := len(h.board.Conflicts("task:q4")); n != 0 {
		t.Errorf("a hand-off recorded %d conflicts", n)
	}
	if e, _ := h.board.Get("task:q4"); e.Meta["handoff"] == nil {
		t.Errorf("the hand-off entry does not say whom it took the key from: %+v", e.Meta)
	}
	bad := js.RunTool(ToolCall{ID: "b", Name: "board_write", Args: json.RawMessage(`{"key":"task:q4","value":1,"handoff":"yes"}`)})
	if !bad.IsError || !strings.Contains(bad.Content, "handoff must be true or false") {
		t.Errorf("handoff \"yes\": %+v", bad)
	}
}
