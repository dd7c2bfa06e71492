package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
	"github.com/rs/zerolog"
)

// answer is one scripted reply of a fake API.
type answer struct {
	status int
	header map[string]string
	body   string
	delay  time.Duration // wait before answering (or until the client gives up)
	hangup bool          // close the connection without an answer
	// events, when set, are server-sent events written one at a time
	// (each flushed) as a 200 text/event-stream answer; then cut breaks
	// the connection, stall waits until the client gives up.
	events     []string
	cut, stall bool
}

// fakeAPI is an httptest server that checks each request the way the real
// API does (validate returns the status and body of a refusal) and then
// serves the scripted answers in order.
type fakeAPI struct {
	t        *testing.T
	srv      *httptest.Server
	validate func(r *http.Request, body map[string]any) (int, string)

	mu      sync.Mutex
	answers []answer
	reqs    []captured
}

type captured struct {
	header http.Header
	raw    []byte
	body   map[string]any
}

func newFake(t *testing.T, validate func(*http.Request, map[string]any) (int, string), answers ...answer) *fakeAPI {
	f := &fakeAPI{t: t, validate: validate, answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.reqs = append(f.reqs, captured{header: r.Header.Clone(), raw: raw, body: body})
	f.mu.Unlock()
	if status, msg := f.validate(r, body); status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, msg)
		return
	}
	f.mu.Lock()
	if len(f.answers) == 0 {
		f.mu.Unlock()
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "fake: no answer left")
		return
	}
	a := f.answers[0]
	f.answers = f.answers[1:]
	f.mu.Unlock()
	if a.delay > 0 {
		select {
		case <-time.After(a.delay):
		case <-r.Context().Done():
			return
		}
	}
	if a.hangup {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	if a.events != nil {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range a.events {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
		switch {
		case a.cut:
			panic(http.ErrAbortHandler) // the connection breaks mid-answer
		case a.stall:
			<-r.Context().Done()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if a.status == 0 {
		a.status = 200
	}
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

func (f *fakeAPI) requests() []captured {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]captured(nil), f.reqs...)
}

// streamedTo sets o to write every streamed piece of text to b.
func streamedTo(b *syncBuffer) func(*Options) {
	return func(o *Options) { o.OnStream = func(c StreamChunk) { b.Write([]byte(c.Text)) } }
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness is a Set over a one-agent plan with instant, recorded retries.
type harness struct {
	set   *Set
	board *board.Board
	logs  *syncBuffer
	waits []time.Duration
	mu    sync.Mutex
}

const testKey = "sk-test-SECRET-0123456789"

func newHarness(t *testing.T, plan *plans.Plan, tweak func(*Options)) *harness {
	t.Helper()
	h := &harness{board: board.New(board.Run{ID: "test"}), logs: &syncBuffer{}}
	opt := Options{
		Getenv: func(k string) string {
			if strings.HasSuffix(k, "_API_KEY") || k == "MY_KEY" {
				return testKey
			}
			return ""
		},
		Log:    zerolog.New(h.logs).Level(zerolog.DebugLevel),
		Retry:  Retry{Max: 3, Backoff: 10 * time.Millisecond},
		Jitter: func() float64 { return 0.5 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			h.mu.Lock()
			h.waits = append(h.waits, d)
			h.mu.Unlock()
			return ctx.Err()
		},
	}
	if tweak != nil {
		tweak(&opt)
	}
	set, err := New(plan, opt)
	if err != nil {
		t.Fatalf("agents.New: %v", err)
	}
	h.set = set
	return h
}

func (h *harness) session(t *testing.T, label, agent string) *Session {
	t.Helper()
	ss, err := h.set.Session(h.board, label, 1, agent)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// onePlan is a plan with the given agents.
func onePlan(agents ...*plans.Agent) *plans.Plan {
	return &plans.Plan{Path: "plan.yaml", Agents: agents}
}

func user(text string) Message { return Message{Role: RoleUser, Content: text} }

// boardJSON is everything a saved run would hold of the board.
func boardJSON(t *testing.T, b *board.Board) string {
	t.Helper()
	out, err := json.Marshal(map[string]any{"entries": b.Entries(), "recordings": b.Recordings(), "run": b.Run()})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func jsonStr(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func boardEntry(key string, value any) board.Entry {
	return board.Entry{Section: "kv", Author: "runner", Key: key, Content: value}
}

// providerCall sets up one provider case: a fake server answering with
// answers, the agent spec pointing at it (a 100ms timeout when the case is
// about timeouts), and a session of step label with the agent.
func providerCall(t *testing.T, validate func(*http.Request, map[string]any) (int, string), answers []answer,
	spec func(base string) *plans.Agent, timeout bool, key, label string) (*harness, *Session) {
	t.Helper()
	return providerCallWith(t, validate, answers, spec, timeout, key, label, nil)
}

// providerCallWith is providerCall with more options set by opt.
func providerCallWith(t *testing.T, validate func(*http.Request, map[string]any) (int, string), answers []answer,
	spec func(base string) *plans.Agent, timeout bool, key, label string, opt func(*Options)) (*harness, *Session) {
	t.Helper()
	f := newFake(t, validate, answers...)
	a := spec(f.srv.URL)
	if timeout {
		a.Timeout = 100 * time.Millisecond
	}
	h := newHarness(t, onePlan(a), func(o *Options) {
		if key != "" {
			o.Getenv = func(string) string { return key }
		}
		if opt != nil {
			opt(o)
		}
	})
	return h, h.session(t, label, a.Name)
}

// checkCall asserts what every provider call must hold, success or not:
// errors name the agent and leave the conversation as it was, retries are
// counted, waited as expected and logged, and the key leaks nowhere.
func checkCall(t *testing.T, h *harness, ss *Session, err error, retries int, waits []time.Duration) {
	t.Helper()
	if err != nil {
		if !strings.HasPrefix(err.Error(), "agent "+ss.Agent().Name+": ") {
			t.Errorf("error %q does not name the agent", err)
		}
		if len(ss.Messages) != 0 {
			t.Errorf("a failed call left %d messages in the conversation", len(ss.Messages))
		}
	}
	if got := ss.Stats().Retries; got != retries {
		t.Errorf("retries = %d, want %d", got, retries)
	}
	if waits != nil && fmt.Sprint(h.waits) != fmt.Sprint(waits) {
		t.Errorf("waits = %v, want %v", h.waits, waits)
	}
	if retries > 0 && strings.Count(h.logs.String(), "model call failed, retrying") != retries {
		t.Errorf("want %d retry log lines, logs:\n%s", retries, h.logs)
	}
	for _, s := range []string{h.logs.String(), boardJSON(t, h.board), fmt.Sprint(err)} {
		if strings.Contains(s, testKey) {
			t.Errorf("the API key leaked: %s", s)
		}
	}
}
