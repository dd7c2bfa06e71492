package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

var update = flag.Bool("update", false, "rewrite golden files")

var binary string

// The CLI tests run the real binary, as a user would.
func TestMain(m *testing.M) {
	// The binary runs with this environment: a test run on GitHub Actions
	// or with colour forced must not change what every other test reads.
	for _, k := range []string{"GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE", "FORCE_COLOR", "CLICOLOR_FORCE"} {
		os.Unsetenv(k)
	}
	dir, err := os.MkdirTemp("", "runner-bin")
	if err != nil {
		panic(err)
	}
	// No user's prices file: the built-in prices only.
	os.Setenv("RUNNER_PRICES", filepath.Join(dir, "no-prices.yaml"))
	binary = filepath.Join(dir, "runner")
	// Not the config of the user who runs the tests (a retention policy).
	os.Setenv("RUNNER_CONFIG", filepath.Join(dir, "no-config.yaml"))
	// Nor the user's budget ledger.
	os.Setenv("RUNNER_BUDGET_DIR", filepath.Join(dir, "budget"))
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	// runner-otel beside it, where runner looks for it first.
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "runner-otel"), "../runner-otel").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
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

func testdata(name string) string {
	p, _ := filepath.Abs(filepath.Join("testdata", name))
	return p
}

// blackboardPath is the path `runner run` printed.
func blackboardPath(t *testing.T, stdout string) string {
	t.Helper()
	for _, line := range strings.Split(stdout, "\n") {
		if p, ok := strings.CutPrefix(line, "blackboard: "); ok {
			return p
		}
		if strings.HasSuffix(line, ".json") && !strings.Contains(line, " ") {
			return line // -q prints the bare path
		}
	}
	t.Fatalf("no blackboard path in %q", stdout)
	return ""
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestValidateReportsAllMistakes(t *testing.T) {
	r := runCLI(t, "testdata", "validate", "five-mistakes.yaml")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2", r.code)
	}
	golden(t, "five-mistakes.golden", r.stderr)
	r = runCLI(t, "testdata", "validate", "loops.yaml", "runaway.yaml")
	if r.code != 0 || r.stdout != "loops.yaml: ok (8 steps)\nrunaway.yaml: ok (2 steps)\n" {
		t.Fatalf("valid plans: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestDryRun(t *testing.T) {
	r := runCLI(t, "testdata", "run", "loops.yaml", "--dry-run", "--var", "rounds=5")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden(t, "loops.dry-run.golden", r.stdout)
	if entries, _ := os.ReadDir("testdata/.runner"); len(entries) > 0 {
		t.Error("a dry run wrote a run directory")
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "want one plan file"},
		{[]string{"run", "loops.yaml", "--var", "rounds=many"}, "--var rounds=many: want a whole number"},
		{[]string{"run", "loops.yaml", "--var", "rouns=1"}, `the plan has no var "rouns" (did you mean "rounds"?)`},
		{[]string{"run", "loops.yaml", "--log-format", "xml"}, "--log-format \"xml\""},
		{[]string{"run", "nothere.yaml"}, "runner run: open nothere.yaml: no such file"},
		{[]string{"graph", "nothere.yaml"}, "runner graph: open nothere.yaml: no such file"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		// --force did nothing for years; it is refused like any unknown flag.
		{[]string{"board", "bb.json", "show", "--force"}, "unknown flag --force"},
		{[]string{"run", "loops.yaml", "--reprot"}, `unknown flag --reprot (did you mean "--report"?)`},
		{[]string{"rnu"}, `unknown command "rnu" (did you mean "run"?)`},
		{[]string{"run", "loops.yaml", "--agent", "coder.modle=x"}, `--agent "coder.modle=x": cannot set agent field "modle" (did you mean "model"?)`},
		{[]string{"run", "loops.yaml", "--agent", "coder.provider=opnai"}, `unknown provider "opnai" (did you mean "openai"?)`},
		// A value the flag package refuses says what the flag takes.
		{[]string{"runs", "prune", "--keep", "x"}, `--keep "x": want a whole number`},
		{[]string{"runs", "--limit", "99999999999999999999999"}, `--limit "99999999999999999999999": too large`},
		{[]string{"run", "loops.yaml", "--sync=maybe"}, `--sync "maybe": want true or false`},
		// A directory flag that names none is refused, not read as empty.
		{[]string{"runs", "--dir", "nosuch"}, "--dir nosuch: not a directory"},
		{[]string{"runs", "prune", "--keep", "1", "--dir", "nosuch"}, "--dir nosuch: not a directory"},
		{[]string{"cost", "--dir", "nosuch"}, "--dir nosuch: not a directory"},
		{[]string{"memory", "--dir", "loops.yaml", "list"}, "--dir loops.yaml: not a directory"},
	}
	for _, tt := range tests {
		r := runCLI(t, "testdata", tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("runner %v: exit %d, stderr %q; want exit 2 saying %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

// docs/spec.md §3 as a Go type: what a consumer of blackboard.json relies on.
type savedRun struct {
	Format string `json:"format"`
	Run    struct {
		ID, PlanPath, PlanSHA256, PlanSource, Workdir, Status, StartedAt, FinishedAt, RunnerVersion string
		Vars                                                                                        map[string]any
	} `json:"run"`
	Steps []struct {
		Label      string          `json:"label"`
		Visit      int             `json:"visit"`
		Status     string          `json:"status"`
		StartedAt  string          `json:"started_at"`
		FinishedAt string          `json:"finished_at"`
		Result     json.RawMessage `json:"result"`
		Error      *string         `json:"error"`
	} `json:"steps"`
	Entries    []map[string]json.RawMessage `json:"entries"`
	Recordings []json.RawMessage            `json:"recordings"`
}

func TestRunLoopsAndParallel(t *testing.T) {
	wd := t.TempDir()
	r := runCLI(t, wd, "run", testdata("loops.yaml"), "--log-format", "console")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(blackboardPath(t, r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var saved savedRun
	if err := dec.Decode(&saved); err != nil {
		t.Fatal(err)
	}
	if saved.Format != "runner.blackboard/v1" || saved.Run.Status != "succeeded" {
		t.Fatalf("format %q status %q", saved.Format, saved.Run.Status)
	}
	var got []string
	for _, s := range saved.Steps {
		got = append(got, s.Label)
		if s.Status != "succeeded" || s.Error == nil || s.StartedAt == "" || len(s.Result) == 0 {
			t.Errorf("step %s#%d: %+v", s.Label, s.Visit, s)
		}
	}
	// The three parallel steps finish in any order, before their group.
	order := strings.Join(got, " ")
	order = strings.NewReplacer("two", "one", "three", "one").Replace(order)
	if order != "prepare one one one checks work again work again work again final" {
		t.Errorf("visits in order: %v", got)
	}
	var last struct {
		Output   string `json:"output"`
		ExitCode *int   `json:"exit_code"`
	}
	json.Unmarshal(saved.Steps[len(saved.Steps)-1].Result, &last)
	if last.Output != "123 rounds=3" || last.ExitCode == nil || *last.ExitCode != 0 {
		t.Errorf("final result %+v", last)
	}
	for _, want := range []string{"✓ prepare", "\n  ✓ one", // a group's children under it
		"✓ work #3", "✓ again #2", "→ work"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("progress lacks %q:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Stat(board.JournalPath(blackboardPath(t, r.stdout))); !os.IsNotExist(err) {
		t.Errorf("journal left behind after a finished run")
	}
}

func TestRunawayLoopStops(t *testing.T) {
	r := runCLI(t, t.TempDir(), "run", testdata("runaway.yaml"))
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	if !strings.Contains(r.stderr, "step spin: visited 6 times, past its max_visits of 5") {
		t.Errorf("stderr does not name the step: %s", r.stderr)
	}
}

func TestInjectedValueStaysOneLiteralWord(t *testing.T) {
	wd := t.TempDir()
	evil := `'; rm -rf ~ #`
	r := runCLI(t, wd, "run", testdata("inject.yaml"), "--var", "v="+evil)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, f := range []string{"out.txt", "out2.txt"} {
		got, _ := os.ReadFile(filepath.Join(wd, f))
		if string(got) != evil {
			t.Errorf("%s = %q, want %q", f, got, evil)
		}
	}
}

func TestInterrupt(t *testing.T) {
	wd := t.TempDir()
	out := filepath.Join(wd, "bb.json")
	cmd := exec.Command(binary, "run", testdata("slow.yaml"), "--out", out, "--log-format", "console")
	cmd.Dir = wd
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "first") {
			break
		}
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(wd, "started")); err == nil {
			break // `slow` is running
		}
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	go func() {
		for sc.Scan() {
		}
	}()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("took %s to stop", d)
	}
	b, err := board.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if b.Run().Status != "interrupted" {
		t.Errorf("run status %q", b.Run().Status)
	}
	var labels []string
	for _, s := range b.Steps() {
		labels = append(labels, s.Label+":"+s.Status)
	}
	if strings.Join(labels, " ") != "first:succeeded slow:canceled" {
		t.Errorf("steps %v", labels)
	}
}

// kill -9 at any moment leaves a blackboard.json that parses, and every
// step the run reported finished is in the file or its journal.
func TestKill9LosesNothing(t *testing.T) {
	trials := 12
	if testing.Short() {
		trials = 3
	}
	for i := 0; i < trials; i++ {
		wd := t.TempDir()
		out := filepath.Join(wd, "bb.json")
		cmd := exec.Command(binary, "run", testdata("many.yaml"), "--out", out, "--log-format", "console")
		cmd.Dir = wd
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 4096)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		time.Sleep(time.Duration(rand.IntN(400)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		reported := map[string]bool{}
		for l := range lines {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "✓" {
				name := f[1]
				if len(f) >= 3 && strings.HasPrefix(f[2], "#") {
					name += " " + f[2]
				}
				reported[name] = true
			}
		}
		b, err := board.Load(out)
		if os.IsNotExist(err) && len(reported) == 0 {
			continue // killed before the run began: nothing was promised
		}
		if err != nil {
			t.Fatalf("trial %d: blackboard does not load after kill -9: %v", i, err)
		}
		saved := map[string]bool{}
		for _, s := range b.Steps() {
			name := s.Label
			if s.Visit > 1 {
				name += " #" + itoa(s.Visit)
			}
			saved[name] = true
		}
		for name := range reported {
			if !saved[name] {
				t.Errorf("trial %d: step %s was reported finished but is not saved", i, name)
			}
		}
		if len(b.Steps()) < len(reported) {
			t.Errorf("trial %d: %d steps saved, %d reported", i, len(b.Steps()), len(reported))
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestGraph(t *testing.T) {
	for _, format := range []string{"mermaid", "dot"} {
		r := runCLI(t, "testdata", "graph", "five-mistakes.yaml", "--format", format)
		if r.code != 2 {
			t.Errorf("graph of an invalid plan: exit %d", r.code)
		}
		r = runCLI(t, "testdata", "graph", "crash.yaml", "--format", format)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		golden(t, "crash."+format+".golden", r.stdout)
		// Retries and tolerated failures marked; a loop back into a
		// group reaches its children and does not rank the layout.
		r = runCLI(t, "testdata", "graph", "graph.yaml", "--format", format)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		golden(t, "graph."+format+".golden", r.stdout)
	}
}

// The plan the README shows is valid.
func TestReadmePlanIsValid(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```yaml\n")
	plan, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README has no yaml block")
	}
	p := filepath.Join(t.TempDir(), "readme.yaml")
	os.WriteFile(p, []byte(plan), 0o644)
	if r := runCLI(t, t.TempDir(), "validate", p); r.code != 0 {
		t.Fatalf("README plan: exit %d\n%s", r.code, r.stderr)
	}
}

// Help fits an 80-column terminal, and a mistake gets a short answer,
// not the whole help.
func TestHelpFits80Columns(t *testing.T) {
	pages := [][]string{{"--help"}}
	for _, c := range commands {
		pages = append(pages, []string{c.name, "--help"})
	}
	for _, args := range pages {
		r := runCLI(t, "testdata", args...)
		if r.code != 0 || r.stdout+r.stderr == "" {
			t.Errorf("runner %v: exit %d", args, r.code)
		}
		for _, line := range strings.Split(r.stdout+r.stderr, "\n") {
			if n := len([]rune(line)); n > 80 {
				t.Errorf("runner %v: a line of %d columns: %q", args, n, line)
			}
		}
	}
	for _, args := range [][]string{{"rnu"}, {"run", "loops.yaml", "--reprot"}, {"board", "bb.json", "show", "--force"}} {
		r := runCLI(t, "testdata", args...)
		if lines := strings.Count(r.stderr, "\n"); r.code != 2 || lines > 2 {
			t.Errorf("runner %v: exit %d, %d lines:\n%s", args, r.code, lines, r.stderr)
		}
	}
}

// A relative path that names nothing says where it was looked for and by
// which rule: a step's dir against the workdir, a responses file against
// the plan's directory.
func TestRelativePathErrorsNameTheRule(t *testing.T) {
	wd := t.TempDir()
	os.MkdirAll(filepath.Join(wd, "sub"), 0o755)
	os.WriteFile(filepath.Join(wd, "sub", "dir.yaml"), []byte("version: 1\nname: r\nsteps:\n  - {label: a, type: command, dir: nodir, run: pwd}\n"), 0o644)
	os.WriteFile(filepath.Join(wd, "sub", "resp.yaml"), []byte("version: 1\nname: r\nagents:\n  bot: {provider: script, responses: answers.yaml}\nsteps:\n  - {label: b, type: llm, agent: bot, prompt: hi}\n"), 0o644)
	for _, c := range []struct{ plan, want string }{
		{"sub/dir.yaml", filepath.Join(wd, "nodir") + " is not a directory (a step's dir is relative to the workdir, " + wd + ")"},
		{"sub/resp.yaml", filepath.Join(wd, "sub", "answers.yaml") + ": no such file or directory (a responses file is relative to the plan's directory, " + filepath.Join(wd, "sub") + ")"},
	} {
		r := runCLI(t, wd, "run", c.plan, "--log-format", "json")
		if r.code == 0 || !strings.Contains(strings.ReplaceAll(r.stderr, `\"`, `"`), c.want) {
			t.Errorf("run %s: exit %d; want it to say %q:\n%s", c.plan, r.code, c.want, r.stderr)
		}
	}
}
