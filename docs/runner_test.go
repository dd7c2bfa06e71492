package docs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// binary is the runner the tests build once: the docs are checked against
// the commands as they are now.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runner-docs")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "runner")
	if out, err := exec.Command("go", "build", "-o", binary, "../cmd/runner").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building runner: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// runner-otel beside it, where `runner trace` looks for it first.
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "runner-otel"), "../cmd/runner-otel").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building runner-otel: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// goEnv is what the go tool needs to find its build cache when HOME points
// at a scratch directory: commands the docs run (the flagship example runs
// `go test`) would otherwise rebuild the standard library from nothing,
// which takes a minute on a small machine. The build cache is the one this
// `go test` itself uses; the module cache and GOPATH stay in the scratch
// HOME (the examples need no modules), so no test touches the user's.
var goEnv = sync.OnceValue(func() []string {
	var env []string
	for _, name := range []string{"GOCACHE", "GOROOT"} {
		out, err := exec.Command("go", "env", name).Output()
		if err == nil && strings.TrimSpace(string(out)) != "" {
			env = append(env, name+"="+strings.TrimSpace(string(out)))
		}
	}
	return env
})

// cleanEnv is the environment of every runner the tests start: HOME in
// scratch, no colour, and no API key of the person running the tests, so
// a command that would need one cannot quietly spend money.
func cleanEnv(home string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "NO_COLOR=1", "TMPDIR=" + os.TempDir(), "USER=docs"}
	return append(env, goEnv()...)
}

// runResult is what one command did.
type runResult struct {
	code int
	out  string // stdout and stderr together
}

// run starts the built runner with args in dir, with a time limit.
func run(t *testing.T, dir, home string, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv(home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("runner %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Errorf("runner %s: still running after 60s", strings.Join(args, " "))
	}
	return runResult{code, out.String()}
}

// help is what `runner ARGS... -h` prints, cached: the tests ask for the
// same commands' help many times.
var (
	helpMu    sync.Mutex
	helpCache = map[string]string{}
)

func help(t *testing.T, args ...string) string {
	t.Helper()
	key := strings.Join(args, " ")
	helpMu.Lock()
	defer helpMu.Unlock()
	if h, ok := helpCache[key]; ok {
		return h
	}
	home := t.TempDir()
	h := run(t, home, home, append(args, "-h")...).out
	helpCache[key] = h
	return h
}

var commandLine = regexp.MustCompile(`(?m)^  ([a-z][a-z0-9-]*)  `)

// commands lists the commands `runner help` names, in its order.
func commands(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	r := run(t, home, home, "help")
	if r.code != 0 {
		t.Fatalf("runner help: exit %d\n%s", r.code, r.out)
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range commandLine.FindAllStringSubmatch(r.out, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	if len(out) < 5 {
		t.Fatalf("runner help names %d commands; want the list:\n%s", len(out), r.out)
	}
	return out
}

// subcommands are the words W for which `runner CMD W -h` prints help of
// its own (a command with subcommands, such as board), found from the
// usage lines of `runner CMD -h`, so a new subcommand is picked up
// without a change here.
func subcommands(t *testing.T, cmd string) []string {
	t.Helper()
	parent := help(t, cmd)
	// candidates: "runner CMD WORD" anywhere, and a word that starts an
	// line indented by two spaces (a list of subcommands; flags
	// and their descriptions start otherwise)
	inUsage := regexp.MustCompile(`runner ` + regexp.QuoteMeta(cmd) + ` ([a-z][a-z-]*)(?:\s|$)`)
	listed := regexp.MustCompile(`(?m)^  ([a-z][a-z-]*)(?:\s|$)`)
	var out []string
	seen := map[string]bool{"runner": true}
	for _, m := range append(inUsage.FindAllStringSubmatch(parent, -1), listed.FindAllStringSubmatch(parent, -1)...) {
		w := m[1]
		if seen[w] {
			continue
		}
		seen[w] = true
		// a subcommand's help names it; an unknown word's error does not
		if h := help(t, cmd, w); h != parent && strings.Contains(h, "runner "+cmd+" "+w) {
			out = append(out, w)
		}
	}
	return out
}

var flagLine = regexp.MustCompile(`(?m)^  --?([A-Za-z0-9][A-Za-z0-9-]*)( [A-Za-z_:]+)?(\t|$)`)

// flags are the flags a help text lists, each with whether it takes a
// value (Go's flag package prints "-name type" for those).
func flags(helpText string) map[string]bool {
	out := map[string]bool{"h": false, "help": false}
	for _, m := range flagLine.FindAllStringSubmatch(helpText, -1) {
		out[m[1]] = m[2] != ""
	}
	return out
}
