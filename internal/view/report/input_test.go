package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

const inputPlan = `version: 1
name: approve
steps:
  - {label: prep, type: command, run: "true"}
  - label: ok
    type: input
    prompt: "Ship <b>it</b>?"
    form:
      type: object
      properties:
        ship: {type: boolean, description: "ship now"}
        env: {type: string, enum: [prod, staging]}
      required: [ship]
  - {label: again, type: input, prompt: "Deploy ${{ vars.x }}?", form: {type: object, properties: {go: {type: boolean}}}}
`

// A waiting input shows its question, its form and the exact `runner
// answer` line; an answered one its question, the answer, who gave it
// and how long the run waited.
func TestReportInputs(t *testing.T) {
	form := json.RawMessage(`{"type":"object","properties":{"ship":{"type":"boolean","description":"ship now"},"env":{"type":"string","enum":["prod","staging"]}},"required":["ship"]}`)
	deadline := t0.Add(time.Hour)
	input := func(label, result string) board.StepRecord {
		r := step(label, 1, "", "succeeded", 30000, 0, result)
		r.Type = "input"
		return r
	}
	clock := board.Recording{Label: "ok", Visit: 1, Kind: "clock", Call: 1, Response: json.RawMessage(`"2026-11-23T10:00:00.010Z"`)}
	cases := []struct {
		name      string
		run       board.Run
		steps     []board.StepRecord
		recs      []board.Recording
		boardPath string
		want      []string
		not       []string
	}{
		{"waiting", board.Run{ID: "r1", Status: "waiting", Waiting: []board.WaitingInput{
			{Label: "ok", Visit: 1, Prompt: "Ship <b>it</b>?\n", Form: form, Since: t0, Deadline: &deadline}}},
			[]board.StepRecord{step("prep", 1, "", "succeeded", 0, 10, `{"output":""}`)}, nil, "/runs/it's here/blackboard.json",
			[]string{`<dd id="run-waiting"><a href="#waiting">1 input waiting for an answer</a></dd>`,
				`<div class="wait" id="wait-ok-1" data-label="ok" data-visit="1">`,
				`<span class="meta">since 2026-11-23 10:00:00 UTC (1m0s); takes its default or fails at 2026-11-23 11:00:00 UTC</span>`,
				`<pre class="question">Ship &lt;b&gt;it&lt;/b&gt;?</pre>`,
				`<tr><td><code>ship</code></td><td>boolean</td><td>yes</td><td>ship now</td></tr>`,
				`<tr><td><code>env</code></td><td>string, one of <code>[&#34;prod&#34;,&#34;staging&#34;]</code></td><td>no</td><td></td></tr>`,
				// runner answer '/runs/it'\''s here/blackboard.json' --step ok --json '{"ship": true, "env": "prod"}'
				`<pre class="cmd">runner answer &#39;/runs/it&#39;\&#39;&#39;s here/blackboard.json&#39; --step ok --json &#39;{&#34;ship&#34;: true, &#34;env&#34;: &#34;prod&#34;}&#39;</pre>`},
			nil},
		{"waiting, no path: the run id", board.Run{ID: "01RUNID", Status: "waiting", Waiting: []board.WaitingInput{
			{Label: "ok", Visit: 2, Prompt: "Ship?", Form: form, Since: t0}}},
			nil, nil, "",
			[]string{`<pre class="cmd">runner answer 01RUNID --step ok#2 --json`, `<h3>ok #2 <span class="badge waiting">waiting</span>`},
			[]string{"takes its default"}},
		{"answered", board.Run{ID: "r2", Status: "succeeded"},
			[]board.StepRecord{input("ok", `{"output":{"ship":true},"answer":{"ship":true},"by":"alice","default":false}`)},
			[]board.Recording{clock}, "",
			[]string{`<h3>question</h3><pre class="question">Ship &lt;b&gt;it&lt;/b&gt;?</pre>`,
				"<h3>answer</h3><pre class=\"answer\">{\n  &#34;ship&#34;: true\n}</pre>",
				`<div class="meta answered">answered by alice; the run waited 30.0s</div>`, `0ms, waited 30.0s`},
			[]string{`id="waiting"`, "as the plan writes it", `<details class="result">`}},
		{"default taken, prompt a template", board.Run{ID: "r3", Status: "succeeded"},
			[]board.StepRecord{input("again", `{"output":{"go":false},"answer":{"go":false},"by":"","default":true}`)},
			nil, "",
			[]string{`<pre class="question">Deploy ${{ vars.x }}?</pre><div class="meta">as the plan writes it</div>`,
				`<div class="meta answered">no answer in time: the default was taken</div>`},
			[]string{"waited"}},
		{"recorded prompt wins", board.Run{ID: "r4", Status: "succeeded"},
			[]board.StepRecord{func() board.StepRecord {
				r := input("again", `{"answer":{"go":true},"by":"bob"}`)
				r.Inputs = map[string]string{"prompt": "Deploy v2?"}
				return r
			}()}, nil, "",
			[]string{`<pre class="question">Deploy v2?</pre>`, "answered by bob"},
			[]string{"as the plan writes it"}},
		{"asked text recorded with the answer wins over the plan's template", board.Run{ID: "r5", Status: "succeeded"},
			[]board.StepRecord{input("again", `{"answer":{"go":true},"by":"carol"}`)},
			[]board.Recording{{Label: "again", Visit: 1, Kind: "input", Agent: "carol",
				Response: json.RawMessage(`{"answer":{"go":true},"by":"carol","asked":{"prompt":"Deploy <v3>?\n","fields":[{"name":"go","type":"boolean","description":"roll out to prod","required":true}]}}`)}}, "",
			[]string{`<h3>question</h3><pre class="question">Deploy &lt;v3&gt;?</pre><table class="form asked">`,
				`<tr><td><code>go</code></td><td>boolean</td><td>yes</td><td>roll out to prod</td></tr>`, "answered by carol"},
			[]string{"as the plan writes it", `<pre class="question">Deploy ${{`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := c.run
			run.PlanSource, run.PlanPath, run.StartedAt = inputPlan, "/p/plan.yaml", t0
			b := board.New(run)
			for _, s := range c.steps {
				if err := b.AddStep(s); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range c.recs {
				b.AddRecording(r)
			}
			var buf bytes.Buffer
			if err := WriteWith(&buf, b, Options{BoardPath: c.boardPath, Now: t0.Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
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

// The page finds each input visit's wait through one index of the run's
// clock readings: the recordings are looked through once per page, not
// once per input visit (a run of many inputs and many recordings cost
// their product), and every visit still shows how long it waited.
func TestReportInputsReadRecordingsOnce(t *testing.T) {
	for _, n := range []int{1, 10, 200} {
		b := board.New(board.Run{ID: "r", Status: "succeeded", PlanSource: inputPlan, PlanPath: "/p/plan.yaml", StartedAt: t0})
		for v := 1; v <= n; v++ {
			r := step("ok", v, "", "succeeded", 1000*v, 500, `{"answer":{"ship":true},"by":"alice"}`)
			r.Type = "input"
			if err := b.AddStep(r); err != nil {
				t.Fatal(err)
			}
			since, _ := json.Marshal(r.StartedAt.Add(time.Duration(v) * time.Millisecond))
			b.AddRecording(board.Recording{Label: "ok", Visit: v, Kind: "clock", Call: 1, Response: since})
			b.AddRecording(board.Recording{Label: "ok", Visit: v, Kind: "clock", Call: 2, Response: json.RawMessage(`"2020-01-01T00:00:00Z"`)})
		}
		before := clockRecordingsRead.Load()
		var buf bytes.Buffer
		if err := WriteWith(&buf, b, Options{Now: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if read, recs := clockRecordingsRead.Load()-before, int64(2*n); read != recs {
			t.Errorf("%d input visits: %d recordings looked through; want each of the %d once", n, read, recs)
		}
		if got := strings.Count(buf.String(), "the run waited"); got != n {
			t.Errorf("%d input visits: %d say how long the run waited", n, got)
		}
	}
}
