package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// A model call's texts are each in the page exactly once, escaped, in a
// short run and in a long one: a system prompt sent with every call is
// written with the first call and the others link to it (the link names
// where it is and opens it), as is the history an agent with memory sends
// again; a text under sameTextMin is written where it is sent.
func TestReportCallTextsOnce(t *testing.T) {
	system := strings.Repeat(`You fix <b>Go</b> tests & say "why". `, 8) // 296 bytes
	for _, n := range []int{3, 600} {
		t.Run(fmt.Sprint(n, " steps"), func(t *testing.T) {
			var steps []board.StepRecord
			var texts []string
			out := render(t, board.Run{ID: "r", Status: "succeeded"}, nil, func(b *board.Board) {
				for i := 1; i <= n; i++ {
					s := step("ask", i, "", "succeeded", i*10, 5, `{"output":"ok"}`)
					s.Type = "llm"
					steps = append(steps, s)
					b.AddStep(s)
					// Two calls: the second sends the first's long prompt
					// and its answer again (an agent with memory).
					long := fmt.Sprintf("Visit %d: fix <%s> & explain. ", i, "TestX") + strings.Repeat("more context ", 20)
					short := fmt.Sprintf(`answer <%d> "a"`, i)
					second := fmt.Sprintf("now check <%d>", i)
					texts = append(texts, long, short, second, fmt.Sprintf("done %d & ok", i))
					req1, _ := json.Marshal(map[string]any{"model": "m", "system": system, "messages": []map[string]any{{"role": "user", "content": long}}})
					req2, _ := json.Marshal(map[string]any{"model": "m", "system": system, "messages": []map[string]any{
						{"role": "user", "content": long}, {"role": "assistant", "content": short}, {"role": "user", "content": second}}})
					resp1, _ := json.Marshal(map[string]any{"text": short, "model": "m"})
					resp2, _ := json.Marshal(map[string]any{"text": fmt.Sprintf("done %d & ok", i), "model": "m"})
					b.AddRecording(board.Recording{Label: "ask", Visit: i, Kind: "llm", Call: 1, Agent: "a", Request: req1, Response: resp1})
					b.AddRecording(board.Recording{Label: "ask", Visit: i, Kind: "llm", Call: 2, Agent: "a", Request: req2, Response: resp2})
				}
			})
			esc := template.HTMLEscapeString
			if c := strings.Count(out, esc(system)); c != 1 {
				t.Errorf("the system prompt is in the page %d times, want once", c)
			}
			if strings.Contains(out, "<b>Go</b>") {
				t.Error("the system prompt is not escaped")
			}
			// Once each: the long prompt (sent twice), and the short texts,
			// whose second sending is short enough to be written out.
			if c := strings.Count(out, esc(texts[0])); c != 1 {
				t.Errorf("the first call's prompt is in the page %d times, want once", c)
			}
			for i, x := range texts {
				want := 1
				if i%4 == 1 {
					want = 2 // the short answer, sent back with the second call
				}
				if c := strings.Count(out, ">"+esc(x)+"<"); c != want {
					t.Errorf("%q is in the page %d times, want %d", x, c, want)
					break
				}
			}
			// Each copy not written is a link to the one that is, which
			// says what and where it is.
			links := regexp.MustCompile(`<a class="same" href="#(text-\d+)">same text as ([^<]*) \((\d+) bytes\)</a>`).FindAllStringSubmatch(out, -1)
			if want := 2*n - 1 + n; len(links) != want { // the system prompt 2n-1 times, each long prompt once
				t.Errorf("%d links to texts written earlier, want %d", len(links), want)
			}
			for _, l := range links {
				if strings.Count(out, `id="`+l[1]+`"`) != 1 {
					t.Errorf("link to %s, which is not in the page once", l[1])
				}
			}
			if len(links) > 0 && links[0][2] != "the system prompt of ask, call 1" {
				t.Errorf("the first link says %q", links[0][2])
			}
		})
	}
}

// A closed step's body is compact but says all it did: a test's counts on
// one line (counts the tool did not give left out), a diff's files one a
// line, and a long board section as aligned lines of text, escaped.
func TestReportCompactBodies(t *testing.T) {
	test := step("test", 1, "", "failed", 0, 10, `{"output":"FAILED","outcome":"failed","counts":{"total":3,"passed":2,"failed":1},"failures":[{"id":"TestX","file":"f_test.go","line":12,"message":"got 1"}]}`)
	test.Type = "test"
	apply := step("apply", 1, "", "succeeded", 20, 10, `{"output":"applied","files":[{"path":"a<b>.go","op":"modify","added":3,"removed":1},{"path":"new.go","op":"create","added":9,"removed":0}]}`)
	apply.Type = "apply_diff"
	out := render(t, board.Run{ID: "r"}, []board.StepRecord{test, apply}, func(b *board.Board) {
		for i := 0; i < listingMin; i++ {
			b.Append(board.Entry{Section: "steps", Role: "step", Author: "runner", Label: "test", Content: fmt.Sprintf("entry <%d> & more", i)})
		}
		b.Append(board.Entry{Section: "notes", Role: "note", Author: "me", Content: "one <line>"})
		b.Append(board.Entry{Section: "notes", Role: "note", Author: "me", Content: "two\nlines"})
	})
	for _, w := range []string{
		`<p class="counts">3 total · 2 passed · 1 failed</p>`,
		`<li><code>a&lt;b&gt;.go</code> modify, +3 −1</li><li><code>new.go</code> create, +9 −0</li>`,
		`<details class="section" data-section="steps"><summary>steps (200 entries)</summary>` + "\n" + `<pre class="listing">seq  time`,
		"runner  test       entry &lt;0&gt; &amp; more\n",
		"runner  test       entry &lt;199&gt; &amp; more\n",
		`<td class="c">one &lt;line&gt;</td>`, "<td><pre>two\nlines</pre></td>",
	} {
		if !strings.Contains(out, w) {
			i := strings.Index(out, `<pre class="listing">`)
			t.Errorf("the page lacks %q:\n%.300s", w, out[max(i, 0):])
		}
	}
	for _, w := range []string{" skipped</p>", " · skipped", `<table class="counts">`, "<th>file</th>"} {
		if strings.Contains(out, w) {
			t.Errorf("the page has %q", w)
		}
	}
}

// A long page's timeline rows and steps come in boxes of chunkSize, which
// the browser lays out only near the screen; every visit is in one box,
// in order, and a short page has no boxes.
func TestReportLongPageInBoxes(t *testing.T) {
	for _, n := range []int{10, 250} {
		var steps []board.StepRecord
		for i := 1; i <= n; i++ {
			steps = append(steps, step("s", i, "", "succeeded", i*10, 5, `{"output":"ok"}`))
		}
		out := render(t, board.Run{ID: "r"}, steps, nil)
		tl := out[strings.Index(out, `id="timeline"`):strings.Index(out, "<h2>Steps</h2>")]
		st := out[strings.Index(out, `<div id="steps">`):strings.Index(out, "<h2>Board</h2>")]
		want := 0
		if n > 2*chunkSize {
			want = (n + chunkSize - 1) / chunkSize
		}
		if got := strings.Count(tl, `<div class="chunk">`); got != want {
			t.Errorf("%d steps: %d boxes in the timeline, want %d", n, got, want)
		}
		if got := strings.Count(st, `<div class="chunk">`); got != want {
			t.Errorf("%d steps: %d boxes of steps, want %d", n, got, want)
		}
		last := -1
		for i := 1; i <= n; i++ {
			id := fmt.Sprintf(`id="step-s-%d"`, i)
			if strings.Count(st, id) != 1 || strings.Count(tl, fmt.Sprintf(`href="#step-s-%d"`, i)) != 1 {
				t.Fatalf("%d steps: visit %d not once in the steps and the timeline", n, i)
			}
			if at := strings.Index(st, id); at < last {
				t.Fatalf("%d steps: visit %d out of order", n, i)
			}
			last = strings.Index(st, id)
		}
	}
}
