// Package chromium is how tests drive a real headless Chromium: find it
// (Find), start it with nothing that talks to the network (Args), and
// speak the DevTools protocol to it over --remote-debugging-pipe (Open).
// The protocol is one JSON message per NUL-terminated line on fds 3 and 4,
// a few dozen lines of our own: a browser-automation library (chromedp)
// would add a large dependency for the three calls the tests make.
// Only tests import it.
package chromium

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// Find finds a headless-capable Chromium ($RUNNER_CHROMIUM, else the
// usual names on PATH); a test without one skips, saying so, and fails
// under CI=true.
func Find(t testing.TB) string {
	t.Helper()
	const how = "the HTML tests need it; Debian: apt-get install chromium, which .ci/install does"
	if os.Getenv("RUNNER_CHROMIUM") != "" {
		return testtool.FromEnv(t, "RUNNER_CHROMIUM", "Chromium", how)
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testtool.Missing(t, "Chromium", how)
	return ""
}

// Args start a headless Chromium that talks to no one, with a profile in
// a fresh temporary directory.
func Args(t testing.TB, extra ...string) []string {
	return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir()}, extra...)
}

// Page is one tab of a headless Chromium, driven over DevTools.
type Page struct {
	t       testing.TB
	w       io.Writer
	r       *bufio.Reader
	id      int
	session string
}

// Open starts Chromium on url and waits for the page to load (its
// document complete at a URL that starts with prefix, "" for any but
// about:blank). The browser is closed when the test ends.
func Open(t testing.TB, url, prefix string) *Page {
	t.Helper()
	bin := Find(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, Args(t, "--remote-debugging-pipe", "about:blank")...)
	cmd.ExtraFiles = []*os.File{inR, outW}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	d := &Page{t: t, w: inW, r: bufio.NewReader(outR)}
	t.Cleanup(func() {
		// Closed by its own command, Chromium leaves nothing running that
		// would still write into its profile as the test removes it.
		d.session = ""
		d.id++
		inW.Write([]byte(`{"id":` + fmt.Sprint(d.id) + `,"method":"Browser.close"}` + "\x00"))
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		inW.Close()
		outR.Close()
	})
	var target struct{ TargetID string }
	d.Call("Target.createTarget", map[string]any{"url": url}, &target)
	var attached struct{ SessionID string }
	d.Call("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	d.session = attached.SessionID
	d.WaitLoaded(prefix)
	return d
}

// WaitLoaded waits until the page's document is complete at a URL
// starting with prefix ("" : any but about:blank).
func (d *Page) WaitLoaded(prefix string) {
	d.t.Helper()
	cond := `document.readyState === "complete" && location.href !== "about:blank"`
	if prefix != "" {
		p, _ := json.Marshal(prefix)
		cond += ` && location.href.startsWith(` + string(p) + `)`
	}
	d.WaitFor(cond, "the page to load")
}

// WaitFor waits until expr is true in the page, up to a minute (a bound
// on a broken test, not a measure of speed), failing the test with what
// it waited for.
func (d *Page) WaitFor(expr, what string) {
	d.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v, navigated := d.eval(expr)
		if v == "true" && !navigated {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("waited a minute for %s (%s)", what, expr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// navigatedMsg is DevTools' error for an evaluation the page left: it
// navigated (a click, a redirect) while the expression ran.
const navigatedMsg = "Inspected target navigated or closed"

// Call sends one command and waits for its answer (events are skipped).
func (d *Page) Call(method string, params any, out any) {
	d.t.Helper()
	if err := d.call(method, params, out); err != nil {
		d.t.Fatalf("devtools %s: %v", method, err)
	}
}

// call is Call, with DevTools' error returned rather than failing the test.
func (d *Page) call(method string, params any, out any) error {
	d.t.Helper()
	d.id++
	msg := map[string]any{"id": d.id, "method": method, "params": params}
	if d.session != "" {
		msg["sessionId"] = d.session
	}
	data, _ := json.Marshal(msg)
	if _, err := d.w.Write(append(data, 0)); err != nil {
		d.t.Fatalf("devtools %s: %v", method, err)
	}
	for {
		line, err := d.r.ReadBytes(0)
		if err != nil {
			d.t.Fatalf("devtools %s: %v", method, err)
		}
		var resp struct {
			ID     int
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if json.Unmarshal(line[:len(line)-1], &resp) != nil || resp.ID != d.id {
			continue
		}
		if resp.Error != nil {
			return errors.New(resp.Error.Message)
		}
		if out != nil {
			if err := json.Unmarshal(resp.Result, out); err != nil {
				d.t.Fatal(err)
			}
		}
		return nil
	}
}

// Eval is the JSON of what expr evaluates to in the page (a promise is
// awaited). DevTools evaluation is not subject to the page's CSP.
func (d *Page) Eval(expr string) string {
	d.t.Helper()
	v, navigated := d.eval(expr)
	if navigated {
		d.t.Fatalf("devtools Runtime.evaluate of %s: %s", expr, navigatedMsg)
	}
	return v
}

// eval is Eval, saying (navigated) when the page navigated while expr ran
// instead of failing the test: waiting for a condition then asks again.
func (d *Page) eval(expr string) (value string, navigated bool) {
	d.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct {
			Text      string
			Exception *struct{ Description string }
		}
	}
	if err := d.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res); err != nil {
		if strings.Contains(err.Error(), navigatedMsg) {
			return "", true
		}
		d.t.Fatalf("devtools Runtime.evaluate: %v", err)
	}
	if e := res.ExceptionDetails; e != nil {
		msg := e.Text
		if e.Exception != nil {
			msg += " " + e.Exception.Description
		}
		d.t.Fatalf("%s: %s", expr, strings.TrimSpace(msg))
	}
	return string(res.Result.Value), false
}

// String is what expr evaluates to, a string in the page.
func (d *Page) String(expr string) string {
	d.t.Helper()
	var s string
	if err := json.Unmarshal([]byte(d.Eval(expr)), &s); err != nil {
		d.t.Fatalf("%s: not a string: %v", expr, err)
	}
	return s
}
