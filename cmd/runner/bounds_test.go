package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/sys/readlimit"
)

// runIn runs the binary in dir with extra environment and stdin. The
// context only keeps a hung command from hanging the test run: a command
// that needs it fails its row ("killed").
func runIn(t *testing.T, dir string, env []string, stdin io.Reader, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

const tinyPlan = `version: 1
name: tiny
agents:
  bot: {provider: script, responses: [ok]}
steps:
  - label: note
    type: board
    op: write
    key: note
    value: hello
`

// tinyRun runs tinyPlan in dir and returns its blackboard.json.
func tinyRun(t *testing.T, dir string) (plan, bb string) {
	t.Helper()
	plan = filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(tinyPlan), 0o600); err != nil {
		t.Fatal(err)
	}
	bb = filepath.Join(dir, "bb.json")
	if r := runIn(t, dir, nil, nil, "run", "-q", plan, "--out", bb); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	return plan, bb
}

// TestEveryReadIsBounded gives every command that reads a file or a
// stream an input past its limit: /dev/zero (which never ends), a FIFO
// (which blocks an open for good), or a regular file or stdin larger
// than the limit, lowered to 1 MiB with RUNNER_READ_LIMIT_MB. Each must
// stop with an error naming the input and the limit, never grow or hang.
func TestEveryReadIsBounded(t *testing.T) {
	dir := t.TempDir()
	_, bb := tinyRun(t, dir)
	big := strings.Repeat("# padding line of a big file\n", 40_000) // 1.1 MiB
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bigPlan := write("big.yaml", tinyPlan+big)
	write("answers.yaml", "note:\n  - ok\n"+big)
	respPlan := write("resp.yaml", strings.Replace(tinyPlan, "responses: [ok]", "responses: answers.yaml", 1))
	bigBoard := write("bigbb.json", strings.Replace(mustRead(t, bb), "\n", "\n"+strings.Repeat(" ", 1<<20), 1))
	// A valid file with a journal past the limit.
	jbb := write("jbb.json", mustRead(t, bb))
	write("jbb.json.journal", `{"n": 1, "run": {"id": "`+strings.Repeat("x", 1<<20+10)+`"}}`+"\n")
	bigDiff := write("big.patch", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"+big)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The plan a failed run names, grown past the limit since: resume
	// reads it to see whether it changed.
	failPlan := write("fail.yaml", tinyPlan+"  - label: broken\n    type: command\n    run: exit 1\n")
	failBB := filepath.Join(dir, "fail.json")
	if r := runIn(t, dir, nil, nil, "run", "-q", failPlan, "--out", failBB); r.code != 1 {
		t.Fatalf("run fail.yaml: %d %s", r.code, r.stderr)
	}
	planGrew := func() { write("fail.yaml", tinyPlan+big) }

	// A run whose remote record (a run on Temporal) is a FIFO: reading it
	// must not block.
	fbb := write("fbb.json", mustRead(t, bb))
	if err := syscall.Mkfifo(fbb+".remote", 0o600); err != nil {
		t.Fatal(err)
	}
	low := []string{readlimit.EnvVar + "=1"}
	for _, c := range []struct {
		name  string
		env   []string
		stdin string
		setup func()
		args  []string
		want  string // in stderr
	}{
		{name: "validate /dev/zero", args: []string{"validate", "/dev/zero"}, want: "/dev/zero is larger than 16 MiB"},
		{name: "run /dev/zero", args: []string{"run", "/dev/zero"}, want: "/dev/zero is larger than 16 MiB"},
		{name: "graph /dev/zero", args: []string{"graph", "/dev/zero"}, want: "/dev/zero is larger than 16 MiB"},
		{name: "validate big plan", env: low, args: []string{"validate", bigPlan}, want: bigPlan + " is larger than 1 MiB"},
		{name: "run, big responses file", env: low, args: []string{"run", respPlan}, want: "answers.yaml is larger than 1 MiB"},
		{name: "run --dry-run big plan", env: low, args: []string{"run", "--dry-run", bigPlan}, want: "larger than 1 MiB"},
		{name: "report /dev/zero", args: []string{"report", "/dev/zero"}, want: "/dev/zero is not a regular file (a character device)"},
		{name: "report fifo", args: []string{"report", fifo}, want: "is not a regular file (a named pipe)"},
		{name: "report big board", env: low, args: []string{"report", bigBoard}, want: bigBoard + " is larger than 1 MiB"},
		{name: "report big journal", env: low, args: []string{"report", jbb}, want: "jbb.json.journal is larger than 1 MiB"},
		{name: "report, remote record a fifo", args: []string{"report", fbb}, want: "fbb.json.remote is not a regular file (a named pipe)"},
		{name: "board show /dev/zero", args: []string{"board", "/dev/zero", "show"}, want: "not a regular file"},
		{name: "board put fifo", args: []string{"board", fifo, "put", "k", "v"}, want: "not a regular file (a named pipe)"},
		{name: "board get big board", env: low, args: []string{"board", bigBoard, "get", "note"}, want: "larger than 1 MiB"},
		{name: "board put - big record", env: low, stdin: `{"key": "k", "value": "` + strings.Repeat("v", 1<<20) + `"}`,
			args: []string{"board", bb, "put", "-"}, want: "a record on standard input is larger than 1 MiB"},
		{name: "resume /dev/zero", args: []string{"resume", "/dev/zero"}, want: "not a regular file"},
		{name: "resume big board", env: low, args: []string{"resume", bigBoard}, want: "larger than 1 MiB"},
		{name: "resume, plan grew", env: low, setup: planGrew, args: []string{"resume", failBB, "--force"}, want: failPlan + " is larger than 1 MiB"},
		{name: "replay /dev/zero", args: []string{"replay", "/dev/zero", "--offline"}, want: "not a regular file"},
		{name: "replay --plan /dev/zero", args: []string{"replay", bb, "--offline", "--plan", "/dev/zero"}, want: "/dev/zero is larger than 16 MiB"},
		{name: "answer /dev/zero", args: []string{"answer", "/dev/zero", "--step", "x", "--json", "{}"}, want: "not a regular file"},
		{name: "run --reuse /dev/zero", args: []string{"run", "--reuse", "/dev/zero", respPlan}, want: "not a regular file"},
		{name: "apply /dev/zero", args: []string{"apply", "--check", "/dev/zero"}, want: "/dev/zero is larger than 64 MiB"},
		{name: "apply big diff", env: low, args: []string{"apply", "--check", bigDiff}, want: "big.patch is larger than 1 MiB"},
		{name: "apply - big stdin", env: low, stdin: mustRead(t, bigDiff), args: []string{"apply", "--check", "-"}, want: "the diff on standard input is larger than 1 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup()
			}
			r := runIn(t, dir, c.env, strings.NewReader(c.stdin), c.args...)
			if r.code == 0 || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want an error with %q", r.code, r.stderr, c.want)
			}
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A key holding a secret is refused with an error that shows it masked,
// wherever the key comes from: a board step of the plan, a step's write:
// key, and `runner board put` on the saved run (which learns the plan's
// secrets from this environment). Before, it was stored as k-***: a read
// of 'k-' + secret missed, and two such keys collided.
func TestSecretInKeyRefused(t *testing.T) {
	const secret = "tok-5ecret-9f3a1c"
	env := []string{"DEPLOY_TOKEN=" + secret}
	for _, c := range []struct{ name, step string }{
		{"board step", `
  - label: put
    type: board
    op: write
    key: "k-${{ secrets.DEPLOY_TOKEN }}"
    value: x`},
		{"write: key", `
  - label: put
    type: command
    run: echo hi
    write: {key: "k-${{ secrets.DEPLOY_TOKEN }}"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			plan := filepath.Join(dir, "plan.yaml")
			os.WriteFile(plan, []byte("version: 1\nname: s\nsecrets: [DEPLOY_TOKEN]\nsteps:"+c.step+"\n"), 0o600)
			bb := filepath.Join(dir, "bb.json")
			r := runIn(t, dir, env, nil, "run", plan, "--out", bb, "--log-format", "json")
			if r.code != 1 || !strings.Contains(r.stderr, `k-*** holds a secret`) && !strings.Contains(r.stderr, `\"k-***\" holds a secret`) {
				t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
			}
			if strings.Contains(r.stderr+r.stdout+mustRead(t, bb), secret) {
				t.Fatal("the secret was printed or saved")
			}
			r = runIn(t, dir, env, nil, "board", bb, "put", "k-"+secret, "v")
			if r.code == 0 || !strings.Contains(r.stderr, `key "k-***" holds a secret`) || strings.Contains(r.stderr, secret) {
				t.Fatalf("board put: exit %d, stderr %s", r.code, r.stderr)
			}
		})
	}
}

// A literal key a plan gives (a board step's key, a step's write: key)
// that the board would refuse is refused by validate, at its line and
// column; a key made by ${{ }} is checked by the board when it is written.
func TestValidateRefusesBadLiteralKeys(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
name: k
steps:
  - label: a
    type: board
    op: write
    key: "a\u0000b"
    value: 1
  - label: b
    type: command
    run: echo
    write: {key: "x\ny"}
  - label: c
    type: board
    op: write
    key: "fine-${{ 'x' }}"
    value: 1
`), 0o600)
	r := runIn(t, dir, nil, nil, "validate", plan)
	for _, want := range []string{
		"plan.yaml:7:10: key: the key holds a control character, NUL (U+0000), at byte 1",
		`plan.yaml:12:18: write.key: the key holds a control character, a newline (\n), at byte 1`,
		"2 problem(s)",
	} {
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr %s; want %q", r.code, r.stderr, want)
		}
	}
}

// A negative number given to a numeric flag is bad usage (exit 2) saying
// which flag, for every command: `watch --count -5` and `--since -1` ran
// forever.
func TestNegativeFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	_, bb := tinyRun(t, dir)
	n := load(t, bb).Len()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"board", bb, "watch", "--count", "-5"}, "--count -5: want 0 or more"},
		{[]string{"board", bb, "watch", "--since", "-1"}, `--since "-1": want a seq (0 or more) or an RFC 3339 time`},
		{[]string{"board", bb, "watch", "--since=-3", "--count", "1"}, `--since "-3": want a seq (0 or more) or an RFC 3339 time`},
		{[]string{"board", bb, "put", "k", "v", "--expect-version", "-5"}, "--expect-version -5: want 0 or more"},
		{[]string{"board", bb, "delete", "k", "--expect-version=-1"}, "--expect-version -1: want 0 or more"},
		{[]string{"apply", "-p", "-1", "--check", "-"}, "-p -1: want 0 or more"},
		{[]string{"run", "plan.yaml", "--heartbeat-timeout", "-1s"}, "--heartbeat-timeout -1s: want 0 or more"},
		{[]string{"run", "plan.yaml", "--max-history-events", "-1"}, "--max-history-events -1: want 0 or more"},
	} {
		r := runIn(t, dir, nil, strings.NewReader(""), c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if b := load(t, bb); b.Len() != n {
		t.Errorf("the board changed: %d entries, was %d", b.Len(), n)
	}
}
