package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/notify"
	"github.com/planrunner/runner/internal/runs"
)

// linkedRun runs, under dir, a plan whose two inputs wait at once and
// whose notify target asks for single-use links; it returns the run's id
// and each input's link query (step, visit, token), by step.
func linkedRun(t *testing.T, dir string) (string, map[string]url.Values) {
	t.Helper()
	var mu sync.Mutex
	links := map[string]url.Values{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ev notify.Event
		json.Unmarshal(b, &ev)
		if ev.Input != nil && ev.Input.Link != "" {
			u, err := url.Parse(ev.Input.Link)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			links[ev.Input.Step] = u.Query()
			mu.Unlock()
		}
	}))
	defer hook.Close()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
notify:
  - url: `+hook.URL+`
    link: {base: "http://127.0.0.1:1", ttl: 1h}
steps:
  - label: both
    parallel:
      - {label: ship, type: input, prompt: "Ship it?", form: {properties: {ship: {type: boolean}}, required: [ship]}}
      - {label: size, type: input, prompt: "How many?", form: {properties: {n: {type: integer}}, required: [n]}}
`), 0o644)
	res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir}, runs.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status() != board.StatusWaiting || len(links) != 2 {
		t.Fatalf("the run is %s with links %v; want waiting with two links", res.Status(), links)
	}
	return res.Board.Run().ID, links
}

// A single-use link answers its own input, once, before it expires,
// without the serve token; another input's link, an expired link, a
// wrong token and a second use are refused, and the input keeps waiting.
func TestServeSingleUseLink(t *testing.T) {
	dir := t.TempDir()
	id, links := linkedRun(t, dir)
	now := time.Now()
	c := newClient(t, dir, Options{Now: func() time.Time { return now }})
	once := "/once/" + id
	with := func(q url.Values, set map[string]string) url.Values {
		out := url.Values{}
		for k, v := range q {
			out[k] = v
		}
		for k, v := range set {
			out.Set(k, v)
		}
		return out
	}
	ship, size := links["ship"], links["size"]
	// The link's page shows the input's form, without the serve token.
	resp, page := c.do("GET", once+"?"+ship.Encode(), nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "Ship it?") || !strings.Contains(page, `name="f.ship"`) {
		t.Fatalf("the link's page: %d %s", resp.StatusCode, page)
	}
	post := func(form url.Values) (*http.Response, string) {
		return c.do("POST", once, form, func(r *http.Request) { r.Header.Set("Accept", "application/json") })
	}
	cases := []struct {
		name string
		form url.Values
		at   time.Duration // after now
		code int
		say  string
	}{
		{"another input's link", with(size, map[string]string{"step": "ship", "f.ship": "true"}), 0, 403, "does not answer this input"},
		{"no token", with(ship, map[string]string{"token": "", "f.ship": "true"}), 0, 403, "does not answer this input"},
		{"wrong token", with(ship, map[string]string{"token": strings.Repeat("0", 48), "f.ship": "true"}), 0, 403, "does not answer this input"},
		{"expired", with(ship, map[string]string{"f.ship": "true"}), 2 * time.Hour, 410, "expired"},
		{"answer the form refuses", with(ship, map[string]string{"f.ship": "maybe"}), 0, 400, "want true or false"},
		{"first use", with(ship, map[string]string{"f.ship": "true"}), 0, 200, "answered ship"},
		{"second use", with(ship, map[string]string{"f.ship": "true"}), 0, 410, "used already"},
		{"the other link still works", with(size, map[string]string{"f.n": "3"}), 0, 200, "answered size"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now = time.Now().Add(tc.at)
			resp, text := post(tc.form)
			if resp.StatusCode != tc.code || !strings.Contains(text, tc.say) {
				t.Errorf("got %d %s, want %d saying %q", resp.StatusCode, text, tc.code, tc.say)
			}
		})
	}
	b, err := board.Load(filepath.Join(runs.RunsDir(dir), id, "blackboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range b.Recordings() {
		if r.Kind == "input" {
			got = append(got, r.Label+" "+string(r.Response))
		}
	}
	want := []string{
		`ship {"answer":{"ship":true},"by":"single-use link","asked":{"prompt":"Ship it?","fields":[{"name":"ship","type":"boolean","required":true}]}}`,
		`size {"answer":{"n":3},"by":"single-use link","asked":{"prompt":"How many?","fields":[{"name":"n","type":"integer","required":true}]}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("recorded answers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// serve knows a person by a per-person token or, when configured, a
// trusted proxy's header; an input that names answerers takes an answer
// from them only (recorded under the name serve knows, not the form's),
// and anyone else is refused while it keeps waiting.
func TestServeKnowsWhoAnswers(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
steps:
  - {label: ok, type: input, prompt: "Go?", answerers: [ann], form: {properties: {go: {type: boolean}}, required: [go]}}
`), 0o644)
	res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir}, runs.Env{})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Board.Run().ID
	annTok, bobTok := strings.Repeat("a", 32), strings.Repeat("b", 32)
	people := map[string]string{annTok: "ann", bobTok: "bob"}
	cases := []struct {
		name   string
		o      Options
		auth   string // "": the serve token
		header string // X-Forwarded-User
		code   int
		say    string
	}{
		{"the serve token is no one", Options{People: people}, "", "", 403, "is not known for sure"},
		{"a header not configured is not trusted", Options{People: people}, "", "ann", 403, "is not known for sure"},
		{"a person not named", Options{People: people}, bobTok, "", 403, "bob is not among the input's answerers (ann)"},
		{"the proxy's header names someone else", Options{UserHeader: "X-Forwarded-User"}, "", "mallory", 403, "mallory is not among"},
		{"a person named", Options{People: people}, annTok, "", 200, "answered ok"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, dir, tc.o)
			c.login()
			if tc.auth != "" {
				c.auth = "Bearer " + tc.auth
			}
			resp, text := c.do("POST", "/runs/"+id+"/answer", url.Values{"label": {"ok"}, "f.go": {"yes"}, "by": {"mallory"}}, func(r *http.Request) {
				r.Header.Set("X-Runner-CSRF", c.s.csrf)
				r.Header.Set("Origin", c.srv.URL)
				if tc.header != "" {
					r.Header.Set("X-Forwarded-User", tc.header)
				}
			})
			if resp.StatusCode != tc.code || !strings.Contains(text, tc.say) {
				t.Errorf("got %d %s, want %d saying %q", resp.StatusCode, text, tc.code, tc.say)
			}
		})
	}
	b, err := board.Load(res.Board.Path())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range b.Recordings() {
		if r.Kind == "input" {
			got = append(got, string(r.Response))
		}
	}
	if len(got) != 1 || got[0] != `{"answer":{"go":true},"by":"ann","asked":{"prompt":"Go?","fields":[{"name":"go","type":"boolean","required":true}]}}` {
		t.Errorf("recorded answers %q, want one by ann", got)
	}
}
