package temporal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const liveReviewPlan = `
version: 1
name: live-review
steps:
  - {label: seed, type: board, op: write, key: "jobs:next", value: build}
  - label: review
    type: input
    prompt: "Deploy ${{ board('jobs:next') }}?"
    form: {properties: {approve: {type: boolean}}, required: [approve]}
  - {label: deploy, type: command, run: "echo next=${{ board('jobs:next') }} approve=${{ steps.review.output.approve }}"}
`

// newCLICluster is a cluster with one worker, for driving with the
// default runner binary (which finds runner-temporal through
// RUNNER_TEMPORAL).
func newCLICluster(t *testing.T) *cluster {
	c := newCluster(t)
	c.worker(t)
	t.Setenv("RUNNER_TEMPORAL", c.rt)
	return c
}

// cli runs the default runner binary (runner-temporal through
// RUNNER_TEMPORAL) and returns its exit code and output.
func (c *cluster) cli(t *testing.T, args ...string) (int, string) {
	t.Helper()
	p := startProc(t, c.work, c.runner, args...)
	code := p.wait(t, 2*time.Minute)
	return code, p.out.String()
}

func waitOutput(t *testing.T, p *proc, want string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !strings.Contains(p.out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %s in:\n%s", want, limit, p.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A run on Temporal, through the default runner binary, as a user drives
// it: it waits at an input and says how to answer; meanwhile `runner
// board` reads, writes (compare-and-set included) and watches its live
// board; `runner answer` is checked against the form, then taken, and the
// run goes on and sees both. The saved blackboard.json replays offline.
func TestDevServerLiveBoardAndAnswer(t *testing.T) {
	c := newCLICluster(t)
	plan := writePlan(t, c.work, liveReviewPlan)
	out := filepath.Join(c.work, "runs", "bb.json")
	os.MkdirAll(filepath.Dir(out), 0o755)
	run := startProc(t, c.work, c.runner, "run", plan, "--engine", "temporal", "--temporal", c.srv.hostPort,
		"--task-queue", c.queue, "--blobs", c.blobs, "--out", out)
	waitOutput(t, run, "runner answer", time.Minute)
	if got := run.out.String(); !strings.Contains(got, `"step":"review"`) || !strings.Contains(got, `"prompt":"Deploy build?"`) ||
		!strings.Contains(got, `"message":"waiting for an answer"`) {
		t.Errorf("the run does not say what it waits for:\n%s", got)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("blackboard.json exists while the run still runs")
	}

	html := filepath.Join(c.work, "live.html")
	if code, got := c.cli(t, "report", out, "-o", html); code != 0 {
		t.Errorf("report of the live run: exit %d, %q", code, got)
	} else if data, _ := os.ReadFile(html); !strings.Contains(string(data), "seed") {
		t.Errorf("the live run's report lacks its finished step")
	}
	if code, got := c.cli(t, "resume", out); code != 2 || !strings.Contains(got, "runs on Temporal") {
		t.Errorf("resume of the live run: exit %d, %q; want 2, saying it runs on Temporal", code, got)
	}
	watch := startProc(t, c.work, c.runner, "board", out, "watch", "--since", "0", "--prefix", "jobs:", "--count", "2")
	if code, got := c.cli(t, "board", out, "get", "jobs:next"); code != 0 || strings.TrimSpace(got) != "build" {
		t.Errorf("get: exit %d, %q", code, got)
	}
	if code, got := c.cli(t, "board", out, "put", "jobs:next", "deploy", "--expect-version", "1", "--agent", "ops"); code != 0 || !strings.Contains(got, "wrote jobs:next (version 2)") {
		t.Errorf("put: exit %d, %q", code, got)
	}
	if code, got := c.cli(t, "board", out, "put", "jobs:next", "stale", "--expect-version", "1"); code != 1 || !strings.Contains(got, "version") {
		t.Errorf("a stale put: exit %d, %q; want 1 and a version mismatch", code, got)
	}
	if code := watch.wait(t, time.Minute); code != 0 {
		t.Fatalf("watch exit %d:\n%s", code, watch.out)
	}
	var changes []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(watch.out.String()), "\n") {
		var ch map[string]any
		if json.Unmarshal([]byte(line), &ch) == nil {
			changes = append(changes, ch)
		}
	}
	if len(changes) != 2 || changes[0]["value"] != "build" || changes[1]["value"] != "deploy" || changes[1]["author"] != "ops" {
		t.Errorf("watch printed %v; want the seed's write, then ours", changes)
	} else if meta, _ := changes[1]["meta"].(map[string]any); meta["via"] != "temporal" {
		t.Errorf("our write's meta: %v; want via temporal", changes[1]["meta"])
	}

	if code, got := c.cli(t, "answer", out, "--step", "review", "--set", "approve=maybe"); code != 2 || !strings.Contains(got, "approve") {
		t.Errorf("a bad answer: exit %d, %q; want 2 naming the field", code, got)
	}
	if code, got := c.cli(t, "answer", out, "--step", "review", "--set", "approve=true", "--by", "ana"); code != 0 || !strings.Contains(got, "answered review") {
		t.Errorf("answer: exit %d, %q", code, got)
	}
	if code := run.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("run exit %d:\n%s", code, run.out)
	}
	b := loadBoard(t, out)
	deploy := stepOf(t, b, "deploy")
	if !strings.Contains(string(deploy.Result), "next=deploy approve=true") {
		t.Errorf("deploy saw %s; want the outside write and the answer", deploy.Result)
	}
	if code, got := c.cli(t, "answer", out, "--step", "review", "--set", "approve=false"); code != 1 || !strings.Contains(got, "conflict") {
		t.Errorf("a different answer after the end: exit %d, %q; want a conflict", code, got)
	}
	if code, got := c.cli(t, "replay", out, "--offline"); code != 0 || !strings.Contains(got, "matched") {
		t.Errorf("replay --offline: exit %d:\n%s", code, got)
	}
	if code, got := c.cli(t, "board", out, "get", "jobs:next"); code != 0 || strings.TrimSpace(got) != "deploy" {
		t.Errorf("get after the end (the file): exit %d, %q", code, got)
	}
}

// The process that started the run is killed while the run waits: the
// run goes on on Temporal, an answer still reaches it, and the next
// `runner board` finds it ended and saves its board, so nothing is lost.
func TestDevServerBoardSavedWhenStarterDied(t *testing.T) {
	c := newCLICluster(t)
	plan := writePlan(t, c.work, liveReviewPlan)
	out := filepath.Join(c.work, "bb.json")
	starter := c.run(t, plan, out)
	waitOutput(t, starter, `"waiting"`, time.Minute)
	starter.cmd.Process.Signal(syscall.SIGKILL)
	starter.wait(t, 10*time.Second)

	if code, got := c.cli(t, "answer", out, "--step", "review", "--json", `{"approve": true}`); code != 0 {
		t.Fatalf("answer: exit %d, %q", code, got)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		code, got := c.cli(t, "board", out, "get", "jobs:next")
		if code != 0 {
			t.Fatalf("get: exit %d, %q", code, got)
		}
		if _, err := os.Stat(out); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ended run's board was never saved")
		}
		time.Sleep(200 * time.Millisecond)
	}
	b := loadBoard(t, out)
	if b.Run().Status != "succeeded" || !strings.Contains(string(stepOf(t, b, "deploy").Result), "approve=true") {
		t.Errorf("saved run %s, deploy %s", b.Run().Status, stepOf(t, b, "deploy").Result)
	}
}

// A Temporal run's blackboard.json is an ordinary one: `report` renders
// it, a local run `--reuse`s its model answers, `replay --offline`
// matches it.
func TestDevServerFileWorksUnchanged(t *testing.T) {
	c := newCLICluster(t)
	plan := writePlan(t, c.work, `
version: 1
agents:
  bot: {provider: script, model: canned, responses: ["first answer", "second answer"]}
steps:
  - {label: ask, type: llm, agent: bot, prompt: "Say something"}
  - {label: again, type: llm, agent: bot, prompt: "And again, after ${{ steps.ask.output }}"}
  - {label: show, type: command, run: "echo got: ${{ steps.again.output }}"}
`)
	out := filepath.Join(c.work, "t.json")
	if code, got := c.cli(t, "run", plan, "--engine", "temporal", "--temporal", c.srv.hostPort, "--task-queue", c.queue,
		"--blobs", c.blobs, "--out", out, "-q"); code != 0 {
		t.Fatalf("run on Temporal: exit %d\n%s", code, got)
	}
	html := filepath.Join(c.work, "t.html")
	if code, got := c.cli(t, "report", out, "-o", html); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, got)
	}
	if data, err := os.ReadFile(html); err != nil || !strings.Contains(string(data), "second answer") {
		t.Errorf("the report lacks the model's answer (%v)", err)
	}
	local := filepath.Join(c.work, "local.json")
	if code, got := c.cli(t, "run", plan, "--reuse", out, "--out", local, "-q"); code != 0 {
		t.Fatalf("local run --reuse: exit %d\n%s", code, got)
	}
	data, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	var saved struct {
		Run struct {
			Reused struct {
				ReusedCalls int `json:"reused_calls"`
				LiveCalls   int `json:"live_calls"`
			} `json:"reused"`
		} `json:"run"`
	}
	json.Unmarshal(data, &saved)
	if u := saved.Run.Reused; u.ReusedCalls != 2 || u.LiveCalls != 0 {
		t.Errorf("--reuse of the Temporal run: %+v; want both calls reused", u)
	}
	if code, got := c.cli(t, "replay", out, "--offline"); code != 0 || !strings.Contains(got, "matched") {
		t.Errorf("replay --offline: exit %d\n%s", code, got)
	}

	// And --reuse on Temporal itself, of the in-process run's file.
	again := filepath.Join(c.work, "again.json")
	if code, got := c.cli(t, "run", plan, "--engine", "temporal", "--temporal", c.srv.hostPort, "--task-queue", c.queue,
		"--blobs", c.blobs, "--out", again, "--reuse", local, "-q"); code != 0 {
		t.Fatalf("run on Temporal --reuse: exit %d\n%s", code, got)
	}
	if u := loadBoard(t, again).Run().Reused; u == nil || u.ReusedCalls != 2 || u.LiveCalls != 0 {
		t.Errorf("--reuse on Temporal: %+v; want both calls reused", u)
	}
}
