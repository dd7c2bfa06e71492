package web

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/planrunner/runner/internal/liveboard"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/runs"
)

// waitingRun runs a plan that stops at an input, under dir, and returns
// its id.
func waitingRun(t *testing.T, dir string) string {
	t.Helper()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
steps:
  - {label: approve, type: input, prompt: "Ship it?", form: {properties: {ship: {type: boolean}, size: {type: integer}}, required: [ship]}}
  - {label: after, type: command, run: "true"}
`), 0o644)
	res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir}, runs.Env{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := board.Load(res.Board.Path())
	if err != nil {
		t.Fatal(err)
	}
	if b.Run().Status != board.StatusWaiting {
		t.Fatalf("the run should wait, it is %s", b.Run().Status)
	}
	return b.Run().ID
}

type client struct {
	t    *testing.T
	srv  *httptest.Server
	s    *Server
	auth string // the Authorization header the page's scripts send ("": none)
	host string
}

func newClient(t *testing.T, dir string, o Options) *client {
	t.Helper()
	o.Dir = dir
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &client{t: t, srv: srv, s: s, host: strings.TrimPrefix(srv.URL, "http://")}
}

// do sends a request; set changes it before it goes.
func (c *client) do(method, path string, body url.Values, set func(*http.Request)) (*http.Response, string) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(body.Encode())
	}
	req, _ := http.NewRequest(method, c.srv.URL+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	if set != nil {
		set(req)
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// login takes the token as the page's script does: from the fragment
// the token's URL redirects to.
func (c *client) login() {
	c.t.Helper()
	resp, _ := c.do("GET", "/?token="+url.QueryEscape(c.s.Token()), nil, nil)
	loc, ok := strings.CutPrefix(resp.Header.Get("Location"), "/#token=")
	if !ok {
		c.t.Fatalf("the token's URL redirects to %q, want the fragment #token=", resp.Header.Get("Location"))
	}
	tok, _ := url.QueryUnescape(loc)
	c.auth = "Bearer " + tok
}

// post is a POST as the page makes it: token header, CSRF header, Origin.
func (c *client) post(path string, body url.Values) (*http.Response, string) {
	return c.do("POST", path, body, func(r *http.Request) {
		r.Header.Set("X-Runner-CSRF", c.s.csrf)
		r.Header.Set("Origin", c.srv.URL)
	})
}

// The token is needed for every page, stream and answer, as the header
// Authorization: Bearer (never a cookie, nor the URL after the first
// visit, which moves it to the fragment); a POST also needs the CSRF
// header and this server's Origin; a Host that is not loopback (DNS
// rebinding) is refused; each refusal says what is missing. The embedded
// scripts, the same in every runner, are served to anyone.
func TestServeRefusesWithoutTheToken(t *testing.T) {
	dir := t.TempDir()
	id := waitingRun(t, dir)
	c := newClient(t, dir, Options{})
	answer := url.Values{"label": {"approve"}, "f.ship": {"true"}, "by": {"eve"}}
	csrf := func(r *http.Request) { r.Header.Set("X-Runner-CSRF", c.s.csrf) }
	origin := func(o string) func(r *http.Request) {
		return func(r *http.Request) { csrf(r); r.Header.Set("Origin", o) }
	}
	cases := []struct {
		name, method, path string
		login              bool
		set                func(*http.Request)
		code               int
		say                string
	}{
		{"list without token", "GET", "/", false, nil, 401, "needs the token"},
		{"run page without token", "GET", "/runs/" + id, false, nil, 401, "needs the token"},
		{"events without token", "GET", "/runs/" + id + "/events", false, nil, 401, "needs the token"},
		{"graph without token", "GET", "/runs/" + id + "/graph", false, nil, 401, "needs the token"},
		{"asset without token", "GET", "/assets/live.js", false, nil, 200, "runner serve"},
		{"wrong token", "GET", "/?token=nope", false, nil, 401, "not this server"},
		{"wrong bearer", "GET", "/", false, func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, 401, "needs the token"},
		{"the token as a cookie", "GET", "/", false, func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "runner_token", Value: c.s.Token()}) }, 401, "needs the token"},
		{"the token bare", "GET", "/", false, func(r *http.Request) { r.Header.Set("Authorization", c.s.Token()) }, 401, "needs the token"},
		{"the CSRF token as bearer", "GET", "/", false, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+c.s.csrf) }, 401, "needs the token"},
		{"answer without token", "POST", "/runs/" + id + "/answer", false, origin(""), 401, "needs the token"},
		{"answer without CSRF", "POST", "/runs/" + id + "/answer", true, func(r *http.Request) { r.Header.Set("Origin", c.srv.URL) }, 403, "CSRF"},
		{"answer with a wrong CSRF", "POST", "/runs/" + id + "/answer", true, func(r *http.Request) {
			r.Header.Set("Origin", c.srv.URL)
			r.Header.Set("X-Runner-CSRF", c.s.token)
		}, 403, "CSRF"},
		{"answer without Origin", "POST", "/runs/" + id + "/answer", true, csrf, 403, "another origin (none given)"},
		{"answer from another origin", "POST", "/runs/" + id + "/answer", true, origin("http://evil.example"), 403, "another origin (http://evil.example)"},
		{"rebinding host", "GET", "/", true, func(r *http.Request) { r.Host = "evil.example:80" }, 421, "loopback address only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.auth = ""
			if tc.login {
				c.login()
			}
			var body url.Values
			if tc.method == "POST" {
				body = answer
			}
			resp, text := c.do(tc.method, tc.path, body, tc.set)
			if resp.StatusCode != tc.code || !strings.Contains(text, tc.say) {
				t.Errorf("got %d %q, want %d saying %q", resp.StatusCode, text, tc.code, tc.say)
			}
			if strings.Contains(text, c.s.Token()) {
				t.Error("a refusal shows the token")
			}
		})
	}
	// Nothing refused was recorded.
	b, _ := board.Load(filepath.Join(runs.RunsDir(dir), id, "blackboard.json"))
	if len(b.Recordings()) != 0 && hasAnswer(b) {
		t.Error("a refused request recorded an answer")
	}

	c.auth = ""
	resp, _ := c.do("GET", "/runs/"+id+"?token="+url.QueryEscape(c.s.Token()), nil, nil)
	if want := "/runs/" + id + "#token=" + url.QueryEscape(c.s.Token()); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
		t.Errorf("the token's URL: %d to %q, want 303 to %q (the token in the fragment only)", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	if len(resp.Cookies()) != 0 {
		t.Errorf("the token's URL sets cookies %v, want none", resp.Cookies())
	}
	// A page refused for want of the header carries the script that
	// fetches it again with the token its origin keeps.
	_, text := c.do("GET", "/runs/"+id, nil, nil)
	if !strings.Contains(text, `<script src="/assets/boot.js">`) {
		t.Errorf("the refusal of a page has no boot script:\n%s", text)
	}
}

func hasAnswer(b *board.Board) bool {
	for _, r := range b.Recordings() {
		if strings.Contains(r.Kind, "answer") {
			return true
		}
	}
	return false
}

// Answers from the page go through the same checks as `runner answer`:
// a field the form lacks or of the wrong type, a missing required field,
// a step that does not wait, an unnamed answerer, each refused saying
// what is wrong; the answer is recorded once, the same one again is
// taken as already given, a different one is a conflict; and the run is
// resumed once the answer is on its file.
func TestServeAnswersAsRunnerAnswerDoes(t *testing.T) {
	dir := t.TempDir()
	id := waitingRun(t, dir)
	var resumed []string
	c := newClient(t, dir, Options{Resume: func(p string) error { resumed = append(resumed, p); return nil }})
	c.login()
	path := "/runs/" + id + "/answer"
	cases := []struct {
		name string
		form url.Values
		code int
		say  string
	}{
		{"wrong type", url.Values{"label": {"approve"}, "f.ship": {"maybe"}, "by": {"ann"}}, 400, `field "ship": want true or false`},
		{"not a number", url.Values{"label": {"approve"}, "f.ship": {"true"}, "f.size": {"big"}, "by": {"ann"}}, 400, `field "size": want an integer`},
		{"unknown field", url.Values{"label": {"approve"}, "f.ship": {"true"}, "f.colour": {"red"}, "by": {"ann"}}, 400, `field "colour" is not in the form`},
		{"required missing", url.Values{"label": {"approve"}, "f.size": {"3"}, "by": {"ann"}}, 400, `"ship" is required`},
		{"no one answers", url.Values{"label": {"approve"}, "f.ship": {"true"}}, 400, "say who answers"},
		{"no step", url.Values{"f.ship": {"true"}, "by": {"ann"}}, 400, "names no step"},
		{"bad visit", url.Values{"label": {"approve"}, "visit": {"-1"}, "f.ship": {"true"}, "by": {"ann"}}, 400, "want a number from 1"},
		{"step that does not wait", url.Values{"label": {"after"}, "f.ship": {"true"}, "by": {"ann"}}, 404, "after"},
		{"step the plan lacks", url.Values{"label": {"nope"}, "f.ship": {"true"}, "by": {"ann"}}, 404, "nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, text := c.post(path, tc.form)
			var rep map[string]string
			json.Unmarshal([]byte(text), &rep)
			if resp.StatusCode != tc.code || !strings.Contains(rep["error"], tc.say) {
				t.Errorf("got %d %s, want %d with an error saying %q", resp.StatusCode, text, tc.code, tc.say)
			}
		})
	}
	if len(resumed) != 0 {
		t.Fatalf("a refused answer resumed the run")
	}
	good := url.Values{"label": {"approve"}, "f.ship": {"yes"}, "f.size": {"3"}, "by": {"ann"}}
	resp, text := c.post(path, good)
	var rep answerReply
	json.Unmarshal([]byte(text), &rep)
	if resp.StatusCode != 200 || rep.Already || !rep.Resumed || rep.Where != "file" {
		t.Fatalf("the answer: %d %s", resp.StatusCode, text)
	}
	bb := filepath.Join(runs.RunsDir(dir), id, "blackboard.json")
	if len(resumed) != 1 || resumed[0] != bb {
		t.Fatalf("resumed %q, want the run's file once", resumed)
	}
	// The same answer again: taken as already given.
	resp, text = c.post(path, good)
	json.Unmarshal([]byte(text), &rep)
	if resp.StatusCode != 200 || !rep.Already || !strings.Contains(rep.Message, "already answered") {
		t.Errorf("the same answer again: %d %s", resp.StatusCode, text)
	}
	// A different one: a conflict, naming the answer recorded.
	resp, text = c.post(path, url.Values{"label": {"approve"}, "f.ship": {"no"}, "by": {"bob"}})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(text, "already answered") || !strings.Contains(text, "ann") {
		t.Errorf("a different answer: %d %s, want 409 naming the recorded answer", resp.StatusCode, text)
	}
	b, err := board.Load(bb)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range b.Recordings() {
		if strings.Contains(string(r.Response), `"by":"ann"`) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the answer is recorded %d times, want once", n)
	}
}

// A run is named by its id only: a path, .., or an id that is no run is
// not found, and nothing outside the runs directory is read.
func TestServeRunIDsAreNotPaths(t *testing.T) {
	dir := t.TempDir()
	waitingRun(t, dir)
	c := newClient(t, dir, Options{})
	c.login()
	for _, p := range []string{"/runs/..", "/runs/..%2F..%2Fplan.yaml", "/runs/%2Fetc%2Fpasswd", "/runs/NOPE", "/runs/.runner", "/runs/a%00b"} {
		resp, text := c.do("GET", p, nil, nil)
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMovedPermanently && resp.StatusCode != http.StatusTemporaryRedirect && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d %.100q, want not found", p, resp.StatusCode, text)
		}
		if strings.Contains(text, "steps:") {
			t.Errorf("%s shows a file outside the runs", p)
		}
	}
}

// A run page's event stream says "change" when the run changes (here a
// write to its board by another process, as `runner board put`), and
// the page fetches itself again.
func TestServeRunEventsFollowTheRun(t *testing.T) {
	dir := t.TempDir()
	id := waitingRun(t, dir)
	c := newClient(t, dir, Options{})
	c.login()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.srv.URL+"/runs/"+id+"/events", nil)
	req.Header.Set("Authorization", c.auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	next := func() string {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream ended: %v", err)
			}
			if strings.HasPrefix(line, "event: ") {
				return strings.TrimSpace(strings.TrimPrefix(line, "event: "))
			}
		}
	}
	if ev := next(); ev != "change" {
		t.Fatalf("first event %q, want change (catch up)", ev)
	}
	got := make(chan string, 1)
	go func() { got <- next() }()
	a, err := liveboard.Open(filepath.Join(runs.RunsDir(dir), id, "blackboard.json"), liveboard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write(liveboard.WriteRequest{Key: "note", Value: "hi", Agent: "ops"}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	select {
	case ev := <-got:
		if ev != "change" {
			t.Errorf("event %q, want change", ev)
		}
	case <-ctx.Done():
		t.Fatal("no event after the board changed")
	}
}

// An input answered from the page while its run still runs other steps
// (a parallel sibling) is taken through the run's socket, and once those
// steps end and the run stops to wait, the server resumes it.
func TestServeResumesALiveRunOnceItStops(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
steps:
  - label: both
    parallel:
      - {label: approve, type: input, prompt: "Ship it?", form: {properties: {ship: {type: boolean}}, required: [ship]}}
      - {label: slow, type: command, run: "while [ ! -f `+gate+` ]; do sleep 0.05; done"}
  - {label: after, type: command, run: "true"}
`), 0o644)
	id := "01TESTLIVE"
	bb := filepath.Join(runs.RunsDir(dir), id, "blackboard.json")
	done := make(chan error, 1)
	go func() {
		_, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir, Board: bb}, runs.Env{})
		done <- err
	}()
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o644); <-done })
	resumed := make(chan string, 1)
	c := newClient(t, dir, Options{Resume: func(p string) error { resumed <- p; return nil }})
	c.login()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The run serves its board once it has started.
	for {
		if o, err := boardlock.ReadOwner(bb); err == nil && o.Socket != "" {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the run did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Then the input asks, while slow still runs.
	var resp *http.Response
	var text string
	for {
		resp, text = c.post("/runs/"+id+"/answer", url.Values{"label": {"approve"}, "f.ship": {"true"}, "by": {"ann"}})
		if resp.StatusCode != http.StatusNotFound || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var rep answerReply
	json.Unmarshal([]byte(text), &rep)
	if resp.StatusCode != 200 || rep.Where != "live" || !strings.Contains(rep.Message, "it is resumed") {
		t.Fatalf("the answer to a live run: %d %s", resp.StatusCode, text)
	}
	select {
	case p := <-resumed:
		t.Fatalf("resumed %s while the run still ran", p)
	default:
	}
	os.WriteFile(gate, nil, 0o644)
	select {
	case p := <-resumed:
		if p != bb {
			t.Errorf("resumed %s, want %s", p, bb)
		}
	case <-ctx.Done():
		t.Fatal("the run was not resumed once it stopped")
	}
	b, err := board.Load(bb)
	if err != nil {
		t.Fatal(err)
	}
	if b.Run().Status != board.StatusWaiting {
		t.Errorf("the run stopped %s, want waiting (for its resume)", b.Run().Status)
	}
}
