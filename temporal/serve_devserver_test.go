package temporal

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// `runner serve` on a run on Temporal, as a person uses it: the run,
// started from the default runner binary, waits at an input; serve's run
// list shows it waiting, its page shows the question with its form; the
// answer posted as the page posts it (bearer token, CSRF header, Origin) is
// taken through the bridge, and the run goes on to the end, which the
// list then shows.
func TestDevServerServeListsAndAnswers(t *testing.T) {
	c := newCLICluster(t)
	plan := writePlan(t, c.work, liveReviewPlan)
	run := startProc(t, c.work, c.runner, "run", plan, "--engine", "temporal", "--temporal", c.srv.hostPort,
		"--task-queue", c.queue, "--blobs", c.blobs)
	waitOutput(t, run, "runner answer", time.Minute)

	serve := startProc(t, c.work, c.runner, "serve", "--dir", c.work)
	waitOutput(t, serve, "/?token=", time.Minute)
	start := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=\S+`).FindString(serve.out.String())
	if start == "" {
		t.Fatalf("runner serve printed no URL:\n%s", serve.out)
	}
	base := start[:strings.Index(start, "/?token=")]
	token := start[strings.Index(start, "/?token=")+len("/?token="):]
	hc := &http.Client{Timeout: time.Minute}
	// The page's scripts send the token from the origin's storage as a
	// bearer header on every request; serve sets no cookie.
	get := func(u string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s\n%s", u, resp.Status, data)
		}
		return string(data)
	}
	row := regexp.MustCompile(`<tr data-id="([0-9A-Z]+)" data-status="([a-z]+)">`)
	m := row.FindStringSubmatch(get(base + "/"))
	if m == nil || m[2] != "waiting" {
		t.Fatalf("the run list shows %v; want the run on Temporal, waiting", m)
	}
	id := m[1]
	page := get(base + "/runs/" + id)
	if !strings.Contains(page, `<form class="answer" method="post" data-label="review" data-visit="1">`) || !strings.Contains(page, "Deploy build?") {
		t.Fatalf("the run's page has no answer form with the question:\n%s", page)
	}
	csrf := regexp.MustCompile(`data-csrf="([^"]+)"`).FindStringSubmatch(page)
	if csrf == nil {
		t.Fatal("the run's page carries no CSRF token")
	}
	post := func(form url.Values) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/runs/"+id+"/answer", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Runner-CSRF", csrf[1])
		req.Header.Set("Origin", base)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	if code, body := post(url.Values{"label": {"review"}, "visit": {"1"}, "f.approve": {"maybe"}, "by": {"ana"}}); code == 200 || !strings.Contains(body, "approve") {
		t.Errorf("a wrong answer: %d %s; want it refused, naming the field", code, body)
	}
	if code, body := post(url.Values{"label": {"review"}, "visit": {"1"}, "f.approve": {"true"}, "by": {"ana"}}); code != 200 || !strings.Contains(body, `"temporal"`) {
		t.Fatalf("the answer: %d %s; want it taken by the run on Temporal", code, body)
	}
	if code := run.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("run exit %d:\n%s", code, run.out)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		m := row.FindStringSubmatch(get(base + "/"))
		if m != nil && m[2] == "succeeded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run list shows %v a minute after the run ended; want succeeded", m)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if page := get(base + "/runs/" + id); !strings.Contains(page, "approve=true") || !strings.Contains(page, "answered by ana") {
		t.Errorf("the finished run's page lacks the answer and what deploy saw")
	}
}
