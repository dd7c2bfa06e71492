package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

const planSrc = `version: 1
name: shapes
steps:
  - {label: a, type: command, run: "true"}
  - label: checks
    parallel:
      - {label: vet, type: command, run: "true"}
      - {label: lint, type: command, run: "false", continue_on_error: true}
  - {label: b, type: command, run: "true", continue_on_error: true}
  - {label: last, type: command, run: "true"}
`

func step(label string, visit int, parent, status string, startMS, ms int, result string) board.StepRecord {
	return board.StepRecord{Label: label, Visit: visit, Type: "command", Parent: parent, Status: status,
		StartedAt: t0.Add(time.Duration(startMS) * time.Millisecond), FinishedAt: t0.Add(time.Duration(startMS+ms) * time.Millisecond),
		DurationMS: int64(ms), Result: json.RawMessage(result)}
}

func render(t *testing.T, run board.Run, steps []board.StepRecord, setup func(b *board.Board)) string {
	t.Helper()
	run.PlanSource, run.PlanPath, run.StartedAt = planSrc, "/p/plan.yaml", t0
	b := board.New(run)
	for _, s := range steps {
		if err := b.AddStep(s); err != nil {
			t.Fatal(err)
		}
	}
	if setup != nil {
		setup(b)
	}
	var buf bytes.Buffer
	if err := WriteAt(&buf, b, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return unlazy(t, buf.String())
}

// Failed, interrupted (never finished), resumed and replayed runs all
// render, each saying what it is.
func TestReportRunStates(t *testing.T) {
	done := t0.Add(3 * time.Second)
	ok := `{"output":"hi","exit_code":0,"stdout":"hi\n","stderr":""}`
	cases := []struct {
		name  string
		run   board.Run
		steps []board.StepRecord
		setup func(b *board.Board)
		want  []string
		not   []string
	}{
		{"failed", board.Run{ID: "r1", Status: "failed", Error: "step last: exit status 1", FinishedAt: &done},
			[]board.StepRecord{step("a", 1, "", "succeeded", 0, 10, ok),
				step("vet", 1, "checks", "succeeded", 20, 50, ok), step("lint", 1, "checks", "failed", 20, 30, ok),
				step("checks", 1, "", "succeeded", 15, 60, `{"output":{}}`),
				step("b", 1, "", "failed", 100, 10, ok), step("last", 1, "", "failed", 200, 10, ok)},
			nil,
			[]string{`id="run-status">failed</span>`, `<pre class="err" id="run-error">step last: exit status 1</pre>`,
				`<div class="kids" data-group="checks"><div class="kid" data-label="vet"`, // children beside their group
				// each child its own bar, on the run's scale (3 s): vet ran 20–70 ms, lint 20–50 ms
				`<a href="#step-vet-1">vet</a><span class="badge succeeded">succeeded</span><span class="meta">50ms</span><div class="track"><span class="succeeded" style="left:0.67%;width:1.67%"></span></div></div>`,
				`<div class="track"><span class="tolerated" style="left:0.67%;width:1.00%"></span></div></div>`,
				`data-label="lint" data-visit="1" data-status="failed" data-type="command"><a href="#step-lint-1">lint</a><span class="badge tolerated"`,
				`<a href="#step-b-1">b</a><span class="badge tolerated"`,
				`data-label="last" data-visit="1" data-type="command" data-status="failed" open>`, "3.0s"},
			[]string{"never-ran"}},
		{"interrupted, never finished", board.Run{ID: "r2", Status: "running"},
			[]board.StepRecord{step("a", 1, "", "succeeded", 0, 10, ok), step("vet", 1, "checks", "canceled", 20, 5, `null`)},
			nil,
			[]string{`id="run-status">running</span>`, "not finished", `<p id="never-ran">Never ran: <code>checks</code>, <code>lint</code>, <code>b</code>, <code>last</code></p>`,
				`<span class="badge canceled">canceled</span>`},
			nil},
		{"resumed", board.Run{ID: "r3", Status: "succeeded", FinishedAt: &done},
			[]board.StepRecord{step("a", 1, "", "succeeded", 0, 10, ok), step("b", 1, "", "interrupted", 20, 10, `null`),
				step("b", 1, "", "succeeded", 1000, 10, ok), step("last", 1, "", "succeeded", 1020, 10, ok)},
			nil,
			[]string{"resumed: some visits ran again", `<span class="badge interrupted">interrupted</span>`},
			nil},
		{"replay with board", board.Run{ID: "r4", Status: "succeeded", ReplayOf: "/runs/r1/blackboard.json", FinishedAt: &done},
			[]board.StepRecord{step("a", 1, "", "succeeded", 0, 10, ok)},
			func(b *board.Board) {
				b.Write(board.WriteOp{Key: "plan/status", Value: map[string]any{"ok": true}, TTL: 10 * time.Minute, Author: "coder", ExpectVersion: -1})
				b.Write(board.WriteOp{Key: "plan/status", Value: "v2", Author: "coder", Topic: "plans", ExpectVersion: -1})
				b.AddRecording(board.Recording{Label: "a", Visit: 1, Kind: "llm", Call: 1, Agent: "coder",
					Request:  json.RawMessage(`{"model":"m1","messages":[{"role":"user","content":"q"}]}`),
					Response: json.RawMessage(`{"text":"ans","usage":{"input_tokens":10,"output_tokens":4},"model":"m1-2024","cost_usd":0.5}`)})
				b.AddRecording(board.Recording{Label: "a", Visit: 1, Kind: "llm", Call: 2, Agent: "coder",
					Request:  json.RawMessage(`{"model":"m2","messages":[]}`),
					Response: json.RawMessage(`{"text":"","tool_calls":[{"name":"board_read","args":{"key":"x"}}],"usage":{"input_tokens":1,"output_tokens":2},"model":"m2"}`)})
			},
			[]string{`<dd id="lineage">replay of <code>/runs/r1/blackboard.json</code></dd>`,
				`<td><code>plan/status</code></td><td class="n">2</td><td>coder</td>`,
				`<tr data-model="m1-2024"><td>m1-2024</td><td class="n">1</td><td class="n">10</td><td class="n">4</td><td class="n">14</td><td class="n">$0.50</td></tr>`,
				`<tr data-model="m2"><td>m2</td><td class="n">1</td><td class="n">1</td><td class="n">2</td><td class="n">3</td><td class="n">—</td></tr>`,
				`tool call <code>board_read</code> <code>{&#34;key&#34;:&#34;x&#34;}</code>`, `topic plans`, `<p id="topics"><code>plans</code> (1)</p>`},
			nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := render(t, c.run, c.steps, c.setup)
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %s", w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(out, w) {
					t.Errorf("report has %s", w)
				}
			}
		})
	}
}

// The timeline lists a group's row before its children, whatever order
// the records were saved in (a group finishes after its children).
func TestReportGroupAboveChildren(t *testing.T) {
	ok := `{"output":""}`
	out := render(t, board.Run{ID: "r"}, []board.StepRecord{
		step("vet", 1, "checks", "succeeded", 20, 50, ok), step("checks", 1, "", "succeeded", 15, 60, ok),
		step("vet", 2, "checks", "succeeded", 120, 50, ok), step("checks", 2, "", "succeeded", 115, 60, ok)}, nil)
	tl := out[strings.Index(out, `id="timeline"`):strings.Index(out, "<h2>Steps</h2>")]
	i1, k1 := strings.Index(tl, `class="row" data-label="checks" data-visit="1"`), strings.Index(tl, `data-label="vet" data-visit="1"`)
	i2, k2 := strings.Index(tl, `class="row" data-label="checks" data-visit="2"`), strings.Index(tl, `data-label="vet" data-visit="2"`)
	if !(i1 >= 0 && i1 < k1 && k1 < i2 && i2 < k2) {
		t.Errorf("timeline order wrong: %d %d %d %d\n%s", i1, k1, i2, k2, tl)
	}
}

var write10k = flag.String("write10k", "", "write the 10,000-step report of BenchmarkReport10k to this file")

// A run of 10,000 step visits: 2,500 each of command, llm (with its
// recorded exchange), apply_diff and test.
func board10k(tb testing.TB) *board.Board {
	b := board.New(board.Run{ID: "big", Status: "succeeded", PlanPath: "/p/plan.yaml", StartedAt: t0,
		PlanSource: "version: 1\nname: big\nsteps:\n  - {label: cmd, type: command, run: x}\n  - {label: ask, type: llm, agent: a, prompt: x}\n  - {label: apply, type: apply_diff, diff: x}\n  - {label: test, type: test}\n"})
	diff := "--- a/f.go\n+++ b/f.go\n@@ -1,3 +1,3 @@\n package f\n-var x = 1\n+var x = 2\n \n"
	for i := 0; i < 10000; i++ {
		visit := i/4 + 1
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		rec := board.StepRecord{Visit: visit, Status: "succeeded", StartedAt: at, FinishedAt: at.Add(8 * time.Millisecond), DurationMS: 8}
		switch i % 4 {
		case 0:
			rec.Label, rec.Type = "cmd", "command"
			rec.Inputs = map[string]string{"run": "go vet ./..."}
			rec.Result = json.RawMessage(fmt.Sprintf(`{"output":"line %d","exit_code":0,"stdout":"line %d\n","stderr":""}`, i, i))
		case 1:
			rec.Label, rec.Type = "ask", "llm"
			rec.Inputs = map[string]string{"prompt": "Fix the failing test, attempt " + fmt.Sprint(visit)}
			rec.Result = json.RawMessage(`{"output":"` + strings.ReplaceAll(diff, "\n", `\n`) + `","usage":{"input_tokens":300,"output_tokens":80},"model":"gpt-4o-mini","calls":1}`)
			b.AddRecording(board.Recording{Label: "ask", Visit: visit, Kind: "llm", Call: 1, Agent: "coder",
				Request:  json.RawMessage(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Fix the failing test"}]}`),
				Response: json.RawMessage(`{"text":"` + strings.ReplaceAll(diff, "\n", `\n`) + `","usage":{"input_tokens":300,"output_tokens":80},"model":"gpt-4o-mini"}`)})
		case 2:
			rec.Label, rec.Type = "apply", "apply_diff"
			rec.Inputs = map[string]string{"diff": diff}
			rec.Result = json.RawMessage(`{"output":"applied","files":[{"path":"f.go","op":"modify","added":1,"removed":1}]}`)
		case 3:
			rec.Label, rec.Type, rec.Status, rec.Error = "test", "test", "failed", "FAILED: 1 of 3 tests failed"
			rec.Result = json.RawMessage(`{"output":"FAILED","outcome":"failed","counts":{"total":3,"passed":2,"failed":1},"failures":[{"id":"TestX","file":"f_test.go","line":12,"message":"got 1, want 2","excerpt":"f_test.go:12: got 1, want 2"}]}`)
		}
		b.AddStep(rec)
		b.Append(board.Entry{Section: "steps", Role: "step", Author: "runner", Label: rec.Label, Content: "output"})
	}
	return b
}

func BenchmarkReport10k(b *testing.B) {
	bd := board10k(b)
	var buf bytes.Buffer
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if err := WriteAt(&buf, bd, t0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len())/1e6, "MB")
	if *write10k != "" {
		os.WriteFile(*write10k, buf.Bytes(), 0o644)
	}
}

// TestReportEditsAsDiffAndFirstTry: an apply_diff step given
// SEARCH/REPLACE blocks shows them as a diff, and the header counts the
// model's answers applied on the first try, per agent and format.
func TestReportEditsAsDiffAndFirstTry(t *testing.T) {
	sr := "app.py\n<<<<<<< SEARCH\nold line\n=======\nnew line\n>>>>>>> REPLACE"
	bad := "app.py\n<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE"
	llm := func(visit, start int, out string) board.StepRecord {
		s := step("fix", visit, "", "succeeded", start, 10, "")
		s.Type = "llm"
		r, _ := json.Marshal(map[string]any{"output": out, "agent": "coder"})
		s.Result = r
		return s
	}
	apply := func(visit, start int, status, diff string) board.StepRecord {
		s := step("apply", visit, "", status, start, 10, `{"files":[]}`)
		s.Type = "apply_diff"
		s.Inputs = map[string]string{"diff": diff}
		return s
	}
	html := render(t, board.Run{ID: "r1", Status: "succeeded"}, []board.StepRecord{
		llm(1, 0, bad), apply(1, 20, "failed", bad),
		llm(2, 40, sr), apply(2, 60, "succeeded", sr),
	}, nil)
	for _, w := range []string{
		`<td>coder</td><td>search_replace</td><td class="n">1 of 2</td><td class="n">50%</td>`,
		"@@ SEARCH/REPLACE block 1 @@",
		`<div class="hdr">--- a/app.py`,
		`<div class="add">&#43;new line</div>`,
	} {
		if !strings.Contains(html, w) {
			t.Errorf("the report lacks %q", w)
		}
	}
	if strings.Contains(html, "&lt;&lt;&lt;&lt;&lt;&lt;&lt; SEARCH") && !strings.Contains(html, "@@ SEARCH/REPLACE") {
		t.Error("the blocks are shown as they are, not as a diff")
	}
}

// serve's live page shows a streamed answer under way beneath the steps
// running now, escaped; a running step with none shows none.
func TestReportLiveAnswer(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		running []runs.RunningStep
		want    string
	}{
		{"streaming", []runs.RunningStep{{Label: "fix", Visit: 2, Since: t0, Answer: "--- a/x.go\n+if a < b {"}},
			`fix #2: the model's answer so far</summary><pre>--- a/x.go` + "\n" + `&#43;if a &lt; b {</pre>`},
		{"no answer yet", []runs.RunningStep{{Label: "fix", Visit: 1, Since: t0}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := board.New(board.Run{ID: "r", Status: board.StatusRunning, StartedAt: t0})
			var buf bytes.Buffer
			err := WriteWith(&buf, b, Options{Now: t0.Add(time.Minute), Live: &Live{Script: "/app.js", CSRF: "c", Back: "/", Graph: "/g", Events: "/e", Running: tc.running}})
			if err != nil {
				t.Fatal(err)
			}
			page := unlazy(t, buf.String())
			if got := strings.Contains(page, `class="streaming"`); got != (tc.want != "") || !strings.Contains(page, tc.want) {
				t.Errorf("page does not show %q:\n%s", tc.want, page)
			}
		})
	}
}
