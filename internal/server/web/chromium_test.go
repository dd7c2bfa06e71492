package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/planrunner/runner/internal/testutil/chromium"
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
