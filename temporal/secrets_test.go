package temporal

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"
)

// A secret is written nowhere on Temporal either: a command step that is
// handed a plan secret and prints it, and a model key the step echoes,
// leave only *** in the board the workflow keeps, in every blob of the
// store (chunks, payloads) and in the saved blackboard.json.
func TestSecretsWrittenNowhereOnTemporal(t *testing.T) {
	const secret, key = "s3cr3t-Value-9137", "sk-live-Key-4471"
	t.Setenv("DEPLOY_TOKEN", secret)
	t.Setenv("OPENAI_API_KEY", key)
	src := `
version: 1
secrets: [DEPLOY_TOKEN]
steps:
  - label: deploy
    type: command
    env: {T: "${{ secrets.DEPLOY_TOKEN }}", K: "${{ secrets.OPENAI_API_KEY }}"}
    run: 'echo token=$T; echo key=$K >&2; echo "$T" | base64'
  - {label: after, type: command, run: "echo saw ${{ steps.deploy.stdout }}", write: {key: seen}}
`
	l := newLiveEnv(t)
	b, out := l.run(src)
	if out.Status != "succeeded" {
		t.Fatalf("run %s: %s", out.Status, out.Error)
	}
	if got := string(stepOf(t, b, "deploy").Result); !strings.Contains(got, "token=***") {
		t.Errorf("the step's result: %s; want the secret masked", got)
	}
	path := filepath.Join(t.TempDir(), "bb.json")
	if _, err := Save(l.store, out.Head, path); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{l.store.String(), filepath.Dir(path)} {
		filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return err
			}
			data, _ := os.ReadFile(p)
			for _, s := range []string{secret, key} {
				if bytes.Contains(data, []byte(s)) {
					t.Errorf("%s holds a secret", p)
				}
			}
			return nil
		})
	}
}

// The same on a dev server, through the runner CLI: nothing the run
// leaves holds a secret: the blob store, blackboard.json, the workflow's
// history on the server, and what the worker and runner printed.
func TestDevServerSecretsWrittenNowhere(t *testing.T) {
	const secret, key = "s3cr3t-Value-5521", "sk-live-Key-8803"
	t.Setenv("DEPLOY_TOKEN", secret)
	t.Setenv("OPENAI_API_KEY", key)
	c := newCLICluster(t) // the worker inherits the environment
	plan := writePlan(t, c.work, `
version: 1
secrets: [DEPLOY_TOKEN]
agents:
  bot: {provider: script, responses: [x], board: {write: ["notes:*"]}}
steps:
  - label: deploy
    type: command
    env: {T: "${{ secrets.DEPLOY_TOKEN }}", K: "${{ secrets.OPENAI_API_KEY }}"}
    run: 'echo token=$T; echo key=$K >&2; echo "$T" | base64; exit 3'
    continue_on_error: true
  # decided in the workflow, once: only the outcome is in the history
  - {label: shout, type: board, op: write, key: said, value: "${{ secrets.DEPLOY_TOKEN }}", if: 'secrets.DEPLOY_TOKEN != ""'}
  # fails the run, in the workflow, with the secret in its error
  - {label: denied, type: board, op: write, key: "k-${{ secrets.DEPLOY_TOKEN }}", value: 1, author: bot}
`)
	out := filepath.Join(c.work, "bb.json")
	code, printed := c.cli(t, "run", plan, "--engine", "temporal", "--temporal", c.srv.hostPort, "--task-queue", c.queue,
		"--blobs", c.blobs, "--out", out, "--log-format", "json")
	if code != 1 || !strings.Contains(printed, `may not write key \"k-***\"`) {
		t.Fatalf("run: exit %d; want 1, the run failed at the denied write, its error masked\n%s", code, printed)
	}
	check := func(what string, data []byte) {
		for _, s := range []string{secret, key} {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds a secret", what)
			}
		}
	}
	check("runner's output", []byte(printed))
	for _, w := range c.workers {
		check("the worker's log", []byte(w.out.String()))
	}
	for _, dir := range []string{c.blobs, filepath.Dir(out)} {
		filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				data, _ := os.ReadFile(p)
				check(p, data)
			}
			return nil
		})
	}
	if b := loadBoard(t, out); !strings.Contains(string(stepOf(t, b, "deploy").Result), "token=***") {
		t.Errorf("deploy: %s; want the secret masked", stepOf(t, b, "deploy").Result)
	}
	tc, err := client.Dial(client.Options{HostPort: c.srv.hostPort, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	it := tc.GetWorkflowHistory(context.Background(), WorkflowIDOf(loadBoard(t, out).Run()), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := protojson.Marshal(ev)
		check("the workflow's history", payloadsDecoded(data))
	}
}

// payloadsDecoded is an event's JSON with each string that is base64 (a
// payload's data, as protojson writes bytes) added decoded, so a secret
// inside a payload is found.
func payloadsDecoded(data []byte) []byte {
	var v any
	json.Unmarshal(data, &v)
	out := append([]byte(nil), data...)
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		case string:
			if b, err := base64.StdEncoding.DecodeString(x); err == nil {
				out = append(append(out, '\n'), b...)
			}
		}
	}
	walk(v)
	return out
}

// recordedSecret is DEPLOY_TOKEN as the secrets history was recorded.
const recordedSecret = "tok-4242-recorded"

// secretsPlan takes its branches on a secret: an if, a branch's when, a
// board value and an if over a plan env value made from it.
const secretsPlan = `
version: 1
secrets: [DEPLOY_TOKEN]
env: {AUTH: "Bearer ${{ secrets.DEPLOY_TOKEN }}"}
steps:
  - {label: deploy, type: command, run: "echo deploying", if: 'secrets.DEPLOY_TOKEN != ""'}
  - label: pick
    type: branch
    cases:
      - {when: 'secrets.DEPLOY_TOKEN == "tok-4242-recorded"', goto: known}
    default: fail
  - {label: skipped, type: command, run: "echo never"}
  - {label: known, type: board, op: write, key: auth, value: '${{ env.AUTH }} (${{ len(secrets.DEPLOY_TOKEN) }})'}
  - {label: after, type: command, run: "echo ${{ board('auth') }}", if: 'len(env.AUTH) > 7'}
`

// The workflow decides an if or a when on a secret as a local run does,
// and what it keeps of the secret is masked.
func TestWorkflowSecretsDecidedOnce(t *testing.T) {
	t.Setenv("DEPLOY_TOKEN", recordedSecret)
	b, out := runWorkflow(t, secretsPlan, Options{})
	if out.Status != "succeeded" {
		t.Fatalf("run %s: %s", out.Status, out.Error)
	}
	got := map[string]string{}
	for _, s := range b.Steps() {
		got[s.Label] = s.Status + " " + s.Goto
	}
	want := map[string]string{"deploy": "succeeded ", "pick": "succeeded known", "known": "succeeded ", "after": "succeeded "}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("step %s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if _, ran := got["skipped"]; ran {
		t.Errorf("the branch did not jump: %v", got)
	}
	if e, ok := b.Get("auth"); !ok || e.Content != "Bearer *** (17)" {
		t.Errorf("auth = %v, want the secret masked", e.Content)
	}
	// A step a worker ran keeps its rendered inputs, masked as the board is.
	if in := lastRecord(b, "after").Inputs["run"]; !strings.Contains(in, "=Bearer *** (17)") || strings.Contains(in, recordedSecret) {
		t.Errorf("after's inputs: run = %q, want the command as rendered, the secret masked", in)
	}
	local, err := inProcess(t, secretsPlan)
	if err != nil {
		t.Fatal(err)
	}
	if d := sameSteps(withoutResults(local.Steps(), "known", "after"), withoutResults(b.Steps(), "known", "after")); d != "" {
		t.Errorf("the workflow and a local run differ: %s", d)
	}
}

// withoutResults leaves out the results and inputs of the named steps (a
// local run without a mask keeps the secret in them).
func withoutResults(recs []board.StepRecord, labels ...string) []board.StepRecord {
	out := append([]board.StepRecord(nil), recs...)
	for i := range out {
		for _, l := range labels {
			if out[i].Label == l {
				out[i].Result, out[i].Inputs = nil, nil
			}
		}
	}
	return out
}

// The same history replays, and takes the same branches, whatever the
// environment of the worker that replays it: the secret unset, set to
// another value, or as recorded. Before, the workflow read secrets.X from
// its worker's environment, so a worker without it skipped a step the
// history ran (a nondeterminism error). The history holds no secret.
func TestReplaySecretsHistoryInAnyEnvironment(t *testing.T) {
	const file = "testdata/histories/secrets.json"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (record it with go test -run TestReplayHistories -record-histories)", err)
	}
	if bytes.Contains(data, []byte(recordedSecret)) || bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString([]byte(recordedSecret)))) {
		t.Fatalf("%s holds the secret", file)
	}
	for _, env := range []struct{ name, value string }{{"unset", ""}, {"another value", "tok-other"}, {"as recorded", recordedSecret}} {
		t.Run(env.name, func(t *testing.T) {
			t.Setenv("DEPLOY_TOKEN", env.value)
			if env.value == "" {
				os.Unsetenv("DEPLOY_TOKEN")
			}
			r := newReplayer(t)
			Register(r, &Workflow{Store: DirStore{Dir: t.TempDir()}}, nil)
			if err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), file); err != nil {
				t.Fatalf("replaying %s with DEPLOY_TOKEN %s: %v", file, env.name, err)
			}
		})
	}
}
