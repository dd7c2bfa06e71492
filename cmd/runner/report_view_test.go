package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	chromiumpkg "github.com/planrunner/runner/internal/testutil/chromium"
)

// openDevtools opens the page at url in a headless Chromium driven over
// DevTools: the report runs no script of its own, so what CSS does (the
// filter, the phone layout, dark mode) can only be read from outside,
// through getComputedStyle.
func openDevtools(t *testing.T, url string) *chromiumpkg.Page {
	return chromiumpkg.Open(t, url, "file:")
}

// The report as a reader uses it in Chromium: the filter hides the steps
// that do not match (CSS alone), every timeline link lands on its step,
// the page fits a phone's width with the timeline in one column, and dark
// mode follows the system setting; the page holds no script.
func TestReportFilterPhoneDarkInChromium(t *testing.T) {
	chromium(t)
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
name: filters
agents:
  bot: {provider: script, model: gpt-4o-mini, responses: ["a rather long answer that goes on and on without a break so that a phone has to wrap it somewhere or scroll sideways"]}
steps:
  - {label: ask, type: llm, agent: bot, prompt: "hello"}
  - {label: flaky, type: command, run: "exit 1", continue_on_error: true}
  - label: checks
    parallel:
      - {label: vet, type: command, run: "true"}
      - {label: lint, type: command, run: "exit 2", continue_on_error: true}
  - {label: approve, type: input, prompt: "Ship it?", form: {type: object, properties: {ship: {type: boolean}}, required: [ship]}}
  - {label: again, type: input, prompt: "Really?", form: {type: object, properties: {sure: {type: boolean}}}}
`), 0o644)
	r := runCLI(t, wd, "run", plan, "-q")
	if r.code != 4 {
		t.Fatalf("want the run to wait (exit 4), got %d\n%s", r.code, r.stderr)
	}
	bb := blackboardPath(t, r.stdout)
	if r := runEnv(t, wd, []string{"PATH=" + os.Getenv("PATH"), "USER=alice"}, "answer", bb, "--step", "approve", "--json", `{"ship": true}`, "--resume", "-q"); r.code != 4 {
		t.Fatalf("answer --resume: want exit 4 (waits again), got %d\n%s", r.code, r.stderr)
	}
	page := filepath.Join(wd, "report.html")
	if r := runCLI(t, wd, "report", bb, "-o", page); r.code != 0 {
		t.Fatalf("report: exit %d %s", r.code, r.stderr)
	}
	d := openDevtools(t, "file://"+page)

	visible := `JSON.stringify([...document.querySelectorAll('#steps .step, #timeline .row, #timeline .kid')]
		.filter(e => getComputedStyle(e).display !== 'none').map(e => e.dataset.label).sort())` // parallel children finish in any order
	for _, c := range []struct{ filter, want string }{
		{"all", `["approve","approve","ask","ask","checks","checks","flaky","flaky","lint","lint","vet","vet"]`},
		{"failed", `["checks","flaky","flaky","lint","lint"]`}, // the group's section holds lint's
		{"llm", `["ask","ask"]`},
		{"input", `["approve","approve"]`},
		{"all", `["approve","approve","ask","ask","checks","checks","flaky","flaky","lint","lint","vet","vet"]`},
	} {
		// A reader's click on the filter's label.
		d.Eval(`document.querySelector('label[for="f-` + c.filter + `"]').click()`)
		var got string
		json.Unmarshal([]byte(d.Eval(visible)), &got)
		if got != c.want {
			t.Errorf("filter %s shows %s, want %s", c.filter, got, c.want)
		}
	}
	if got := d.Eval(`[...document.querySelectorAll('#timeline a')].filter(a => !document.getElementById(a.getAttribute('href').slice(1))).length`); got != "0" {
		t.Errorf("%s timeline links lead nowhere", got)
	}
	if got := d.Eval(`document.querySelectorAll('#timeline a').length`); got != "6" {
		t.Errorf("%s timeline links, want 6", got)
	}
	if got := d.Eval(`document.querySelectorAll('script').length`); got != "0" {
		t.Errorf("the page has %s scripts", got)
	}
	if got := d.Eval(`document.querySelector('#waiting pre.cmd').textContent`); !strings.Contains(got, `--step again --json '{\"sure\": true}'`) {
		t.Errorf("the waiting input's answer line: %s", got)
	}
	if got := d.Eval(`document.querySelector('[data-label="approve"] .answered').textContent`); !strings.HasPrefix(got, `"answered by alice; the run waited `) {
		t.Errorf("the answered input says %s", got)
	}

	columns := `getComputedStyle(document.querySelector('#timeline .row')).gridTemplateColumns.split(' ').length`
	if got := d.Eval(columns); got != "4" {
		t.Errorf("a wide timeline row has %s columns, want 4", got)
	}
	// Every parallel child has a bar of its own.
	if got := d.Eval(`[...document.querySelectorAll('#timeline .kid')].map(k => k.querySelector('.track > span').getBoundingClientRect().width > 0).join()`); got != `"true,true"` {
		t.Errorf("the parallel children's bars are drawn: %s", got)
	}
	d.Call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true}, nil)
	if got := d.Eval(columns); got != "3" {
		t.Errorf("on a phone a timeline row has %s columns, want 3 (its bar below)", got)
	}
	if got := d.Eval(strings.Replace(columns, "#timeline .row", "#timeline .kid", 1)); got != "3" {
		t.Errorf("on a phone a parallel child's row has %s columns, want 3 (its bar below)", got)
	}
	if got := d.Eval(`document.documentElement.scrollWidth`); got != "390" {
		t.Errorf("on a phone 390 px wide the page is %s px wide", got)
	}

	bg := `getComputedStyle(document.body).backgroundColor`
	for _, c := range []struct{ scheme, want string }{{"light", `"rgb(255, 255, 255)"`}, {"dark", `"rgb(13, 17, 23)"`}} {
		d.Call("Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": c.scheme}}}, nil)
		if got := d.Eval(bg); got != c.want {
			t.Errorf("in %s mode the page's background is %s, want %s", c.scheme, got, c.want)
		}
	}
}
