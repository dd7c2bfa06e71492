package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/testutil/chromium"
)

// A long page's closed steps in Chromium, as a reader meets them: a link
// in the timeline to a step not yet in the page shows it, open, with its
// body; so does an address naming one, even a step inside a group; the
// steps come into the page as the reader scrolls to them; and a hostile
// output or label in a lazily shown body is text: no element, no script
// from it (the page's CSP allows its own script alone, by hash).
func TestReportLazyStepsInChromium(t *testing.T) {
	const hostile = `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script></script><!-- --> &amp;`
	out, _ := json.Marshal(map[string]string{"output": hostile})
	b := board.New(board.Run{ID: "r", Status: "succeeded", StartedAt: t0})
	for i := 1; i <= 300; i++ {
		result := fmt.Sprintf(`{"output":"visit %d says hello"}`, i)
		if i == 150 {
			result = string(out)
		}
		b.AddStep(step("s", i, "", "succeeded", i*10, 5, result))
	}
	// A label only a hostile blackboard.json could hold.
	b.AddStep(step(`x"><img src=x onerror="window.pwned=3">`, 1, "", "succeeded", 3010, 5, string(out)))
	for i := range 30 {
		b.AddStep(step(fmt.Sprintf("g[%d]", i), 1, "g", "succeeded", 3020+i, 5, `{"output":"an item"}`))
	}
	g := step("g", 1, "", "succeeded", 3020, 100, `{}`)
	g.Type = "parallel"
	b.AddStep(g)
	page := filepath.Join(t.TempDir(), "report.html")
	var buf bytes.Buffer
	if err := WriteAt(&buf, b, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(page, buf.Bytes(), 0o644)

	d := chromium.Open(t, "file://"+page, "file:")
	if got := d.Eval(`document.querySelectorAll("#steps div.lazy").length > 0 && !document.getElementById("step-s-200")`); got != "true" {
		t.Fatal("the page opened with its closed steps already in it")
	}
	// A click on the timeline's link to visit 200.
	d.Eval(`document.querySelector('#timeline a[href="#step-s-200"]').click()`)
	d.WaitFor(`document.getElementById("step-s-200")?.open === true`, "the linked step to be shown open")
	if got := d.String(`document.querySelector("#step-s-200 details.output pre").textContent`); got != "visit 200 says hello" {
		t.Errorf("the linked step's output reads %q", got)
	}
	if got := d.Eval(`document.querySelector("#step-s-200 details.output pre").checkVisibility() && location.hash === "#step-s-200"`); got != "true" {
		t.Error("the linked step's output is not shown, or the address does not name it")
	}
	// An address naming a step: the hostile output, then an item inside a group.
	d.Eval(`location.hash = "#step-s-150"`)
	d.WaitFor(`document.getElementById("step-s-150")?.open === true`, "the step the address names to be shown open")
	if got := d.String(`document.querySelector("#step-s-150 details.output pre").textContent`); got != hostile {
		t.Errorf("the hostile output reads %q, want it as text", got)
	}
	d.Eval(`location.hash = "#step-g[7]-1"`)
	d.WaitFor(`document.getElementById("step-g[7]-1")?.checkVisibility() === true`, "the item the address names to be shown in its open group")
	// Scrolling to the steps brings them all in, the hostile label too.
	for range 20 {
		if d.Eval(`document.querySelectorAll("#steps div.lazy").length`) == "0" {
			break
		}
		d.Eval(`(document.querySelector("#steps div.lazy") || document.body).scrollIntoView()`)
		d.WaitFor(`new Promise(r => requestAnimationFrame(() => setTimeout(() => r(true), 50)))`, "a frame")
	}
	if got := d.Eval(`document.querySelectorAll("#steps div.lazy").length`); got != "0" {
		t.Fatalf("%s boxes of steps still not shown after scrolling to each", got)
	}
	if got := d.Eval(`document.querySelectorAll("#steps details.step").length`); got != "332" {
		t.Errorf("%s steps in the page once all are shown, want 332", got)
	}
	if got := d.Eval(`[document.querySelectorAll("img").length, document.querySelectorAll("script:not([type])").length, typeof window.pwned]`); got != `[0,1,"undefined"]` {
		t.Errorf("[images, scripts that run, window.pwned] = %s: markup from the run got into the page", got)
	}
	if got := d.String(`[...document.querySelectorAll("#steps details.step > summary")].filter(s => s.textContent.includes("onerror")).map(s => s.textContent).join("\n")`); got != `x"><img src=x onerror="window.pwned=3"> command succeeded 5ms` {
		t.Errorf("the hostile label's step reads %q, want its label as text", got)
	}
}
