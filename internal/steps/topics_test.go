package steps

import (
	"encoding/json"
	"strings"
	"testing"
)

// An agent subscribed to one topic never sees another topic's entries in
// the requests it sends: not in the board view of an llm or coordinate
// prompt, not in any answer of its board tools (checked on the recorded
// requests, which hold every tool result).
func TestSubscribedAgentSeesOnlyItsTopics(t *testing.T) {
	src := `version: 1
agents:
  sec:
    provider: script
    subscribe: [security]
    responses:
      look:
        - tool_calls:
            - {name: board_list}
            - {name: board_read, args: {key: "perf:latency"}}
            - {name: board_read, args: {key: "tuning"}}
            - {name: board_read, args: {key: "notes/perf/idea"}}
            - {name: board_read, args: {key: "security:cve"}}
            - {name: board_topic, args: {action: list}}
            - {name: board_topic, args: {action: read, topic: perf}}
            - {name: board_topic, args: {action: read, topic: security}}
            - {name: board_write, args: {key: "security:fix", value: "patch it", topic: security}}
        - reviewed
      team: ["sec view", "sec again"]
  perf:
    provider: script
    responses: {team: ["perf view"]}
steps:
  - {label: w1, type: board, op: write, key: "security:cve", value: "SEC-VALUE-7"}
  - {label: w2, type: board, op: write, key: "perf:latency", value: "PERF-VALUE-42"}
  - {label: w3, type: board, op: write, key: tuning, topic: perf, value: "PERF-TOPIC-VALUE"}
  - {label: w4, type: board, op: write, key: plain, value: "PLAIN-VALUE"}
  - {label: w5, type: board, op: write, key: notes/perf/idea, value: "PERF-PRIVATE"}
  - {label: look, type: llm, agent: sec, tools: [board], view: true, prompt: "Review the findings."}
  - {label: team, type: coordinate, agents: [sec, perf], max_rounds: 3, prompt: "Discuss"}
`
	b, err := llmRunPlan(t, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sec, perf []string
	for _, r := range b.Recordings() {
		switch r.Agent {
		case "sec":
			sec = append(sec, string(r.Request))
		case "perf":
			perf = append(perf, string(r.Request))
		}
	}
	if len(sec) != 4 || len(perf) != 1 {
		t.Fatalf("%d requests of sec, %d of perf", len(sec), len(perf))
	}
	all := strings.Join(sec, "\n")
	for _, hidden := range []string{"PERF-VALUE-42", "PERF-TOPIC-VALUE", "PERF-PRIVATE"} {
		if strings.Contains(all, hidden) {
			t.Errorf("agent sec saw %s", hidden)
		}
	}
	for _, seen := range []string{"SEC-VALUE-7", "PLAIN-VALUE", `key \"perf:latency\" is on topic \"perf\"; agent sec subscribes to security only`,
		`agent sec does not subscribe to topic \"perf\"`, `key \"notes/perf/idea\" is another agent's private note`, `{\"keys\":1,\"topic\":\"security\"}`} {
		if !strings.Contains(all, seen) {
			t.Errorf("agent sec's requests lack %s", seen)
		}
	}
	// Its view of the llm step and of the coordinate step both had
	// security's key and the plain one.
	for _, i := range []int{0, 2, 3} {
		var req struct{ Messages []struct{ Content string } }
		json.Unmarshal([]byte(sec[i]), &req)
		if v := req.Messages[0].Content; !strings.Contains(v, "security:cve (runner, v1): SEC-VALUE-7") || !strings.Contains(v, "you see the topics security") {
			t.Errorf("request %d of sec has no view of its topic:\n%s", i+1, v)
		}
	}
	// The other agent, subscribed to nothing, sees every topic.
	if !strings.Contains(perf[0], "PERF-VALUE-42") || !strings.Contains(perf[0], "SEC-VALUE-7") || !strings.Contains(perf[0], `Your private notes ===\nidea: PERF-PRIVATE`) {
		t.Errorf("perf's request: %s", perf[0])
	}
	if e, ok := b.Get("security:fix"); !ok || e.Topic != "security" || e.Author != "sec" {
		t.Errorf("the tool's write: %+v", e)
	}
}

// A plan's own hand-off: the second board step takes task:q4 over from
// the orchestrator with handoff: true and records no conflict, while the
// same write without it does; handoff on a read is refused at load.
func TestBoardStepHandoff(t *testing.T) {
	for _, tc := range []struct {
		handoff   string
		conflicts int
	}{{"", 1}, {", handoff: true", 0}} {
		src := `version: 1
steps:
  - {label: make, type: board, op: write, key: "task:q4", author: orchestrator, value: pending}
  - {label: take, type: board, op: write, key: "task:q4", author: analyst, value: in_progress` + tc.handoff + `}
`
		b, err := llmRunPlan(t, src, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(b.Conflicts("task:q4")); n != tc.conflicts {
			t.Errorf("take%s: %d conflicts, want %d", tc.handoff, n, tc.conflicts)
		}
	}
	if msg := llmCompileErr(t, "version: 1\nsteps:\n  - {label: r, type: board, op: read, key: k, handoff: true}\n"); !strings.Contains(msg, "3:56: handoff is only for op: write") {
		t.Errorf("handoff on a read: %s", msg)
	}
}
