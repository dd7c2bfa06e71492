package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/planrunner/runner/internal/testutil/chromium"
	"github.com/planrunner/runner/internal/testutil/manyruns"
)

// seen is what another local server received from the browser.
type seen struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *seen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r.Clone(r.Context()))
	s.mu.Unlock()
	switch r.URL.Path {
	case "/page":
		// A page of its own that asks its server again with every
		// credential the browser would add, as any local page may.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!DOCTYPE html><html><head><title>other</title></head><body><img src="/img.png">
<script>fetch("/probe", {credentials: "include"}).then(() => { document.title = "done"; });</script></body></html>`)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// The credential of runner serve stays with its origin: a browser that
// opened serve's URL and browsed it, then visited another server on
// another port of 127.0.0.1, sent that server nothing serve takes (each
// header value and cookie it received, replayed against serve, is
// refused), and the other origin's page cannot read the token; serve
// refuses every page, stream and answer without the credential; and
// back on serve's origin, the same browser browses on.
func TestServeCredentialStaysWithItsOrigin(t *testing.T) {
	dir := t.TempDir()
	id := waitingRun(t, dir)
	c := newClient(t, dir, Options{})
	other := &seen{}
	osrv := httptest.NewServer(other)
	t.Cleanup(osrv.Close)
	if !strings.HasPrefix(osrv.URL, "http://127.0.0.1:") || !strings.HasPrefix(c.srv.URL, "http://127.0.0.1:") || osrv.URL == c.srv.URL {
		t.Fatalf("want two ports of 127.0.0.1: %s and %s", c.srv.URL, osrv.URL)
	}

	// The person's flow: the printed URL, the list, a run's page.
	d := chromium.Open(t, c.s.URL(c.srv.URL), c.srv.URL+"/")
	d.WaitFor(`!!document.querySelector('#runs tr[data-id="`+id+`"] a')`, "the run in the list")
	d.WaitFor(`document.getElementById("live-state").textContent === "live"`, "the list's event stream")
	if got := d.String(`location.href`); strings.Contains(got, "token") {
		t.Errorf("the token stays in the address bar: %s", got)
	}
	d.Eval(`document.querySelector('#runs tr[data-id] a').click()`)
	d.WaitLoaded(c.srv.URL + "/runs/" + id)
	d.WaitFor(`!!document.querySelector('form.answer[data-label="approve"]')`, "the run's page with its input")
	d.WaitFor(`document.getElementById("live-state").textContent === "live"`, "the run's event stream")

	var jar struct {
		Cookies []struct{ Name, Domain string }
	}
	d.Call("Network.getAllCookies", map[string]any{}, &jar)
	if len(jar.Cookies) != 0 {
		t.Errorf("the browser holds cookies %v, which it would send to every port of 127.0.0.1", jar.Cookies)
	}

	// The same tab goes to the other server, as by a link.
	d.Eval(`location.href = ` + fmt.Sprintf("%q", osrv.URL+"/page"))
	d.WaitLoaded(osrv.URL + "/page")
	d.WaitFor(`document.title === "done"`, "the other page's own requests")
	if got := d.Eval(`[localStorage.length, document.cookie]`); got != `[0,""]` {
		t.Errorf("the other origin reads [its storage's length, cookies] = %s, want nothing", got)
	}

	// Whatever the other server received, replayed against serve, is
	// refused.
	replay := func(what string, set func(*http.Request)) {
		t.Helper()
		for _, p := range []string{"/", "/runs/" + id} {
			req, _ := http.NewRequest("GET", c.srv.URL+p, nil)
			set(req)
			cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s, replayed against serve's %s: %s, want 401", strings.ReplaceAll(what, c.s.Token(), "SERVE'S-TOKEN"), p, resp.Status)
			}
		}
	}
	other.mu.Lock()
	reqs := other.reqs
	other.mu.Unlock()
	if len(reqs) < 3 {
		t.Fatalf("the other server saw %d requests, want the page, its image and its fetch", len(reqs))
	}
	for _, r := range reqs {
		name := r.Method + " " + r.URL.String()
		replay(name+" whole", func(q *http.Request) { q.Header = r.Header.Clone() })
		var values []string
		for k, vs := range r.Header {
			for _, v := range vs {
				replay(fmt.Sprintf("%s header %s: %q", name, k, v), func(q *http.Request) { q.Header.Set(k, v) })
				values = append(values, v)
			}
		}
		for _, ck := range r.Cookies() {
			values = append(values, ck.Value)
		}
		for _, vs := range r.URL.Query() {
			values = append(values, vs...)
		}
		for _, v := range values {
			replay(fmt.Sprintf("%s value %q as bearer", name, v), func(q *http.Request) { q.Header.Set("Authorization", "Bearer "+v) })
			replay(fmt.Sprintf("%s value %q as cookie", name, v), func(q *http.Request) { q.Header.Set("Cookie", "runner_token="+v) })
			replay(fmt.Sprintf("%s value %q as ?token=", name, v), func(q *http.Request) { q.URL.RawQuery = "token=" + url.QueryEscape(v) })
		}
	}
	// The replay does reach serve: the token itself is taken.
	req, _ := http.NewRequest("GET", c.srv.URL+"/runs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+c.s.Token())
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("serve with its token: %v %v", resp, err)
	}

	// Without the credential, serve refuses every page, stream and answer.
	for _, tc := range []struct{ method, path string }{
		{"GET", "/"}, {"GET", "/events"}, {"GET", "/runs/" + id}, {"GET", "/runs/" + id + "/events"},
		{"GET", "/runs/" + id + "/graph"}, {"POST", "/runs/" + id + "/answer"},
	} {
		c.auth = ""
		var body url.Values
		if tc.method == "POST" {
			body = url.Values{"label": {"approve"}, "f.ship": {"true"}, "by": {"eve"}}
		}
		resp, text := c.do(tc.method, tc.path, body, func(r *http.Request) {
			r.Header.Set("X-Runner-CSRF", c.s.csrf)
			r.Header.Set("Origin", c.srv.URL)
		})
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(text, "Ship it?") {
			t.Errorf("%s %s without the token: %d %.200q, want 401 showing nothing of the run", tc.method, tc.path, resp.StatusCode, text)
		}
	}

	// Back on serve's origin, without the token in the address, the
	// browser browses on: the token is this origin's.
	d.Eval(`location.href = ` + fmt.Sprintf("%q", c.srv.URL+"/runs/"+id+"/graph"))
	d.WaitLoaded(c.srv.URL + "/runs/" + id + "/graph")
	d.WaitFor(`!!document.getElementById("graph")`, "the run's graph, back on serve")
}

// The run list pages and filters in a browser: the newest runs first, a
// page at a time, each under its plan's name; a status or a part of the
// plan's name keeps the runs that have it, and the filter stays as the
// list is paged.
func TestServeListPagesAndFilters(t *testing.T) {
	dir := t.TempDir()
	if err := manyruns.Write(dir, 120); err != nil { // one in ten failed
		t.Fatal(err)
	}
	waiting := waitingRun(t, dir) // the newest
	c := newClient(t, dir, Options{})
	d := chromium.Open(t, c.s.URL(c.srv.URL), c.srv.URL+"/")
	rows := `[...document.querySelectorAll('#runs tr[data-id]')]`
	ids := func() []string {
		var out []string
		json.Unmarshal([]byte(d.Eval(rows+`.map(r => r.dataset.id)`)), &out)
		return out
	}
	d.WaitFor(`!!document.querySelector('#runs tr[data-id]')`, "the list")
	var seen []string
	for page, want := range []int{50, 50, 21} {
		got := ids()
		if len(got) != want {
			t.Fatalf("page %d shows %d runs, want %d", page+1, len(got), want)
		}
		if page == 0 && got[0] != waiting {
			t.Errorf("the list begins with %s, want the newest run %s", got[0], waiting)
		}
		seen = append(seen, got...)
		hasOlder := d.Eval(`!!document.getElementById("older")`) == "true"
		if hasOlder != (page < 2) {
			t.Fatalf("page %d: a link to older runs: %v", page+1, hasOlder)
		}
		if hasOlder {
			d.Eval(`document.getElementById("older").click()`)
			d.WaitFor(rows+`.length > 0 && `+rows+`[0].dataset.id !== `+fmt.Sprintf("%q", got[0]), "the next page")
		}
	}
	if !slices.IsSortedFunc(seen, func(a, b string) int { return strings.Compare(b, a) }) || len(slices.Compact(slices.Clone(seen))) != 121 {
		t.Errorf("the pages do not list each run once, newest first: %v", seen)
	}
	if got := d.String(`document.querySelector('#runs tr[data-id] td.plan').textContent`); !strings.HasPrefix(got, "many ") {
		t.Errorf("the plan column says %q, want the plan's name first", got)
	}

	// Failed runs only: twelve, on one page.
	d.Eval(`document.getElementById("newest").click()`)
	d.WaitFor(rows+`.length === 50 && `+rows+`[0].dataset.id === `+fmt.Sprintf("%q", waiting), "the newest page again")
	d.Eval(`document.querySelector('#filter select[name=status]').value = "failed"; document.querySelector('#filter button').click()`)
	d.WaitFor(rows+`.length > 0 && `+rows+`.every(r => r.dataset.status === "failed")`, "the failed runs")
	if got := ids(); len(got) != 12 || d.Eval(`!!document.getElementById("older")`) != "false" {
		t.Errorf("failed runs: %d shown (want 12), a link to older ones: %s", len(got), d.Eval(`!!document.getElementById("older")`))
	}
	// A plan's name, paged with the filter kept.
	d.Eval(`document.querySelector('#filter select[name=status]').value = ""; document.querySelector('#filter input[name=plan]').value = "man"; document.querySelector('#filter button').click()`)
	d.WaitFor(rows+`.length === 50 && !`+rows+`.some(r => r.dataset.id === `+fmt.Sprintf("%q", waiting)+`)`, "the runs of the plan named many")
	d.Eval(`document.getElementById("older").click()`)
	d.WaitFor(`location.search.includes("plan=man") && location.search.includes("after=") && `+rows+`.length === 50`, "the second page of the plan's runs")
	d.Eval(`document.querySelector('#filter input[name=plan]').value = "no such plan"; document.querySelector('#filter button').click()`)
	d.WaitFor(`!!document.getElementById("no-runs") && document.getElementById("no-runs").textContent.includes("match")`, "no run matches")
}
