package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/notify"
)

// hook is a local webhook that keeps the events it is sent.
type hook struct {
	mu     sync.Mutex
	events []notify.Event
}

func (h *hook) serve(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ev notify.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Errorf("the webhook's body is not an event: %v: %s", err, b)
		}
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (h *hook) got() []notify.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]notify.Event(nil), h.events...)
}

// examples/approve-tool: the agent's deploy call waits for a person
// (exit 4) and the webhook is told, with the tool, its arguments and a
// single-use link; the answer decides whether the tool runs, the model
// sees a refusal with its reason, and the offline replay matches.
func TestApproveToolExample(t *testing.T) {
	plan := filepath.Join(repoRoot(), "examples/approve-tool/plan.yaml")
	cases := []struct {
		name     string
		answer   string
		deployed bool
		toolSaw  string // what the model was told of the deploy call
	}{
		{"allowed", `{"allow": true}`, true, "deployed 1.4.2 to production"},
		{"refused", `{"allow": false, "reason": "not on a Friday"}`, false, "refused this call; it was not run. Their reason: not on a Friday"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h hook
			t.Setenv("NOTIFY_URL", h.serve(t))
			wd := t.TempDir()
			r := runCLI(t, wd, "run", plan, "-q")
			if r.code != 4 {
				t.Fatalf("run: exit %d, want 4 (waiting): %s", r.code, r.stderr)
			}
			bb := blackboardPath(t, r.stdout)
			b, err := board.Load(bb)
			if err != nil {
				t.Fatal(err)
			}
			ws := b.Run().Waiting
			if len(ws) != 1 || ws[0].Label != "release/approve-1" || ws[0].Tool == nil || ws[0].Tool.Name != "deploy" ||
				!strings.Contains(ws[0].Prompt, `"env": "production"`) {
				t.Fatalf("waiting: %+v", ws)
			}
			evs := h.got()
			if len(evs) != 1 || evs[0].Event != "waiting" || evs[0].Input == nil || evs[0].Input.Step != "release/approve-1" ||
				!strings.HasPrefix(evs[0].Input.Link, "http://127.0.0.1:8080/once/"+b.Run().ID+"?") {
				t.Fatalf("the webhook got %+v", evs)
			}
			if ws[0].Link == "" || strings.Contains(evs[0].Input.Link, ws[0].Link) {
				t.Errorf("the run keeps the link's sha256 (%q), never its token", ws[0].Link)
			}
			if r := runCLI(t, wd, "answer", bb, "--step", "release/approve-1", "--json", c.answer, "--resume", "-q"); r.code != 0 {
				t.Fatalf("answer --resume: exit %d %s", r.code, r.stderr)
			}
			_, err = os.Stat(filepath.Join(wd, "deployed.txt"))
			if (err == nil) != c.deployed {
				t.Errorf("deployed.txt there: %v, want %v", err == nil, c.deployed)
			}
			b, err = board.Load(bb)
			if err != nil {
				t.Fatal(err)
			}
			if st := b.Run().Status; st != board.StatusSucceeded || len(b.Run().Waiting) != 0 {
				t.Fatalf("after the answer: status %s, waiting %v", st, b.Run().Waiting)
			}
			saw := ""
			for _, e := range b.Entries() {
				if e.Section == "llm" && e.Role == "tool" && e.Meta["tool"] == "deploy" {
					saw, _ = e.Content.(string)
				}
			}
			if !strings.Contains(saw, c.toolSaw) {
				t.Errorf("the model saw %q of the deploy call, want %q", saw, c.toolSaw)
			}
			llm := 0
			for _, rec := range b.Recordings() {
				if rec.Kind == "llm" {
					llm++
				}
			}
			if llm != 3 {
				t.Errorf("%d model calls recorded, want 3 (the two before the question are not made again)", llm)
			}
			if evs := h.got(); len(evs) != 2 || evs[1].Event != "ended" || evs[1].Status != board.StatusSucceeded {
				t.Errorf("the webhook got %+v, want the waiting event then the end", evs)
			}
			os.Remove(filepath.Join(wd, "deployed.txt"))
			if r := runCLI(t, wd, "replay", bb, "--offline", "-q"); r.code != 0 {
				t.Fatalf("replay --offline: exit %d %s", r.code, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(wd, "deployed.txt")); err == nil {
				t.Error("the offline replay ran the tool")
			}
		})
	}
}

// answerers: runner answer checks the operating-system user; anyone else
// is refused and the input keeps waiting.
func TestAnswerersCLI(t *testing.T) {
	u, err := user.Current()
	if err != nil {
		t.Skip(err)
	}
	cases := []struct {
		name      string
		answerers string
		code      int
		errText   string
	}{
		{"named", "[" + u.Username + ", someone]", 0, ""},
		{"not named", "[alice, bob]", 1, u.Username + " is not among the input's answerers (alice, bob); it keeps waiting"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wd := t.TempDir()
			plan := filepath.Join(wd, "plan.yaml")
			src := "version: 1\nsteps:\n  - label: ok\n    type: input\n    prompt: go?\n    answerers: " + c.answerers +
				"\n    form: {properties: {go: {type: boolean}}, required: [go]}\n"
			if err := os.WriteFile(plan, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, wd, "run", plan, "-q")
			if r.code != 4 {
				t.Fatalf("run: exit %d %s", r.code, r.stderr)
			}
			bb := blackboardPath(t, r.stdout)
			r = runCLI(t, wd, "answer", bb, "--step", "ok", "--set", "go=yes", "--by", "alice")
			if r.code != c.code || !strings.Contains(r.stderr, c.errText) {
				t.Fatalf("answer: exit %d %q, want %d %q", r.code, r.stderr, c.code, c.errText)
			}
			b, err := board.Load(bb)
			if err != nil {
				t.Fatal(err)
			}
			recs := 0
			for _, rec := range b.Recordings() {
				if rec.Kind == "input" {
					recs++
					if !strings.Contains(string(rec.Response), `"by":"`+u.Username+`"`) {
						t.Errorf("the answer is recorded as %s, want by the operating-system user", rec.Response)
					}
				}
			}
			if want := map[bool]int{true: 1, false: 0}[c.code == 0]; recs != want {
				t.Errorf("%d answers recorded, want %d", recs, want)
			}
		})
	}
}
