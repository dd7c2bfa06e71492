package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	chromiumpkg "github.com/planrunner/runner/internal/testutil/chromium"
)

// The screenshots in the docs are made by this test: `go test
// ./cmd/runner -run TestDocScreenshots -update` writes them from a real
// headless Chromium, so they show the pages as they are. Without -update
// it renders the same pages and checks that the committed images exist
// and are PNGs of a sane size; it compares no pixels (fonts differ from
// one machine to another).
func TestDocScreenshots(t *testing.T) {
	chromium(t)
	shots := map[string][]byte{}

	// One browser at a time (each subtest closes its own): two at once
	// on a loaded machine were too slow to load a page.
	// runner serve's page of a live run: a for_each done, a step running.
	t.Run("serve", func(t *testing.T) {
		wd := t.TempDir()
		gate := filepath.Join(wd, "gate")
		plan := filepath.Join(wd, "plan.yaml")
		os.WriteFile(plan, []byte(fmt.Sprintf(`version: 1
name: release
description: Build every package, then test while a person approves the release.
steps:
  - label: build
    type: command
    for_each: split("api cli web worker", " ")
    max_concurrency: 2
    run: echo built ${{ item }}
  - label: checks
    parallel:
      - {label: vet, type: command, run: "echo vet ok"}
      - {label: test, type: command, run: "while [ ! -f %s ]; do sleep 0.05; done; echo ok"}
  - {label: approve, type: input, prompt: "Ship the release?", form: {properties: {ship: {type: boolean}}, required: [ship]}}
`, gate)), 0o644)
		url := startServe(t, wd)
		base := url[:strings.Index(url, "/?token=")]
		run := exec.Command(binary, "run", plan, "-q")
		run.Dir = wd
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.WriteFile(gate, nil, 0o644); run.Wait() })
		d := chromiumpkg.Open(t, url, base+"/")
		shotSize(d)
		d.WaitFor(`!!document.querySelector('#runs tr[data-id] a')`, "the run in the list")
		d.Eval(`document.querySelector('#runs tr[data-id] a').click()`)
		d.WaitLoaded(base + "/runs/")
		d.WaitFor(`!!document.querySelector('#running code[data-label="test"]') && document.querySelector('#steps [data-label="build"]')?.dataset.status === "succeeded"`, "test running, build done")
		shots["serve-run.png"] = screenshot(t, d)
	})

	// The report of an example run.
	t.Run("report", func(t *testing.T) {
		wd := t.TempDir()
		r := runCLI(t, wd, "run", filepath.Join(repoRoot(), "examples/summarize-files/plan.yaml"), "-q")
		if r.code != 0 {
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
		page := filepath.Join(wd, "report.html")
		if r := runCLI(t, wd, "report", blackboardPath(t, r.stdout), "-o", page); r.code != 0 {
			t.Fatalf("report: exit %d %s", r.code, r.stderr)
		}
		d := chromiumpkg.Open(t, "file://"+page, "file:")
		shotSize(d)
		shots["report.png"] = screenshot(t, d)
	})
	if t.Failed() {
		return
	}

	for name, data := range shots {
		path := filepath.Join(repoRoot(), "docs", "images", name)
		checkPNG(t, name+" as rendered", data)
		if *update {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		committed, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v: run `go test ./cmd/runner -run TestDocScreenshots -update` to make it", err)
			continue
		}
		checkPNG(t, path, committed)
	}
}

// shotSize is the window the screenshots are taken in, light mode.
func shotSize(d *chromiumpkg.Page) {
	d.Call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1100, "height": 820, "deviceScaleFactor": 1, "mobile": false}, nil)
	d.Call("Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": "light"}}}, nil)
}

func screenshot(t *testing.T, d *chromiumpkg.Page) []byte {
	t.Helper()
	var res struct{ Data string }
	d.Call("Page.captureScreenshot", map[string]any{"format": "png"}, &res)
	data, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkPNG fails unless data is a PNG the size of the window, with more
// in it than a blank page compresses to.
func checkPNG(t *testing.T, name string, data []byte) {
	t.Helper()
	checkPNGSize(t, name, data, 1100, 820)
}

// checkPNGSize is checkPNG for a window of width × height pixels.
func checkPNGSize(t *testing.T, name string, data []byte, width, height int) {
	t.Helper()
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	switch {
	case err != nil:
		t.Errorf("%s is not a PNG: %v", name, err)
	case cfg.Width != width || cfg.Height != height:
		t.Errorf("%s is %dx%d, want %dx%d", name, cfg.Width, cfg.Height, width, height)
	case len(data) < 20<<10:
		t.Errorf("%s is %d bytes: a blank page?", name, len(data))
	}
}
