package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board/boardlock"
)

// Two processes: one runs a plan whose agent streams its answer from a
// local server that holds the answer's end back; the other, `runner
// board FILE watch --step ask`, prints the text that came while the step
// still runs, then the rest, and ends with the step. blackboard.json
// holds the whole answer only, never a piece of it.
func TestWatchStepStreamsAnswer(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, finish)
			w.(http.Flusher).Flush()
		}
		chunk(`{"role":"assistant","content":""}`, "null")
		chunk(`{"content":"Hello, "}`, "null")
		select { // the rest once the watcher has shown the start
		case <-release:
		case <-time.After(time.Minute):
		case <-r.Context().Done():
			return
		}
		chunk(`{"content":"streamed world"}`, "null")
		chunk(`{}`, `"stop"`)
		io.WriteString(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16}}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
name: stream
agents:
  coder: {provider: openai, api: chat, model: gpt-4o-mini, stream: true, base_url: "`+srv.URL+`/v1", timeout: 2m}
steps:
  - {label: ask, type: llm, agent: coder, prompt: "Say hello"}
`), 0o644)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	bb := filepath.Join(wd, "bb.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, binary, "run", plan, "-q", "--out", bb)
	run.Dir = wd
	var runOut syncBuffer
	run.Stdout, run.Stderr = &runOut, &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if o, err := boardlock.ReadOwner(bb); err == nil && o.Socket != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never served its board: %s", runOut.String())
		}
	}
	watch := exec.CommandContext(ctx, binary, "board", bb, "watch", "--step", "ask")
	watch.Dir = wd
	var out, errb syncBuffer
	watch.Stdout, watch.Stderr = &out, &errb
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); out.String() != "Hello, "; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the watcher never showed the answer's start: %q %s", out.String(), errb.String())
		}
	}
	// The step is still running: its model has not sent the rest.
	releaseOnce.Do(func() { close(release) })
	if err := watch.Wait(); err != nil {
		t.Fatalf("watch: %v %s", err, errb.String())
	}
	if got := out.String(); got != "Hello, streamed world\n" {
		t.Errorf("the watcher printed %q", got)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("run: %v %s", err, runOut.String())
	}
	data, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	whole, part := strings.Count(string(data), "Hello, streamed world"), strings.Count(string(data), "Hello, ")
	if whole == 0 || part != whole {
		t.Errorf("blackboard.json holds the answer %d times and its start %d times", whole, part)
	}
	// A run that has ended streams nothing.
	r := runCLI(t, wd, "board", bb, "watch", "--step", "ask")
	if r.code != 1 || !strings.Contains(r.stderr, "is not running") {
		t.Errorf("watch --step on an ended run: exit %d, %s", r.code, r.stderr)
	}
}
