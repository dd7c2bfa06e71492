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
	for _, dir := range []string{l.store.Dir, filepath.Dir(path)} {
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
  - {label: shout, type: board, op: write, key: said, value: "${{ secrets.DEPLOY_TOKEN }}"}
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
	it := tc.GetWorkflowHistory(context.Background(), WorkflowID(loadBoard(t, out).Run().ID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
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
