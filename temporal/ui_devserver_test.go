package temporal

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/testutil/chromium"
	"go.temporal.io/sdk/client"
)

// docScreenshots runs TestDevServerWebUI, which writes
// docs/images/temporal-ui.png. It is off by default: the test drives the
// Temporal Web UI (a large single-page app we do not own) in a headless
// Chromium beside a dev server, too slow and too much someone else's
// page for every CI run; TestDevServerFailedPlanIsFailedWorkflow and
// TestDevServerSearchAttributes check the rest of what it checks on every
// run.
var docScreenshots = flag.Bool("doc-screenshots", false, "run TestDevServerWebUI and write docs/images/temporal-ui.png")

// uiPlan fails at its last step, after a step and a for_each whose
// activities the page should name.
const uiPlan = `version: 1
name: nightly-build
steps:
  - {label: checkout, type: command, run: "echo checked out"}
  - label: build
    type: command
    for_each: split("api web", " ")
    run: echo built ${{ item }}
  - {label: test, type: command, run: "echo 2 tests failed >&2; exit 3"}
`

// The Temporal Web UI, as a user opens it on a dev server, names a
// plan's steps: a failed plan's workflow page lists its activities by
// label#visit (LABEL[i]#visit for a for_each item) with their summaries,
// not as unlabelled runner.step activities; Temporal's CLI finds the run
// among the failed workflows and by its plan name (a search attribute).
// With -doc-screenshots it writes what the page shows to
// docs/images/temporal-ui.png:
//
//	cd temporal && go test -run TestDevServerWebUI -doc-screenshots -v ./
func TestDevServerWebUI(t *testing.T) {
	if !*docScreenshots {
		t.Skip("drives the Temporal Web UI in Chromium: -doc-screenshots")
	}
	chromium.Find(t)
	uiPort := freePort(t)
	// The dev-server helper starts it --headless; a later --headless=false
	// wins, and the UI listens on loopback only.
	flags := []string{"--headless=false", "--ui-ip", "127.0.0.1", "--ui-port", strconv.Itoa(uiPort)}
	for name, typ := range map[string]string{"RunnerPlan": "Keyword", "RunnerStatus": "Keyword", "RunnerWaiting": "Bool", "RunnerVersion": "Keyword"} {
		flags = append(flags, "--search-attribute", name+"="+typ)
	}
	c := newCluster(t, flags...)
	c.worker(t)
	plan := writePlan(t, c.work, uiPlan)
	out := filepath.Join(c.work, "bb.json")
	if code := c.run(t, plan, out).wait(t, 3*time.Minute); code != 1 {
		t.Fatalf("the failing plan: exit %d, want 1", code)
	}
	wid := WorkflowIDOf(loadBoard(t, out).Run())

	// Temporal's CLI: among the failed workflows, and found by plan name
	// with its final status. Visibility is eventually consistent: ask
	// until it shows, up to a minute.
	for _, query := range []string{`ExecutionStatus="Failed"`, `RunnerPlan="nightly-build" AND RunnerStatus="failed"`} {
		var got []byte
		for deadline := time.Now().Add(time.Minute); ; {
			var err error
			got, err = exec.Command(temporalCLI(t), "workflow", "list", "--address", c.srv.hostPort, "--query", query, "--output", "json").CombinedOutput()
			if err == nil && strings.Contains(string(got), wid) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("temporal workflow list --query %s does not list %s (err %v):\n%s", query, wid, err, got)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	tc, err := client.Dial(client.Options{HostPort: c.srv.hostPort, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	d, err := tc.DescribeWorkflowExecution(context.Background(), wid, "")
	tc.Close()
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", uiPort)
	page := fmt.Sprintf("%s/namespaces/default/workflows/%s/%s/history", base, url.PathEscape(wid), d.WorkflowExecutionInfo.Execution.RunId)
	p := chromium.Open(t, page, base+"/namespaces/default/workflows/")
	p.Call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil)
	p.Call("Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": "light"}}}, nil)

	// The page lists each activity with its summary (the step's label,
	// type and what it runs) on the timeline and in the event history.
	summaries := []string{"checkout (command)", "build[0] (command)", "build[1] (command)", "test (command)", "Failed"}
	waitShown(t, p, page, summaries)
	// An event row, opened, shows its activity's id: open the scheduled
	// ones, once each.
	p.Eval(`(() => {
		const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
		const rows = new Set();
		for (let n; (n = w.nextNode()); ) {
			if (n.textContent.trim() === "Activity Task Scheduled") rows.add(n.parentElement.closest("tr") || n.parentElement);
		}
		rows.forEach(r => r.click());
		return rows.size;
	})()`)
	waitShown(t, p, page, []string{"checkout#1", "build[0]#1", "build[1]#1", "test#1"})
	if text := p.String(`document.body.innerText`); strings.Contains(text, "runner.step#") {
		t.Errorf("the page shows an unlabelled activity:\n%s", text)
	}
	// The screenshot: the timeline and the newest events.
	p.Eval(`(() => {
		const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
		for (let n; (n = w.nextNode()); ) {
			if (n.textContent.trim() === "Event History") { n.parentElement.scrollIntoView(); return true; }
		}
		return false;
	})()`)
	time.Sleep(500 * time.Millisecond) // the scroll settles
	var shot struct{ Data string }
	p.Call("Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	data, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(data)); err != nil || cfg.Width != 1280 || len(data) < 20<<10 {
		t.Fatalf("the screenshot: %d bytes, %+v, %v; want a 1280-wide PNG of a page", len(data), cfg, err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "images", "temporal-ui.png"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitShown waits until the page's text holds each of want; on failure it
// says what the page showed instead, and the HTML of an event row.
func waitShown(t *testing.T, p *chromium.Page, page string, want []string) {
	t.Helper()
	wantJS, _ := json.Marshal(want)
	shown := fmt.Sprintf(`%s.every(s => document.body.innerText.includes(s))`, wantJS)
	// A bound on a broken test, not a measure of speed.
	for deadline := time.Now().Add(2 * time.Minute); p.Eval(shown) != "true"; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the workflow page %s does not show all of %q; it shows:\n%s\n\nan event row:\n%s", page, want,
				p.String(`document.body.innerText`), p.String(`(document.querySelector("tbody tr") || document.body).outerHTML.slice(0, 4000)`))
		}
	}
}
