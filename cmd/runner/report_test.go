package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	chromiumpkg "github.com/planrunner/runner/internal/testutil/chromium"
)

// chromium finds a headless-capable Chromium (see internal/chromium).
func chromium(t *testing.T) string { return chromiumpkg.Find(t) }

// chromiumArgs start a headless Chromium that talks to no one.
func chromiumArgs(t *testing.T, extra ...string) []string { return chromiumpkg.Args(t, extra...) }

// renderDOM loads an HTML file in headless Chromium from file:// and
// returns the DOM it built.
func renderDOM(t *testing.T, page string) string {
	t.Helper()
	bin := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, chromiumArgs(t, "--dump-dom", "file://"+page)...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	if !strings.Contains(string(out), "</html>") {
		t.Fatalf("chromium gave no DOM:\n%s\n%s", out, errb.String())
	}
	return string(out)
}

// section is the DOM of the step visit's details element.
func section(t *testing.T, dom, label string, visit int) string {
	t.Helper()
	re := regexp.MustCompile(fmt.Sprintf(`(?s)<details class="step(?: group)?" id="step-%[1]s-%[2]d(?:-earlier\d+)?" data-label="%[1]s" data-visit="%[2]d".*?</details>\s*(<details class="step[ "]|</div>\s*<h2>)`, label, visit))
	m := re.FindString(dom)
	if m == "" {
		t.Fatalf("no section for %s #%d in the DOM", label, visit)
	}
	return m
}

// The report of the flagship run, as Chromium renders it: both visits of
// the loop, the failing then the passing test, each diff in colour, and
// the tokens the agent used.
func TestReportOfFlagshipRunInChromium(t *testing.T) {
	chromium(t)
	example, _ := filepath.Abs("../../examples/fix-tests/plan.yaml")
	wd := t.TempDir()
	r := runCLI(t, wd, "run", example, "--report")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	bb := blackboardPath(t, r.stdout)
	page := filepath.Join(filepath.Dir(bb), "report.html")
	if !strings.Contains(r.stderr, `"report":"`+page+`"`) {
		t.Errorf("run --report does not say where the report is:\n%s", r.stderr)
	}
	dom := renderDOM(t, page)

	for _, want := range []string{
		`data-label="fix" data-visit="1" data-status="succeeded"`,
		`data-label="fix" data-visit="2" data-status="succeeded"`,
		`data-label="test" data-visit="1" data-status="failed"`,
		`data-label="test" data-visit="2" data-status="succeeded"`,
		`<span class="badge succeeded" id="run-status">succeeded</span>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the DOM lacks %s", want)
		}
	}
	// Loop visits in the order they ran.
	timeline := dom[strings.Index(dom, `id="timeline"`):strings.Index(dom, "<h2>Steps</h2>")]
	var order []string
	for _, m := range regexp.MustCompile(`class="row" data-label="(\w+)" data-visit="(\d+)"`).FindAllStringSubmatch(timeline, -1) {
		order = append(order, m[1]+"#"+m[2])
	}
	if got := strings.Join(order, " "); got != "prepare#1 show#1 fix#1 apply#1 test#1 decide#1 show#2 fix#2 apply#2 test#2 decide#2 done#1" {
		t.Errorf("timeline order: %s", got)
	}

	test1 := section(t, dom, "test", 1)
	for _, want := range []string{"failed (tolerated)", `<p class="counts">2 total · 1 passed · 1 failed`,
		`<code class="where">stats_test.go:16</code>`, "Mean([2 4 6]) = 3.3333333333333335, want 4"} {
		if !strings.Contains(test1, want) {
			t.Errorf("first test visit lacks %q:\n%s", want, test1)
		}
	}
	test2 := section(t, dom, "test", 2)
	if !strings.Contains(test2, "tests: passed") || strings.Contains(test2, `class="failure"`) {
		t.Errorf("second test visit is not a pass:\n%s", test2)
	}
	apply1, apply2 := section(t, dom, "apply", 1), section(t, dom, "apply", 2)
	if !strings.Contains(apply1, "<div class=\"add\">+\tif len(xs) == 0 {\n+\t\treturn 0\n+\t}</div>") || !strings.Contains(apply1, `diff stats.go`) {
		t.Errorf("first diff not shown in colour:\n%s", apply1)
	}
	if !strings.Contains(apply2, `<div class="del">-	for i := 1; i &lt; len(xs); i++ {</div>`) ||
		!strings.Contains(apply2, `<div class="add">+	for i := 0; i &lt; len(xs); i++ {</div>`) {
		t.Errorf("second diff not shown in colour:\n%s", apply2)
	}
	fix2 := section(t, dom, "fix", 2)
	if !strings.Contains(fix2, "Your last change did not make them pass") {
		t.Errorf("the second prompt (with the failure summary) is not shown:\n%s", fix2)
	}

	// Tokens: the table's sums are the recorded answers' usage.
	b, err := board.Load(bb)
	if err != nil {
		t.Fatal(err)
	}
	in, out := 0, 0
	for _, s := range b.Steps() {
		if s.Label == "fix" {
			var u struct {
				Usage struct{ Input_tokens, Output_tokens int }
			}
			jsonUnmarshal(t, s.Result, &u)
			in, out = in+u.Usage.Input_tokens, out+u.Usage.Output_tokens
		}
	}
	if in == 0 || out == 0 {
		t.Fatalf("no tokens in the run: %d %d", in, out)
	}
	row := fmt.Sprintf(`<tr data-model="gpt-4o-mini"><td>gpt-4o-mini</td><td class="n">2</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td>`, in, out, in+out)
	if !strings.Contains(dom, row) {
		t.Errorf("tokens table lacks %s", row)
	}
	if strings.Contains(dom, "<script") {
		t.Error("the report has a script element")
	}
}

func jsonUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

// Model output, command output, board keys and values, vars, the plan's
// name: all of it is data in the report. Chromium builds the page, and
// not one element or attribute comes from the run.
func TestReportEscapesHostileContent(t *testing.T) {
	chromium(t)
	const evil = `</pre></details></main><script>document.title="pwned"</script><img src=x onerror="document.title='pwned'"><b id="injected">x</b>`
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	src := fmt.Sprintf(`version: 1
name: "%[1]s"
description: "%[1]s"
vars: {note: hello}
agents:
  evil:
    provider: script
    model: "m<script>x</script>"
    responses:
      - text: %[2]q
        tool_calls: [{name: board_write, args: {key: "k<svg onload=alert(1)>", value: %[2]q}}]
      - %[2]q
steps:
  - {label: ask, type: llm, agent: evil, prompt: "say ${{ vars.note }}", tools: [board]}
  - {label: echo, type: command, run: "printf '%%s\n' ${{ steps.ask.output }}; printf '%%s' ${{ vars.note }} >&2; exit 3", continue_on_error: true}
  - {label: put, type: board, op: write, key: "${{ steps.ask.output }}", value: "${{ steps.ask.output }}"}
  - label: diff
    type: apply_diff
    diff: |
      --- a/x.txt
      +++ b/x.txt
      @@ -1 +1 @@
      -<script>old</script>
      +%[1]s
  - label: human
    type: input
    prompt: "%[1]s"
    form: {type: object, properties: {"x": {type: string, description: "%[1]s", enum: ["%[1]s"]}}}
`, strings.ReplaceAll(evil, `"`, `\"`), evil)
	if err := os.WriteFile(plan, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(wd, "x.txt"), []byte("<script>old</script>\n"), 0o644)
	r := runCLI(t, wd, "run", plan, "--var", "note="+evil, "-q")
	if r.code != 4 { // waits at the input
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	bb := blackboardPath(t, r.stdout)
	page := filepath.Join(wd, "report.html")
	if r := runCLI(t, wd, "report", bb, "-o", page); r.code != 0 {
		t.Fatalf("report: exit %d %s", r.code, r.stderr)
	}
	raw, _ := os.ReadFile(page)
	dom := renderDOM(t, page)
	// In a serialized DOM a text node's "<" is "&lt;": a raw "<" starts
	// an element.
	for _, bad := range []string{`<script`, `<[a-z]+[^<>]*\bid="injected"`, `<[a-z]+[^<>]*\son\w+=`, `<img`, `<svg`, `pwned</title>`} {
		if m := regexp.MustCompile(bad).FindString(dom); m != "" {
			t.Errorf("the rendered DOM holds %q: run content became markup", m)
		}
	}
	// The text is there, as text.
	if n := strings.Count(dom, "&lt;script&gt;document.title=\"pwned\"&lt;/script&gt;"); n < 5 {
		t.Errorf("the hostile text shows %d times as text, want it in the title, vars, model answer, output, board", n)
	}
	waiting := dom[strings.Index(dom, `<section id="waiting">`):strings.Index(dom, "<h2>Timeline</h2>")]
	if n := strings.Count(waiting, "&lt;script&gt;document.title=\"pwned\"&lt;/script&gt;"); n < 2 {
		t.Errorf("the waiting input's question and field description show the hostile text %d times as text, want 2:\n%s", n, waiting)
	}
	if !strings.Contains(waiting, `one of <code>["&lt;/pre&gt;&lt;/details&gt;&lt;/main&gt;&lt;script&gt;document.title=\"pwned\"`) {
		t.Errorf("the field's choice is not shown as text (JSON):\n%s", waiting)
	}
	for _, want := range []string{"&lt;svg onload=alert(1)&gt;", "m&lt;script&gt;x&lt;/script&gt;"} {
		if !strings.Contains(dom, want) {
			t.Errorf("DOM lacks %s", want)
		}
	}
	// Nothing reaches out: no URL other than the page's own anchors.
	if m := regexp.MustCompile(`(?i)(src|href)="(https?:|//|file:)`).FindString(string(raw)); m != "" {
		t.Errorf("the report links out: %s", m)
	}
}

// A secret a step was given (rendered into its env and script) is masked
// in the report, as everywhere runner writes.
func TestReportMasksSecrets(t *testing.T) {
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
name: secretive
secrets: [DEPLOY_TOKEN]
steps:
  - label: use
    type: command
    env: {TOKEN: "${{ secrets.DEPLOY_TOKEN }}"}
    run: echo "token is $TOKEN"
`), 0o644)
	const secret = "s3cr3t-value-for-the-report"
	r := runEnv(t, wd, []string{"PATH=" + os.Getenv("PATH"), "DEPLOY_TOKEN=" + secret}, "run", plan, "--report")
	if r.code != 0 {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	page, err := os.ReadFile(filepath.Join(filepath.Dir(blackboardPath(t, r.stdout)), "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), secret) || strings.Contains(string(page), "s3cr3t") {
		t.Fatal("the report holds the secret")
	}
	if !strings.Contains(string(page), "token is ***") {
		t.Error("the masked output is not in the report")
	}
}
