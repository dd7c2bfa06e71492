package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/testutil/fakebatch"
)

// batchPlan is a fan-out of n items through agent provider at server
// base, batched or not; extra goes into the llm step.
func batchPlan(provider, base string, n int, batch bool, extra string) string {
	model := "gpt-4o"
	if provider == "anthropic" {
		model = "claude-sonnet-4-20250514"
	}
	step := "type: llm\n    agent: a\n    prompt: \"item ${{ item }}\"\n    for_each: ${{ vars.items }}\n"
	if batch {
		step += "    batch: true\n    batch_poll: 5ms\n"
	}
	return fmt.Sprintf(`version: 1
limits: {max_steps: %d}
agents:
  a: {provider: %s, model: %s, base_url: "%s", max_tokens: 200}
steps:
  - label: items
    type: command
    run: seq 0 $((%d - 1)) | tr '\n' ' '
  - label: ask
    %s%s`, 3*n+10, provider, model, base, n, step, extra)
}

// startBatchServer starts the fake of provider and sets its API key.
func startBatchServer(t *testing.T, provider string) (*fakebatch.Server, string) {
	if provider == "openai" {
		s := fakebatch.OpenAI()
		t.Cleanup(s.Close)
		t.Setenv("OPENAI_API_KEY", "sk-test")
		return s, s.URL + "/v1"
	}
	s := fakebatch.Anthropic()
	t.Cleanup(s.Close)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	return s, s.URL
}

func writeBatchPlan(t *testing.T, plan string) string {
	wd := t.TempDir()
	// The items come from a command's output, split into a list.
	plan = strings.Replace(plan, "for_each: ${{ vars.items }}", "for_each: ${{ split(trim(steps.items.output), \" \") }}", 1)
	if err := os.WriteFile(filepath.Join(wd, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return wd
}

func loadBoard(t *testing.T, path string) *board.Board {
	t.Helper()
	b, err := board.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkAnswers checks that every item got the fake's answer to its prompt.
func checkAnswers(t *testing.T, b *board.Board, n int) {
	t.Helper()
	for _, s := range b.Steps() {
		if s.Label != "ask" {
			continue
		}
		var res struct {
			Output []string `json:"output"`
		}
		if err := json.Unmarshal(s.Result, &res); err != nil || len(res.Output) != n {
			t.Fatalf("ask's output: %v, %d items, want %d", err, len(res.Output), n)
		}
		for i, o := range res.Output {
			if want := fakebatch.Answer(fmt.Sprintf("item %d", i)); o != want {
				t.Fatalf("item %d answered %q, want %q", i, o, want)
			}
		}
		return
	}
	t.Fatal("no record of ask")
}

// A 500-item fan-out through each provider's batch API (the fakes follow
// OpenAI's Batch API and Anthropic's Message Batches documentation): one
// batch, no ordinary call, every answer recorded so that an offline
// replay needs no server, and the run costs half of the same fan-out made
// of ordinary calls.
func TestBatchFanOut500(t *testing.T) {
	const n = 500
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			srv, base := startBatchServer(t, provider)
			wd := writeBatchPlan(t, batchPlan(provider, base, n, true, ""))
			r := runCLI(t, wd, "run", "plan.yaml", "-q")
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
			}
			if srv.Submitted() != 1 || srv.Items() != n || srv.Ordinary() != 0 {
				t.Fatalf("the server saw %d batches of %d items and %d ordinary calls, want 1 of %d and none", srv.Submitted(), srv.Items(), srv.Ordinary(), n)
			}
			bb := blackboardPath(t, r.stdout)
			b := loadBoard(t, bb)
			checkAnswers(t, b, n)
			if len(b.Run().Batches) != 0 {
				t.Errorf("the ended batch is still on the board: %+v", b.Run().Batches)
			}
			batched := agents.RecordedUsage(b.Recordings())

			srv.Close() // the replay needs no server
			out := filepath.Join(t.TempDir(), "replay.json")
			if r := runCLI(t, wd, "replay", bb, "--offline", "--out", out); r.code != 0 {
				t.Fatalf("replay --offline: exit %d\n%s", r.code, r.stderr)
			}
			checkAnswers(t, loadBoard(t, out), n)

			srv2, base2 := startBatchServer(t, provider)
			wd2 := writeBatchPlan(t, batchPlan(provider, base2, n, false, ""))
			r = runCLI(t, wd2, "run", "plan.yaml", "-q")
			if r.code != 0 || srv2.Ordinary() != n {
				t.Fatalf("run without batch: exit %d, %d ordinary calls\n%s", r.code, srv2.Ordinary(), r.stderr)
			}
			plain := agents.RecordedUsage(loadBoard(t, blackboardPath(t, r.stdout)).Recordings())
			if batched.Calls != n || plain.Calls != n || batched.CostUSD <= 0 || math.Abs(batched.CostUSD*2-plain.CostUSD) > 1e-6 {
				t.Fatalf("batched: %+v; ordinary: %+v; want half the cost", batched, plain)
			}
		})
	}
}

// Items a batch did not answer (an error line, an expired request, a
// failed or cancelled batch) are asked again as ordinary calls, or fail
// their item, as batch_failed says.
func TestBatchFailedItems(t *testing.T) {
	const n = 6
	cases := []struct {
		name, provider, end string
		fail, expire        []string
		failMode            string
		ordinary            int
		exit                int
	}{
		{"openai error file, retried", "openai", "", []string{"-3"}, nil, "", 1, 0},
		{"openai expired, retried", "openai", "expired", nil, []string{"-1", "-4"}, "", 2, 0},
		{"openai batch failed, all retried", "openai", "failed", nil, nil, "", n, 0},
		{"openai error file, item fails", "openai", "", []string{"-2"}, nil, "fail", 0, 1},
		{"anthropic errored, retried", "anthropic", "", []string{"-0", "-5"}, nil, "", 2, 0},
		{"anthropic expired, retried", "anthropic", "expired", nil, []string{"-2"}, "", 1, 0},
		{"anthropic errored, item fails", "anthropic", "", []string{"-5"}, nil, "fail", 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, base := startBatchServer(t, c.provider)
			srv.End, srv.Fail, srv.Expire = c.end, c.fail, c.expire
			extra := ""
			if c.failMode != "" {
				extra = "    batch_failed: " + c.failMode + "\n"
			}
			wd := writeBatchPlan(t, batchPlan(c.provider, base, n, true, extra))
			r := runCLI(t, wd, "run", "plan.yaml", "-q")
			if r.code != c.exit || srv.Submitted() != 1 || srv.Ordinary() != c.ordinary {
				t.Fatalf("exit %d, %d batches, %d ordinary calls; want exit %d, 1 batch, %d ordinary\n%s",
					r.code, srv.Submitted(), srv.Ordinary(), c.exit, c.ordinary, r.stderr)
			}
			if c.exit == 0 {
				checkAnswers(t, loadBoard(t, blackboardPath(t, r.stdout)), n)
			} else if !strings.Contains(r.stderr, "the batch did not answer this item") {
				t.Fatalf("the failed item does not say why:\n%s", r.stderr)
			}
		})
	}
}

// startHeldBatch starts `runner run` of a batched fan-out whose batch the
// fake holds in progress, and waits until the batch's id is on the board.
func startHeldBatch(t *testing.T, provider string, n int) (*fakebatch.Server, string, *exec.Cmd, string) {
	srv, base := startBatchServer(t, provider)
	srv.Hold()
	wd := writeBatchPlan(t, batchPlan(provider, base, n, true, ""))
	cmd := exec.Command(binary, "run", "plan.yaml", "-q")
	cmd.Dir = wd
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the batch's id never showed on the board")
		}
		found, _ := filepath.Glob(filepath.Join(wd, ".runner", "runs", "*", "blackboard.json"))
		if len(found) == 0 {
			continue
		}
		if b, err := board.Load(found[0]); err == nil && len(b.Run().Batches) == 1 && b.Run().Batches[0].ID != "" {
			return srv, wd, cmd, found[0]
		}
	}
}

func listRuns(t *testing.T, wd string) []runs.Summary {
	t.Helper()
	r := runCLI(t, wd, "runs", "--json")
	var list []runs.Summary
	if err := json.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil || len(list) != 1 {
		t.Fatalf("runs --json: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	return list
}

// A run killed with SIGKILL while its batch is in progress is listed
// waiting on the batch; `runner resume` takes up the same batch: the
// server sees exactly one submission, and the run ends with every answer.
func TestBatchKilledThenResumed(t *testing.T) {
	const n = 20
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			srv, wd, cmd, bb := startHeldBatch(t, provider, n)
			if l := listRuns(t, wd); l[0].Status != board.StatusWaiting || !l[0].Live || len(l[0].Batches) != 1 {
				t.Fatalf("the run waiting on its batch is listed %+v", l[0])
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			l := listRuns(t, wd)
			if l[0].Status != board.StatusWaiting || l[0].Live || len(l[0].Batches) != 1 || l[0].Batches[0].ID != srv.IDs()[0] {
				t.Fatalf("the killed run is listed %+v, want waiting on batch %s", l[0], srv.IDs()[0])
			}
			srv.Release()
			if r := runCLI(t, wd, "resume", "latest", "-q"); r.code != 0 {
				t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
			}
			if srv.Submitted() != 1 || srv.Ordinary() != 0 {
				t.Fatalf("the server saw %d batches and %d ordinary calls, want 1 and none", srv.Submitted(), srv.Ordinary())
			}
			b := loadBoard(t, bb)
			if b.Run().Status != board.StatusSucceeded || len(b.Run().Batches) != 0 {
				t.Fatalf("after the resume: %s, batches %+v", b.Run().Status, b.Run().Batches)
			}
			checkAnswers(t, b, n)
		})
	}
}

// Ctrl-C of a run waiting on its batch cancels the batch at the provider.
func TestBatchInterruptCancels(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			srv, _, cmd, bb := startHeldBatch(t, provider, 5)
			cmd.Process.Signal(os.Interrupt)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("the interrupted run did not end")
			}
			if srv.Cancels() != 1 {
				t.Fatalf("the server saw %d cancels, want 1", srv.Cancels())
			}
			if b := loadBoard(t, bb); len(b.Run().Batches) != 0 {
				t.Fatalf("the cancelled batch is still on the board: %+v", b.Run().Batches)
			}
		})
	}
}

// A batch create whose answer is lost after the provider made the batch
// (a 500, a connection closed unanswered, an answer past the agent's
// timeout) is not sent again blind: the run finds the batch it made and
// takes it up, so the provider sees exactly one batch.
func TestBatchCreateAnswerLost(t *testing.T) {
	const n = 4
	cases := []struct {
		name, provider string
		fail           func(*fakebatch.Server)
		extra          string
	}{
		{"openai 500", "openai", func(s *fakebatch.Server) { s.FailCreates = 2 }, ""},
		{"openai dropped", "openai", func(s *fakebatch.Server) { s.FailCreates, s.DropCreate = 1, true }, ""},
		{"openai timeout", "openai", func(s *fakebatch.Server) { s.HoldCreates() }, "timeout: 1s, "},
		{"anthropic 500", "anthropic", func(s *fakebatch.Server) { s.FailCreates = 2 }, ""},
		{"anthropic dropped", "anthropic", func(s *fakebatch.Server) { s.FailCreates, s.DropCreate = 1, true }, ""},
		{"anthropic timeout", "anthropic", func(s *fakebatch.Server) { s.HoldCreates() }, "timeout: 1s, "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, base := startBatchServer(t, c.provider)
			c.fail(srv)
			plan := strings.Replace(batchPlan(c.provider, base, n, true, ""), "max_tokens: 200", c.extra+"max_tokens: 200", 1)
			wd := writeBatchPlan(t, plan)
			r := runCLI(t, wd, "run", "plan.yaml", "-q")
			if r.code != 0 || srv.Submitted() != 1 || srv.Ordinary() != 0 {
				t.Fatalf("exit %d, %d batches, %d ordinary calls; want exit 0, 1 batch, none\n%s", r.code, srv.Submitted(), srv.Ordinary(), r.stderr)
			}
			b := loadBoard(t, blackboardPath(t, r.stdout))
			checkAnswers(t, b, n)
			if len(b.Run().Batches) != 0 {
				t.Errorf("the ended batch is still on the board: %+v", b.Run().Batches)
			}
		})
	}
}

// A run killed after it submitted its batch but before the provider's
// answer (the batch's id) reached the board: the board keeps the intent,
// and `runner resume` finds the batch by its key instead of sending a
// second, then records every answer.
func TestBatchKilledBeforeIDSaved(t *testing.T) {
	const n = 8
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			srv, base := startBatchServer(t, provider)
			srv.HoldCreates()
			wd := writeBatchPlan(t, batchPlan(provider, base, n, true, ""))
			cmd := exec.Command(binary, "run", "plan.yaml", "-q")
			cmd.Dir = wd
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			bb := ""
			for deadline := time.Now().Add(60 * time.Second); bb == ""; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the batch was never created with its intent on the board")
				}
				found, _ := filepath.Glob(filepath.Join(wd, ".runner", "runs", "*", "blackboard.json"))
				if len(found) == 0 || srv.Submitted() != 1 {
					continue
				}
				if b, err := board.Load(found[0]); err == nil && len(b.Run().Batches) == 1 {
					bb = found[0]
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			if w := loadBoard(t, bb).Run().Batches; len(w) != 1 || w[0].ID != "" {
				t.Fatalf("the killed run's board has batches %+v, want the intent alone", w)
			}
			srv.ReleaseCreates()
			if r := runCLI(t, wd, "resume", "latest", "-q"); r.code != 0 {
				t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
			}
			if srv.Submitted() != 1 || srv.Ordinary() != 0 {
				t.Fatalf("the server saw %d batches and %d ordinary calls, want 1 and none", srv.Submitted(), srv.Ordinary())
			}
			b := loadBoard(t, bb)
			if b.Run().Status != board.StatusSucceeded || len(b.Run().Batches) != 0 {
				t.Fatalf("after the resume: %s, batches %+v", b.Run().Status, b.Run().Batches)
			}
			checkAnswers(t, b, n)
		})
	}
}

// An agent's batch: true is the default of every llm step with for_each
// that asks it: such a step batches its items unless it says batch: false.
func TestBatchAgentDefault(t *testing.T) {
	const n = 5
	cases := []struct {
		name, provider, step string
		batches, ordinary    int
	}{
		{"openai, agent's default", "openai", "    batch_poll: 5ms\n", 1, 0},
		{"openai, step says false", "openai", "    batch: false\n", 0, n},
		{"anthropic, agent's default", "anthropic", "    batch_poll: 5ms\n", 1, 0},
		{"anthropic, step says false", "anthropic", "    batch: false\n", 0, n},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, base := startBatchServer(t, c.provider)
			plan := strings.Replace(batchPlan(c.provider, base, n, false, c.step), "max_tokens: 200", "max_tokens: 200, batch: true", 1)
			wd := writeBatchPlan(t, plan)
			r := runCLI(t, wd, "run", "plan.yaml", "-q")
			if r.code != 0 || srv.Submitted() != c.batches || srv.Ordinary() != c.ordinary {
				t.Fatalf("exit %d, %d batches, %d ordinary calls; want exit 0, %d and %d\n%s",
					r.code, srv.Submitted(), srv.Ordinary(), c.batches, c.ordinary, r.stderr)
			}
			checkAnswers(t, loadBoard(t, blackboardPath(t, r.stdout)), n)
		})
	}
}
