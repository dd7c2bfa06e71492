package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/planrunner/runner/internal/runs"
)

// launches records what the server asked to start.
type launches struct {
	mu   sync.Mutex
	dirs []string
	args [][]string
}

func (l *launches) launch(dir string, args ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dirs, l.args = append(l.dirs, dir), append(l.args, args)
	// As the process would, soon: its board where --out says.
	for i, a := range args {
		if a == "--out" && i+1 < len(args) {
			os.MkdirAll(filepath.Dir(args[i+1]), 0o755)
			os.WriteFile(args[i+1], []byte("{}"), 0o644)
		}
	}
	return nil
}

// errorOf is the error a refusal's JSON says.
func errorOf(text string) string {
	var e struct{ Error string }
	json.Unmarshal([]byte(text), &e)
	return e.Error
}

func (l *launches) last() (string, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.args) == 0 {
		return "", nil
	}
	return l.dirs[len(l.dirs)-1], l.args[len(l.args)-1]
}

// The plans page lists each plan under the served directory (not the
// runs' folders, not a YAML file that is no plan) with its name and its
// vars' defaults as a form; starting one launches `runner run` of that
// file only, with the vars given, saved under the served runs with the
// id the reply names; a plan outside the list or a var the plan lacks is
// refused before anything starts.
func TestServeStartsAPlan(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "plans"), 0o755)
	os.WriteFile(filepath.Join(dir, "plans", "deploy.yaml"), []byte(`version: 1
name: deploy the <site>
description: Ship it.
vars: {env: staging, replicas: 2, tags: [a, b]}
steps:
  - {label: go, type: command, run: "echo ${{ vars.env }}"}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.yaml"), []byte("just: data\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".runner", "runs", "x"), 0o755)
	os.WriteFile(filepath.Join(dir, ".runner", "runs", "x", "plan.yaml"), []byte("version: 1\nsteps: [{label: a, type: command, run: \"true\"}]\n"), 0o644)
	var l launches
	c := newClient(t, dir, Options{Launch: l.launch})
	c.login()
	resp, page := c.do("GET", "/plans", nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, page)
	}
	for _, want := range []string{`<section class="plan" data-plan="plans/deploy.yaml"><h2>deploy the &lt;site&gt;`,
		`<input name="v.env" value="staging">`, `<input name="v.replicas" value="2">`, `<input name="v.tags" value="[&#34;a&#34;,&#34;b&#34;]">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the plans page lacks %s", want)
		}
	}
	for _, not := range []string{"notes.yaml", ".runner"} {
		if strings.Contains(page, `data-plan="`+not) {
			t.Errorf("the plans page offers %s", not)
		}
	}
	abs, _ := filepath.Abs(dir)
	for _, c2 := range []struct {
		name string
		form url.Values
		code int
		say  string
	}{
		{"not a plan listed", url.Values{"plan": {"notes.yaml"}}, 404, `no plan "notes.yaml"`},
		{"outside the directory", url.Values{"plan": {"../deploy.yaml"}}, 404, "no plan"},
		{"an unknown var", url.Values{"plan": {"plans/deploy.yaml"}, "v.nope": {"1"}}, 400, `has no var "nope"`},
	} {
		resp, text := c.post("/runs", c2.form)
		if resp.StatusCode != c2.code || !strings.Contains(errorOf(text), c2.say) {
			t.Errorf("%s: %d %s, want %d saying %q", c2.name, resp.StatusCode, text, c2.code, c2.say)
		}
	}
	if _, args := l.last(); args != nil {
		t.Fatalf("a refused start launched %v", args)
	}
	// The launched process does not run here: the reply says so and
	// still names the run's page.
	resp, text := c.post("/runs", url.Values{"plan": {"plans/deploy.yaml"}, "v.env": {"prod; rm -rf /"}, "v.replicas": {"3"}})
	var rep actionReply
	json.Unmarshal([]byte(text), &rep)
	if resp.StatusCode != 200 || rep.ID == "" || rep.URL != "/runs/"+rep.ID {
		t.Fatalf("start: %d %s", resp.StatusCode, text)
	}
	wd, args := l.last()
	want := []string{"run", filepath.Join(abs, "plans", "deploy.yaml"), "--workdir", abs,
		"--out", filepath.Join(runs.RunsDir(abs), rep.ID, "blackboard.json"), "-q", "--var", "env=prod; rm -rf /", "--var", "replicas=3"}
	if wd != abs || !reflect.DeepEqual(args, want) {
		t.Errorf("launched in %s: %q\nwant in %s: %q", wd, args, abs, want)
	}
}

// Stop, resume and fork say why they cannot act: no process runs the
// run, a succeeded run has nothing to resume, a fork names a step the
// run never ran; a fork of a step it ran launches `runner replay --from`
// in the run's workdir, saved as a new run beside it.
func TestServeRunActions(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
steps:
  - {label: one, type: command, run: "echo one"}
  - {label: two, type: command, run: "echo two"}
`), 0o644)
	res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir}, runs.Env{})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Board.Run().ID
	var l launches
	c := newClient(t, dir, Options{Launch: l.launch, Resume: func(string) error { t.Error("resumed a succeeded run"); return nil }})
	c.login()
	resp, page := c.do("GET", "/runs/"+id, nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(page, `<form class="action" data-action="/runs/`+id+`/fork"><label>fork from <select name="from"><option>one</option><option>two</option></select>`) ||
		strings.Contains(page, `id="stop"`) || strings.Contains(page, `id="resume"`) {
		t.Errorf("a succeeded run's page should offer a fork only:\n%.3000s", page)
	}
	for _, a := range []struct {
		path string
		form url.Values
		code int
		say  string
	}{
		{"/runs/" + id + "/stop", nil, 409, "is not running in a process of this machine"},
		{"/runs/" + id + "/resume", nil, 409, "has succeeded: there is nothing to resume"},
		{"/runs/" + id + "/fork", url.Values{"from": {"three"}}, 400, "three"},
		{"/runs/" + id + "/fork", url.Values{"from": {"two#2"}}, 400, "visit"},
		{"/runs/" + id + "/fork", url.Values{}, 400, "which step"},
		{"/runs/NOPE/fork", url.Values{"from": {"two"}}, 404, "no run NOPE"},
	} {
		resp, text := c.post(a.path, a.form)
		if resp.StatusCode != a.code || !strings.Contains(errorOf(text), a.say) {
			t.Errorf("POST %s %v: %d %s, want %d saying %q", a.path, a.form, resp.StatusCode, text, a.code, a.say)
		}
	}
	if _, args := l.last(); args != nil {
		t.Fatalf("a refused fork launched %v", args)
	}
	resp, text := c.post("/runs/"+id+"/fork", url.Values{"from": {"two"}})
	var rep actionReply
	json.Unmarshal([]byte(text), &rep)
	if resp.StatusCode != 200 || rep.ID == "" || rep.ID == id || rep.URL != "/runs/"+rep.ID {
		t.Fatalf("fork: %d %s", resp.StatusCode, text)
	}
	abs, _ := filepath.Abs(dir)
	wd, args := l.last()
	want := []string{"replay", res.Board.Path(), "--workdir", abs, "--from", "two", "--out", filepath.Join(runs.RunsDir(abs), rep.ID, "blackboard.json"), "-q"}
	if wd != abs || !reflect.DeepEqual(args, want) {
		t.Errorf("launched in %s: %q\nwant in %s: %q", wd, args, abs, want)
	}
}

// Every action is a POST behind the token, the CSRF header and this
// server's Origin; the page that starts runs needs the token.
func TestServeActionsNeedTheCredential(t *testing.T) {
	dir := t.TempDir()
	id := waitingRun(t, dir)
	var l launches
	c := newClient(t, dir, Options{Launch: l.launch, Resume: func(string) error { return nil }})
	c.login()
	posts := []struct {
		path string
		form url.Values
	}{
		{"/runs", url.Values{"plan": {"plan.yaml"}}},
		{"/runs/" + id + "/stop", nil},
		{"/runs/" + id + "/resume", nil},
		{"/runs/" + id + "/fork", url.Values{"from": {"approve"}}},
	}
	for _, p := range posts {
		for _, w := range []struct {
			what string
			set  func(*http.Request)
			code int
		}{
			{"no token", func(r *http.Request) {
				r.Header.Del("Authorization")
				r.Header.Set("X-Runner-CSRF", c.s.csrf)
				r.Header.Set("Origin", c.srv.URL)
			}, 401},
			{"no CSRF header", func(r *http.Request) { r.Header.Set("Origin", c.srv.URL) }, 403},
			{"another origin", func(r *http.Request) {
				r.Header.Set("X-Runner-CSRF", c.s.csrf)
				r.Header.Set("Origin", "http://evil.example")
			}, 403},
		} {
			resp, text := c.do("POST", p.path, p.form, w.set)
			if resp.StatusCode != w.code {
				t.Errorf("POST %s with %s: %d %s, want %d", p.path, w.what, resp.StatusCode, text, w.code)
			}
		}
	}
	if _, args := l.last(); args != nil {
		t.Errorf("a refused request launched %v", args)
	}
	c.auth = ""
	if resp, text := c.do("GET", "/plans", nil, nil); resp.StatusCode != 401 || strings.Contains(text, "plan.yaml") {
		t.Errorf("the plans page without the token: %d %.200s", resp.StatusCode, text)
	}
}
