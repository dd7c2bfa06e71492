package notify

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/rs/zerolog"
)

// target is a webhook that answers each post with the next status of
// codes (the last one again once they run out) and keeps the bodies.
type target struct {
	mu     sync.Mutex
	codes  []int
	bodies []string
}

func (tg *target) start(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		tg.mu.Lock()
		tg.bodies = append(tg.bodies, string(b))
		code := tg.codes[min(len(tg.bodies), len(tg.codes))-1]
		tg.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func waitingEvent() Event {
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	return Event{Event: EventWaiting, Run: "R1", Plan: "deploy", Status: "waiting", Board: "/w/blackboard.json",
		Time: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
		Input: &Input{Step: "release/approve-1", Prompt: "Allow deploy with key sk-SECRET-123?",
			Tool:    &board.WaitingTool{Agent: "releaser", Name: "deploy", Args: json.RawMessage(`{"env":"production"}`)},
			Command: "runner answer /w/blackboard.json --step release/approve-1 --json '{}'",
			Link:    "http://127.0.0.1:8080/once/R1?step=x&visit=1&token=T", LinkExpires: &exp}}
}

// Delivery is retried while it may pass (no answer, 5xx, 429), at most
// Attempts times; a target that refuses (4xx) is not asked again; the
// body carries no secret; a target that asked for no link gets none; a
// Slack target gets {"text": ...}.
func TestSend(t *testing.T) {
	Backoff = time.Millisecond
	cases := []struct {
		name     string
		codes    []int
		format   string
		link     bool
		on       []string
		event    Event
		attempts int
		want     []string // in the body
		wantNot  []string
	}{
		{"delivered", []int{204}, "json", true, nil, waitingEvent(), 1,
			[]string{`"event":"waiting"`, `"step":"release/approve-1"`, `"tool":{"agent":"releaser","name":"deploy","args":{"env":"production"}}`, `"link":"http://127.0.0.1:8080/once/R1?`}, []string{"sk-SECRET-123"}},
		{"retried until it passes", []int{503, 429, 200}, "json", true, nil, waitingEvent(), 3, nil, nil},
		{"retries are bounded", []int{500}, "json", true, nil, waitingEvent(), 3, nil, nil},
		{"refused is not retried", []int{400}, "json", true, nil, waitingEvent(), 1, nil, nil},
		{"no link unless asked for", []int{200}, "json", false, nil, waitingEvent(), 1, []string{`"answer_command"`}, []string{"/once/", "link"}},
		{"slack", []int{200}, "slack", true, nil, waitingEvent(), 1,
			[]string{`{"text":"runner: run R1 (deploy) waits for a person to allow agent releaser's call of tool deploy (input release/approve-1).\nAllow deploy with key ***`, `Answer once: http://127.0.0.1:8080/once/R1?`}, []string{"sk-SECRET-123"}},
		{"an event not asked for", []int{200}, "json", false, []string{"failed"}, waitingEvent(), 0, nil, nil},
		{"failed", []int{200}, "slack", false, []string{"failed"}, Event{Event: EventFailed, Run: "R1", Plan: "deploy", Status: "failed", Error: "step x: boom"}, 1,
			[]string{`{"text":"runner: run R1 (deploy) failed: step x: boom"}`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg := &target{codes: c.codes}
			n := &plans.Notify{URL: tg.start(t), Format: c.format, On: c.on}
			if c.link {
				n.LinkBase = "http://127.0.0.1:8080"
			}
			m := mask.New("sk-SECRET-123")
			s := New([]*plans.Notify{n}, m.String, zerolog.Nop())
			s.Send(c.event)
			if !s.Wait(10 * time.Second) {
				t.Fatal("the delivery did not end")
			}
			if len(tg.bodies) != c.attempts {
				t.Fatalf("%d attempts, want %d", len(tg.bodies), c.attempts)
			}
			if c.attempts == 0 {
				return
			}
			body := tg.bodies[0]
			for _, w := range c.want {
				if !strings.Contains(body, w) {
					t.Errorf("the body %s lacks %s", body, w)
				}
			}
			for _, w := range c.wantNot {
				if strings.Contains(body, w) {
					t.Errorf("the body %s holds %s", body, w)
				}
			}
		})
	}
}

// A target whose URL is in an unset variable is skipped; a target that
// never answers does not hold Send up, and Wait is bounded.
func TestSendNeverBlocks(t *testing.T) {
	stuck := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-stuck }))
	defer srv.Close()
	defer close(stuck)
	old := AttemptTimeout
	AttemptTimeout = 200 * time.Millisecond
	defer func() { AttemptTimeout = old }()
	s := New([]*plans.Notify{{URLEnv: "RUNNER_TEST_NOTIFY_UNSET"}, {URL: srv.URL}}, nil, zerolog.Nop())
	start := time.Now()
	s.Send(Event{Event: EventEnded, Run: "R1", Status: "succeeded"})
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("Send took %s", d)
	}
	if s.Wait(50 * time.Millisecond) {
		t.Error("Wait says a delivery to a target that never answers ended")
	}
}

// A link answers only its own input, until it expires.
func TestCheckLink(t *testing.T) {
	token, sum, err := NewLink()
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := NewLink()
	now := time.Now()
	exp := now.Add(time.Hour)
	w := board.WaitingInput{Label: "ok", Visit: 1, Link: sum, LinkExpires: &exp}
	cases := []struct {
		name  string
		w     board.WaitingInput
		token string
		at    time.Time
		want  error
	}{
		{"its token", w, token, now, nil},
		{"another token", w, other, now, ErrLinkUnknown},
		{"no token", w, "", now, ErrLinkUnknown},
		{"an input without a link", board.WaitingInput{Label: "ok", Visit: 1}, token, now, ErrLinkUnknown},
		{"expired", w, token, exp, ErrLinkExpired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := CheckLink(c.w, c.token, c.at); err != c.want {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
	if strings.Contains(sum, token) {
		t.Error("the sum holds the token")
	}
}
