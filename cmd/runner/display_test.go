package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/sys/mask"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair through /dev/ptmx, as a terminal
// emulator does (x/sys/unix; no pty library needed).
func openPTY(t *testing.T, cols uint16) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: cols})
	return m, s
}

// runOnTerminal runs the binary with its stderr on a terminal and returns
// what the terminal received, and stdout.
func runOnTerminal(t *testing.T, dir string, env []string, args ...string) (screen, stdout string, code int) {
	t.Helper()
	return runOnTerminalOf(t, 160, dir, env, args...)
}

func runOnTerminalOf(t *testing.T, cols uint16, dir string, env []string, args ...string) (screen, stdout string, code int) {
	t.Helper()
	m, s := openPTY(t, cols)
	defer m.Close()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Stderr, cmd.Env = dir, s, append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var raw bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&raw, m); close(done) }() // ends with EIO once the child is gone
	err := cmd.Wait()
	<-done
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return raw.String(), out.String(), code
}

// settle plays terminal output the way a screen of 160 columns shows it.
func settle(raw string) string { return screen(raw, 160) }

// screen plays terminal output on a screen width columns wide, as a
// terminal does: text wraps at the right edge (a row that wrapped is two
// rows), "\r" goes back to the first column, "ESC[nA" moves up n rows,
// "ESC[J" clears from the cursor down, colours are dropped. It returns the
// rows left, a wrapped line joined again.
func screen(raw string, width int) string {
	type row struct {
		text []rune
		cont bool // the rest of the row above, wrapped
	}
	rows := []row{{}}
	r, c := 0, 0
	seq := regexp.MustCompile(`^\x1b\[(\d*)([A-Za-z])`)
	rs := []rune(raw)
	for i := 0; i < len(rs); {
		if rs[i] == 0x1b {
			m := seq.FindStringSubmatch(string(rs[i:min(len(rs), i+16)]))
			if m == nil {
				i++
				continue
			}
			n := 1
			if m[1] != "" {
				fmt.Sscan(m[1], &n)
			}
			switch m[2] {
			case "A":
				r = max(0, r-n)
			case "J":
				if c < len(rows[r].text) {
					rows[r].text = rows[r].text[:c]
				}
				rows = rows[:r+1]
			}
			i += len([]rune(m[0]))
			continue
		}
		switch ch := rs[i]; ch {
		case '\r':
			c = 0
		case '\n':
			r++
			if r == len(rows) {
				rows = append(rows, row{})
			}
		default:
			if c == width { // the right edge: the rest goes on the next row
				r, c = r+1, 0
				if r == len(rows) {
					rows = append(rows, row{cont: true})
				}
			}
			for len(rows[r].text) <= c {
				rows[r].text = append(rows[r].text, ' ')
			}
			rows[r].text[c] = ch
			c++
		}
		i++
	}
	var lines []string
	for _, w := range rows {
		if w.cont && len(lines) > 0 {
			lines[len(lines)-1] += string(w.text)
			continue
		}
		lines = append(lines, string(w.text))
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
}

// finalErrorShown reports whether stderr ends a failed run saying why: the
// JSON "run finished" event's error, or the console's last lines.
func finalErrorShown(stderr string) bool {
	return regexp.MustCompile(`"error":".*"message":"run finished"|run \S+ failed in \S+( at step \w+|: )`).MatchString(stderr)
}

var (
	durationRE = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s)\b`)
	runIDRE    = regexp.MustCompile(`\b01[0-9A-Z]{24}\b`)
)

// The live display on a terminal, as the user sees it once the run ends:
// plan order with each group above its children, canceled siblings,
// tolerated failures, a failure's last output lines said once, the steps
// that never ran, the last output, and what to type next. NO_COLOR is
// honoured.
func TestLiveDisplayOnTerminal(t *testing.T) {
	wd := t.TempDir()
	raw, stdout, code := runOnTerminal(t, wd, []string{"NO_COLOR=1"}, "run", testdata("display.yaml"))
	if code != 1 {
		t.Fatalf("exit %d\n%s", code, raw)
	}
	if regexp.MustCompile(`\x1b\[[0-9;]*m`).MatchString(raw) {
		t.Errorf("NO_COLOR=1 but the display has colour codes: %q", raw)
	}
	if !strings.Contains(raw, "⠋") && !strings.Contains(raw, "⠙") {
		t.Errorf("no live block with a spinner was drawn: %q", raw)
	}
	bb := blackboardPath(t, stdout)
	got := settle(raw)
	got = strings.ReplaceAll(got, filepath.Dir(bb), "RUNDIR")
	got = runIDRE.ReplaceAllString(got, "RUNID")
	got = durationRE.ReplaceAllString(got, "D")
	golden(t, "display.golden", got)

	// With colour, the marks are coloured.
	raw, _, _ = runOnTerminal(t, wd, []string{"NO_COLOR="}, "run", testdata("display.yaml"))
	if !strings.Contains(raw, "\x1b[32m✓\x1b[0m hello") || !strings.Contains(raw, "\x1b[33m⊘\x1b[0m slow") {
		t.Errorf("no colours on a terminal: %q", raw)
	}
}

// On a terminal narrower than the running steps' lines, the live block
// leaves nothing behind: each redraw erases what the last one drew.
func TestLiveDisplayOnANarrowTerminal(t *testing.T) {
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
name: narrow
steps:
  - label: a_label_far_too_long_for_a_narrow_terminal
    parallel:
      - {label: another_child_label_that_wraps_on_its_own, type: command, run: "sleep 1"}
      - {label: short, type: command, run: "sleep 1"}
`), 0o644)
	raw, _, code := runOnTerminalOf(t, 30, wd, []string{"NO_COLOR=1"}, "run", plan)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, raw)
	}
	got := screen(raw, 30)
	if strings.ContainsAny(got, "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏") {
		t.Errorf("stale live-block lines left on a 30-column terminal:\n%s", got)
	}
	if !strings.Contains(got, "✓ another_child_label_that_wraps_on_its_own") {
		t.Errorf("the finished child's line is missing:\n%s", got)
	}
}

// --log-format json: every line of stderr is one JSON object with the
// run id, the final ones too; failures are level error; durations say
// their unit.
func TestJSONLogsParseLineByLine(t *testing.T) {
	wd := t.TempDir()
	r := runCLI(t, wd, "run", testdata("display.yaml"), "--log-format", "json")
	if r.code != 1 {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	sc := bufio.NewScanner(strings.NewReader(r.stderr))
	var events []map[string]any
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		events = append(events, ev)
	}
	if len(events) < 5 {
		t.Fatalf("%d events", len(events))
	}
	id := events[0]["run"]
	for _, ev := range events {
		if ev["run"] != id || id == nil {
			t.Errorf("event without the run id %v: %v", id, ev)
		}
		if _, bad := ev["ms"]; bad {
			t.Errorf("a duration without its unit: %v", ev)
		}
		if ev["status"] == "failed" && ev["level"] != "error" {
			t.Errorf("a failure at level %v: %v", ev["level"], ev)
		}
	}
	last := events[len(events)-1]
	if last["message"] != "run finished" || last["level"] != "error" || last["status"] != "failed" ||
		last["duration_ms"] == nil || !strings.Contains(fmt.Sprint(last["next"]), "runner resume") {
		t.Errorf("last event: %v", last)
	}
	// -q: the bare path on stdout.
	r = runCLI(t, wd, "run", testdata("display.yaml"), "-q")
	if p := strings.TrimSpace(r.stdout); !strings.HasSuffix(p, "blackboard.json") || strings.Contains(p, " ") {
		t.Errorf("-q stdout: %q", r.stdout)
	}
}

// --show-output streams command and test output, each line prefixed by
// its step's label; a go test's -json events show as the text they carry.
func TestShowOutput(t *testing.T) {
	wd := t.TempDir()
	r := runCLI(t, wd, "run", testdata("display.yaml"), "--show-output", "--log-format", "console")
	for _, want := range []string{"hello | hello\n", "broken | compiling\n", "broken | main.go:3: syntax error\n", "flaky | nope\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "never | ") {
		t.Errorf("a step that never ran printed")
	}
	example, _ := filepath.Abs("../../examples/fix-tests/plan.yaml")
	r = runCLI(t, wd, "run", example, "--show-output", "--log-format", "console")
	if r.code != 0 || !strings.Contains(r.stderr, "test | --- FAIL: TestMean") || !strings.Contains(r.stderr, "test #2 | ok  \texample.com/stats") {
		t.Errorf("exit %d; test output not streamed:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, `test | {"`) {
		t.Errorf("go test -json events shown raw")
	}
}

// syncBuffer is a bytes.Buffer the display's ticker and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Ctrl-C on a terminal echoes ^C where the cursor is, under the live
// block; the warning printed then starts on a clean line, with no spinner
// glyph left at its start.
func TestCtrlCLeavesNoSpinnerOnTheWarning(t *testing.T) {
	var term syncBuffer
	p := newProgress(&term, true, true)
	p.StepStarted("build", 1, "")
	term.Write([]byte("^C")) // the terminal's echo
	p.Write([]byte("WRN interrupted: finishing the running steps\n"))
	p.close()
	got := screen(term.String(), 80)
	if !strings.Contains(got, "\nWRN interrupted") && !strings.HasPrefix(got, "WRN interrupted") {
		t.Errorf("the warning does not start its line:\n%q", got)
	}
	if strings.ContainsAny(got, "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏") {
		t.Errorf("a spinner glyph is left on screen:\n%q", got)
	}
}

// A warning inside the live display reads like the display's own lines:
// a mark, no clock, no level code.
func TestWarningsInTheDisplayUseItsStyle(t *testing.T) {
	var out syncBuffer
	g := &globals{mask: mask.New(), logFormat: "console"}
	log, err := g.logger(&out, true)
	if err != nil {
		t.Fatal(err)
	}
	log.Warn().Str("step", "build").Msg("interrupted: finishing the running steps")
	g.view.close()
	got := out.String()
	if !strings.HasPrefix(got, "! interrupted: finishing the running steps") || strings.Contains(got, "WRN") ||
		regexp.MustCompile(`\d\d:\d\d:\d\d`).MatchString(got) {
		t.Errorf("warning in the display: %q", got)
	}
}

// A finished step's line names the host that ran it, on an engine with
// many hosts; a run in one process has none to name.
func TestStepLineNamesItsHost(t *testing.T) {
	tests := []struct {
		host, want string
	}{
		{"", "✓ long  1.2s"},
		{"h2", "✓ long  1.2s  on h2"},
	}
	for _, tt := range tests {
		p := &progressView{}
		got := p.stepLines(board.StepRecord{Label: "long", Visit: 1, Status: "succeeded", DurationMS: 1200, Host: tt.host}, nil, "")
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("host %q: lines %q, want %q", tt.host, got, tt.want)
		}
	}
}

// Off a terminal (a pipe, CI) the console log reads like the live
// display, one line per event: a retry, a tolerated failure, and a failed
// for_each counting its canceled items under one line, with no list of
// nulls as its output. With -q only the failures are shown, as lines too.
func TestPlainDisplay(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"plain.golden", nil},
		{"plain-quiet.golden", []string{"-q"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			wd := t.TempDir()
			r := runCLI(t, wd, append([]string{"run", testdata("plain.yaml"), "--log-format", "console"}, tc.args...)...)
			if r.code != 1 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			bb := blackboardPath(t, r.stdout)
			got := strings.ReplaceAll(r.stderr, filepath.Dir(bb), "RUNDIR")
			got = runIDRE.ReplaceAllString(got, "RUNID")
			got = durationRE.ReplaceAllString(got, "D")
			golden(t, tc.golden, got)
		})
	}
}
