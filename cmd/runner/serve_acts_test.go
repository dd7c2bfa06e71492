package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	chromiumpkg "github.com/planrunner/runner/internal/testutil/chromium"
)

// The window acts, in a real browser, as a person would use it: a plan
// found under the served directory is started with a var from its form;
// the run is stopped while a step runs, and resumed; the approval it
// then waits at has no answer chosen (sending the form as it stands is
// refused by the browser and sends nothing); answered, the run goes on,
// and its page shows the question as the person saw it (the var filled
// in) with the field's description; a fork from a step is a new run,
// listed by `runner runs`, shows the same question replayed, and leaves
// the original run's folder byte for byte as it was.
//
// It also takes the screenshots of docs/serve.md (the run list, the run
// page, the answer form and the graph, at phone and desktop widths, light
// and dark): `go test ./cmd/runner -run TestServeActsInChromium -update`
// writes them to docs/images/; without -update the committed ones must
// be PNGs of the right size.
func TestServeActsInChromium(t *testing.T) {
	chromium(t)
	wd := t.TempDir()
	gate := filepath.Join(wd, "gate")
	os.WriteFile(filepath.Join(wd, "plan.yaml"), []byte(fmt.Sprintf(`version: 1
name: release
description: Build, wait for the slow checks, then ask a person before shipping.
vars: {version: "1.0"}
steps:
  - {label: build, type: command, run: "echo built ${{ vars.version }}"}
  - label: checks
    parallel:
      - {label: vet, type: command, run: "echo vet ok"}
      - {label: slow, type: command, run: "while [ ! -f %s ]; do sleep 0.05; done; echo slow ok"}
  - label: approve
    type: input
    prompt: "Ship version ${{ vars.version }}?"
    form:
      properties:
        ship: {type: boolean, description: "go ahead with the release"}
        note: {type: string, description: "anything the team should know"}
      required: [ship]
  - {label: publish, type: command, run: "echo published ${{ vars.version }}"}
`, gate)), 0o644)
	url := startServe(t, wd)
	base := url[:strings.Index(url, "/?token=")]
	shots := map[string]shot{}
	d := chromiumpkg.Open(t, url, base+"/")
	d.WaitFor(`!!document.getElementById("start-link")`, "the run list")

	// Start: the plans page, its var, the run's page.
	d.Eval(`document.getElementById("start-link").click()`)
	d.WaitLoaded(base + "/plans")
	d.WaitFor(`document.querySelector('section.plan[data-plan="plan.yaml"] form.action')?.dataset.bound === "1"`, "the plan and its form, live")
	if got := d.String(`document.querySelector('section.plan[data-plan="plan.yaml"] input[name="v.version"]').value`); got != "1.0" {
		t.Errorf("the var's field starts as %q, want its default 1.0", got)
	}
	d.Eval(`(() => { const f = document.querySelector('section.plan[data-plan="plan.yaml"] form.action');
		f.elements["v.version"].value = "2.5"; f.querySelector("button").click(); })()`)
	d.WaitLoaded(base + "/runs/")
	id := strings.TrimPrefix(d.String(`location.pathname`), "/runs/")
	d.WaitFor(`!!document.querySelector('#running code[data-label="slow"]') && !!document.getElementById("stop")`, "slow running, with a stop button")
	d.WaitFor(`document.getElementById("stop").form.dataset.bound === "1"`, "the stop button, live")

	// Stop, then resume.
	d.Eval(`document.getElementById("stop").click()`)
	d.WaitFor(`document.getElementById("run-status").textContent === "interrupted" && !!document.getElementById("resume")`, "the run stopped, with a resume button")
	os.WriteFile(gate, nil, 0o644)
	d.WaitFor(`document.getElementById("resume").form.dataset.bound === "1"`, "the resume button, live")
	d.Eval(`document.getElementById("resume").click()`)
	d.WaitFor(`!!document.querySelector('form.answer[data-label="approve"]') && document.getElementById("run-status").textContent === "waiting"`, "the run to wait at the approval")
	d.WaitFor(`document.querySelector('form.answer[data-label="approve"]').dataset.bound === "1"`, "the answer form, live")

	// No answer is chosen for the person.
	if got := d.Eval(`(() => { const f = document.querySelector('form.answer[data-label="approve"]');
		return [f.elements["f.ship"].value, f.checkValidity()]; })()`); got != `["",false]` {
		t.Errorf("the required yes/no starts as [value, form valid] = %s, want empty and not valid", got)
	}
	if got := d.String(`document.querySelector('#waiting .question').textContent`); got != "Ship version 2.5?" {
		t.Errorf("the question asked shows as %q", got)
	}
	d.Eval(`document.querySelector('form.answer[data-label="approve"] button').click()`)
	if got := d.Eval(`[document.querySelector('form.answer[data-label="approve"] .answer-result').textContent, document.getElementById("run-status").textContent]`); got != `["","waiting"]` {
		t.Errorf("sending the form with nothing chosen: [its result, the run] = %s, want nothing sent", got)
	}
	takeShots(t, d, shots, "serve-answer", `document.getElementById("waiting").scrollIntoView()`)

	d.Eval(`(() => { const f = document.querySelector('form.answer[data-label="approve"]');
		f.elements["f.ship"].value = "true"; f.elements["by"].value = "dana"; f.querySelector("button").click(); })()`)
	d.WaitFor(`document.getElementById("run-status").textContent === "succeeded"`, "the run to succeed once answered")
	asked := func(what string) {
		t.Helper()
		d.Eval(`document.querySelector('#steps [data-label="approve"]').open = true`)
		got := d.Eval(`(() => { const s = document.querySelector('#steps [data-label="approve"]');
			return [s.querySelector(".question").textContent, s.querySelector("table.asked").textContent.includes("go ahead with the release"), s.querySelector(".answered").textContent.startsWith("answered by dana")]; })()`)
		if got != `["Ship version 2.5?",true,true]` {
			t.Errorf("%s: the answered approval shows [question, field described, by] = %s", what, got)
		}
	}
	asked("the run")
	takeShots(t, d, shots, "serve-run", `window.scrollTo(0, 0)`)
	d.Eval(`document.getElementById("graph-link").click()`)
	d.WaitLoaded(base + "/runs/" + id + "/graph")
	d.WaitFor(`document.querySelector('.node[data-label="slow"]')?.dataset.status === "succeeded"`, "the graph")
	takeShots(t, d, shots, "serve-graph", `window.scrollTo(0, 0)`)

	// Fork from publish: a new run; the original's folder is untouched.
	orig := filepath.Join(wd, ".runner", "runs", id)
	before := snapshotDir(t, orig)
	d.Eval(`history.back()`)
	d.WaitLoaded(base + "/runs/" + id)
	d.WaitFor(`document.getElementById("fork")?.form.dataset.bound === "1"`, "the fork button, live")
	d.Eval(`(() => { const f = document.getElementById("fork").form; f.elements.from.value = "publish"; f.querySelector("button").click(); })()`)
	d.WaitFor(`location.pathname !== "/runs/`+id+`" && location.pathname.startsWith("/runs/") && document.readyState === "complete"`, "the fork's page")
	fork := strings.TrimPrefix(d.String(`location.pathname`), "/runs/")
	d.WaitFor(`document.getElementById("run-status")?.textContent === "succeeded"`, "the fork to succeed")
	if got := d.String(`document.getElementById("lineage").textContent`); !strings.Contains(got, id) {
		t.Errorf("the fork's page says %q, want it to name run %s", got, id)
	}
	asked("the fork")
	if after := snapshotDir(t, orig); !reflect.DeepEqual(before, after) {
		t.Errorf("the fork wrote in the original run's folder:\nbefore %v\nafter  %v", keys(before), keys(after))
	}
	r := runCLI(t, wd, "runs", "--json")
	var list []struct{ ID, Status string }
	json.Unmarshal([]byte(r.stdout), &list)
	got := map[string]string{}
	for _, s := range list {
		got[s.ID] = s.Status
	}
	if want := map[string]string{id: "succeeded", fork: "succeeded"}; !reflect.DeepEqual(got, want) {
		t.Errorf("runner runs lists %v, want %v", got, want)
	}
	// The run list, the fork and its original both on it.
	d.Eval(`location.href = "/"`)
	d.WaitLoaded(base + "/")
	d.WaitFor(`document.querySelectorAll("#runs tr").length === 3`, "the run list with both runs")
	if got := d.String(`document.querySelector("#runs").textContent`); !strings.Contains(got, "release") {
		t.Errorf("the run list does not name the plan release: %q", got)
	}
	takeShots(t, d, shots, "serve-runs", `window.scrollTo(0, 0)`)
	keepShots(t, shots)
}

// shot is a screenshot and the window it was taken in.
type shot struct {
	data          []byte
	width, height int
}

// The windows the screenshots of serve are taken in.
var shotWindows = []struct {
	name          string
	width, height int
	mobile        bool
}{{"desktop", 1100, 820, false}, {"phone", 390, 844, true}}

// takeShots screenshots the page in each window and colour scheme, as
// NAME-WINDOW-SCHEME.png, after scroll (a script) puts what is shown in
// view.
func takeShots(t *testing.T, d *chromiumpkg.Page, shots map[string]shot, name, scroll string) {
	t.Helper()
	for _, w := range shotWindows {
		for _, scheme := range []string{"light", "dark"} {
			scale := 1
			if w.mobile {
				scale = 2
			}
			d.Call("Emulation.setDeviceMetricsOverride", map[string]any{"width": w.width, "height": w.height, "deviceScaleFactor": scale, "mobile": w.mobile}, nil)
			d.Call("Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": scheme}}}, nil)
			d.Eval(scroll)
			d.Eval(`new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)))`)
			shots[fmt.Sprintf("%s-%s-%s.png", name, w.name, scheme)] = shot{screenshot(t, d), w.width * scale, w.height * scale}
		}
	}
	d.Call("Emulation.clearDeviceMetricsOverride", map[string]any{}, nil)
	d.Call("Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{}}, nil)
}

// keepShots writes the screenshots to docs/images with -update; without
// it, checks that each committed one is a PNG of its window's size.
func keepShots(t *testing.T, shots map[string]shot) {
	t.Helper()
	if t.Failed() {
		return
	}
	for name, s := range shots {
		path := filepath.Join(repoRoot(), "docs", "images", name)
		checkPNGSize(t, name+" as rendered", s.data, s.width, s.height)
		if *update {
			if err := os.WriteFile(path, s.data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		committed, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v: run `go test ./cmd/runner -run TestServeActsInChromium -update` to make it", err)
			continue
		}
		checkPNGSize(t, path, committed, s.width, s.height)
	}
}
