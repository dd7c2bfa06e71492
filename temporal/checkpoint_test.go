package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/liveboard"
	"go.temporal.io/sdk/client"
)

// modelServer is an OpenAI-compatible model that counts the requests it
// gets by their messages, and holds its second request until released
// (its worker is killed meanwhile).
type modelServer struct {
	mu       sync.Mutex
	n        int
	seen     map[string]int // messages JSON -> requests
	second   chan struct{}  // closed when the second request arrives
	released chan struct{}
}

func (m *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string
		Messages json.RawMessage
	}
	json.NewDecoder(r.Body).Decode(&req)
	m.mu.Lock()
	m.n++
	n := m.n
	m.seen[string(req.Messages)]++
	m.mu.Unlock()
	if n == 2 {
		close(m.second)
		select {
		case <-m.released:
		case <-r.Context().Done():
		}
		return // the worker that asked is gone
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"an idea"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}`, n, req.Model)
}

// A coordinate step's worker is killed between two model calls, after the
// first answer was checkpointed in its heartbeat: the retry on another
// worker takes that answer from the checkpoint (the model sees the first
// request once) and pays only for the calls not answered yet.
func TestDevServerCheckpointedModelCalls(t *testing.T) {
	c := newCluster(t)
	m := &modelServer{seen: map[string]int{}, second: make(chan struct{}), released: make(chan struct{})}
	srv := httptest.NewServer(m)
	defer srv.Close()
	defer close(m.released)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	w1 := c.worker(t)
	plan := writePlan(t, c.work, fmt.Sprintf(`
version: 1
agents:
  a: {provider: openai, model: m1, base_url: %[1]s/v1}
  b: {provider: openai, model: m1, base_url: %[1]s/v1}
steps:
  - label: talk
    type: coordinate
    agents: [a, b]
    mode: round_robin
    max_rounds: 3
    prompt: Plan a picnic.
`, srv.URL))
	out := filepath.Join(c.work, "bb.json")
	run := c.run(t, plan, out, "--heartbeat-timeout", "3s", "--shared-workspace") // the retry goes to the second worker, not to the dead one's host

	select {
	case <-m.second:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the step did not make its second call:\n%s\n%s", run.out, w1.out)
	}
	// The first answer is in the attempt's heartbeat details on the server.
	remote := waitFile(t, liveboard.RemotePath(out), time.Minute)
	var rm liveboard.Remote
	if err := json.Unmarshal([]byte(remote), &rm); err != nil {
		t.Fatal(err)
	}
	tc, err := client.Dial(client.Options{HostPort: c.srv.hostPort, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		d, err := tc.DescribeWorkflowExecution(context.Background(), rm.WorkflowID, "")
		if err == nil && len(d.PendingActivities) == 1 && d.PendingActivities[0].HeartbeatDetails != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint in the step's heartbeats (%v)", err)
		}
	}
	if err := syscall.Kill(w1.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w1.wait(t, 10*time.Second)
	w2 := c.worker(t)
	if code := run.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("run exited %d:\n%s\nworker:\n%s", code, run.out, w2.out)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.seen) != 3 || m.n != 4 {
		t.Errorf("the model got %d requests, %d different; want 4 and 3 (call 2 twice: it was never answered)", m.n, len(m.seen))
	}
	b := loadBoard(t, out)
	rec := lastRecord(b, "talk")
	if rec.Status != "succeeded" || rec.Attempts != 2 {
		t.Errorf("talk: %s in %d attempts; want succeeded in 2", rec.Status, rec.Attempts)
	}
	calls := 0
	for _, r := range b.Recordings() {
		if r.Kind == "llm" && r.Label == "talk" {
			calls++
		}
	}
	if calls != 3 {
		t.Errorf("%d model calls recorded; want 3", calls)
	}
	if data, err := os.ReadFile(out); err == nil && strings.Contains(string(data), `"reused":true`) {
		t.Errorf("a checkpointed answer is recorded as reused from another run")
	}
}
