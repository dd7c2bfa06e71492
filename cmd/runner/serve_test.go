package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	chromiumpkg "github.com/planrunner/runner/internal/testutil/chromium"
)

// startServe starts `runner serve --dir dir` and returns the URL it
// printed (with its token); the server is stopped when the test ends.
func startServe(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--dir", dir}, args...)...)
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if t.Failed() {
			t.Logf("runner serve's stderr:\n%s", errb.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("runner serve printed no URL: %v\n%s", err, errb.String())
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(url, "/?token=") {
		t.Fatalf("runner serve printed %q, want its loopback URL with a token", url)
	}
	return url
}

// A run followed in a real browser, as a person would: the run list shows
// the run as it starts; its page shows each step's status change as the
// run goes (not run yet, running, succeeded), without a reload; an input it waits at is answered from the
// page and the run goes on to the end; a hostile output and question stay
// text; and without the token the page is refused.
func TestServeLiveRunInChromium(t *testing.T) {
	chromium(t)
	wd := t.TempDir()
	gate1, gate2 := filepath.Join(wd, "gate1"), filepath.Join(wd, "gate2")
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(fmt.Sprintf(`version: 1
name: live
steps:
  - {label: first, type: command, run: "while [ ! -f %s ]; do sleep 0.05; done; echo '<img src=x onerror=window.pwned=1>'"}
  - {label: second, type: command, run: "while [ ! -f %s ]; do sleep 0.05; done; echo second"}
  - label: approve
    type: input
    prompt: "Ship <script>window.pwned=2</script> it?"
    form: {properties: {ship: {type: boolean}, note: {type: string}}, required: [ship]}
  - {label: after, type: command, run: "echo after"}
`, gate1, gate2)), 0o644)
	url := startServe(t, wd)
	base := url[:strings.Index(url, "/?token=")]

	d := chromiumpkg.Open(t, url, base+"/")
	if got := d.Eval(`location.href`); strings.Contains(got, "token") {
		t.Errorf("the token stays in the address bar: %s", got)
	}
	d.WaitFor(`!!document.getElementById("no-runs")`, "the empty run list")
	d.Eval(`window.marker = "list"`)

	run := exec.Command(binary, "run", plan, "-q")
	run.Dir = wd
	ran := make(chan error, 1)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { ran <- run.Wait() }()
	t.Cleanup(func() { os.WriteFile(gate1, nil, 0o644); os.WriteFile(gate2, nil, 0o644) })

	d.WaitFor(`document.querySelector('#runs tr[data-id]')?.dataset.status === "running"`, "the run to appear in the list, running")
	if got := d.Eval(`window.marker`); got != `"list"` {
		t.Fatalf("the list page was reloaded (marker %s), not updated in place", got)
	}
	d.Eval(`document.querySelector('#runs tr[data-id] a').click()`)
	d.WaitLoaded(base + "/runs/")
	d.Eval(`window.marker = "run"`)
	d.WaitFor(`!!document.querySelector('#running code[data-label="first"]')`, "first, running")
	if got := d.Eval(`[!!document.querySelector('#never-ran code[data-label="second"]'), !!document.querySelector('#steps [data-label="first"]')]`); got != "[true,false]" {
		t.Errorf("while first runs: [second not run yet, first finished] = %s", got)
	}

	os.WriteFile(gate1, nil, 0o644)
	d.WaitFor(`document.querySelector('#steps [data-label="first"]')?.dataset.status === "succeeded"`, "first to succeed on the page")
	d.WaitFor(`!!document.querySelector('#running code[data-label="second"]')`, "second, running")
	if got := d.String(`document.getElementById("run-status").textContent`); got != "running" {
		t.Errorf("while second runs, the run says %q", got)
	}
	os.WriteFile(gate2, nil, 0o644)
	d.WaitFor(`document.querySelector('#steps [data-label="second"]')?.dataset.status === "succeeded"`, "second to succeed on the page")
	if err := <-ran; err == nil || run.ProcessState.ExitCode() != 4 {
		t.Fatalf("the run should stop to wait (exit 4): %v", err)
	}
	d.WaitFor(`!!document.querySelector('form.answer[data-label="approve"]')`, "the answer form")
	if got := d.Eval(`window.marker`); got != `"run"` {
		t.Fatalf("the run page was reloaded (marker %s), not updated in place", got)
	}

	// What the run printed and asked is text, not markup.
	if got := d.String(`document.querySelector('#steps [data-label="first"] .output pre').textContent`); !strings.Contains(got, "<img src=x onerror=window.pwned=1>") {
		t.Errorf("first's output shows as %q", got)
	}
	if got := d.String(`document.querySelector('#waiting .question').textContent`); got != "Ship <script>window.pwned=2</script> it?" {
		t.Errorf("the question shows as %q", got)
	}
	if got := d.Eval(`[document.querySelectorAll("main img, main script").length, typeof window.pwned]`); got != `[0,"undefined"]` {
		t.Errorf("hostile output became markup: [elements, pwned] = %s", got)
	}

	// Answered from the page: a wrong answer is refused saying why, then
	// the right one is taken and the run goes on.
	d.Eval(`(() => { const f = document.querySelector('form.answer[data-label="approve"]');
		f.elements["f.ship"].value = "true"; f.elements["f.note"].value = "ok <b>ship</b>"; f.elements["by"].value = "carol";
		f.querySelector('button').click(); })()`)
	d.WaitFor(`document.querySelector('#steps [data-label="after"]')?.dataset.status === "succeeded"`, "the run to go on after the answer")
	d.WaitFor(`document.getElementById("run-status").textContent === "succeeded"`, "the run to succeed")
	if got := d.String(`document.querySelector('#steps [data-label="approve"] .answered').textContent`); !strings.HasPrefix(got, "answered by carol") {
		t.Errorf("the answered input says %q", got)
	}
	if got := d.String(`document.querySelector('#steps [data-label="approve"] .answer').textContent`); !strings.Contains(got, `"note": "ok <b>ship</b>"`) || !strings.Contains(got, `"ship": true`) {
		t.Errorf("the recorded answer shows as %q", got)
	}
	if got := d.Eval(`window.marker`); got != `"run"` {
		t.Errorf("the run page was reloaded (marker %s), not updated in place", got)
	}

	// Without the token its origin keeps, the page is refused.
	d.Eval(`localStorage.clear()`)
	d.Call("Page.reload", map[string]any{}, nil)
	d.WaitFor(`document.readyState === "complete" && !!document.getElementById("error")`, "the refusal")
	if got := d.String(`document.getElementById("error").textContent`); !strings.Contains(got, "token") {
		t.Errorf("without the token the page says %q", got)
	}
	if got := d.Eval(`!!document.getElementById("steps")`); got != "false" {
		t.Error("without the token the run is shown")
	}
}

// runner serve listens on loopback unless told otherwise: another
// address without --allow-remote is refused saying the risk, and with it
// the server warns; a bad address or directory is a usage error.
func TestServeBindsLoopbackUnlessAllowed(t *testing.T) {
	wd := t.TempDir()
	for _, c := range []struct {
		args []string
		say  string
	}{
		{[]string{"--addr", "0.0.0.0:0"}, "not a loopback address: the runs and their inputs would be open to the network; add --allow-remote"},
		{[]string{"--addr", "192.0.2.1:8080"}, "--allow-remote"},
		{[]string{"--addr", "nonsense"}, `--addr "nonsense": want HOST:PORT`},
		{[]string{"--dir", filepath.Join(wd, "none")}, "not a directory"},
		{[]string{"extra"}, "serve takes no arguments"},
	} {
		r := runCLI(t, wd, append([]string{"serve"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.say) {
			t.Errorf("serve %v: exit %d %q, want 2 saying %q", c.args, r.code, r.stderr, c.say)
		}
	}
	cmd := exec.Command(binary, "serve", "--dir", wd, "--addr", "0.0.0.0:0", "--allow-remote")
	out, _ := cmd.StdoutPipe()
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if !strings.Contains(line, "/?token=") || !strings.Contains(errb.String(), "warning: listening on") || !strings.Contains(errb.String(), "not encrypted") {
		t.Errorf("--allow-remote: printed %q, warned %q", line, errb.String())
	}
}
