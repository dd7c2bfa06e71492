package steps

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

func TestCommandStep(t *testing.T) {
	tests := []struct {
		name, step string
		output     string
		errText    string
		check      func(t *testing.T, res map[string]any)
	}{
		{name: "output is trimmed stdout", step: `{label: s, type: command, run: "printf '  hi\n\n'"}`, output: "hi"},
		{name: "env and dir", step: `{label: s, type: command, run: 'echo $GREETING $(basename $(pwd))', env: {GREETING: "${{ 1 + 1 }}"}, dir: sub}`, output: "2 sub"},
		{name: "exit status with the last stderr line", step: `{label: s, type: command, run: "echo one >&2; echo two >&2; exit 4"}`,
			errText: "exit status 4: two", check: func(t *testing.T, res map[string]any) {
				if res["exit_code"] != 4.0 || !strings.Contains(res["stderr"].(string), "one\ntwo") {
					t.Errorf("result %v", res)
				}
			}},
		{name: "output cap keeps head and tail", step: `{label: s, type: command, run: "seq 1 100000", max_output: 1000}`,
			check: func(t *testing.T, res map[string]any) {
				out := res["stdout"].(string)
				if !strings.HasPrefix(out, "1\n2\n") || !strings.HasSuffix(out, "100000\n") || res["stdout_dropped"].(float64) < 500000 {
					t.Errorf("capped stdout: %d bytes, dropped %v", len(out), res["stdout_dropped"])
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := llmRunPlanIn(t, "version: 1\nsteps:\n  - "+tt.step+"\n", func(dir string) { mkdir(t, dir+"/sub") })
			if tt.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want %q", err, tt.errText)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			res := llmSaved(t, b, "s")
			if tt.output != "" && res["output"] != tt.output {
				t.Errorf("output %q, want %q", res["output"], tt.output)
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

// A process a step leaves in the background ends with the step, unless
// keep_background keeps it for later steps.
func TestCommandBackground(t *testing.T) {
	for _, keep := range []bool{false, true} {
		b, err := llmRunPlan(t, `version: 1
steps:
  - {label: s, type: command, run: "sleep 30 >/dev/null 2>&1 & echo $!", keep_background: `+strconv.FormatBool(keep)+`}
`, nil)
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(llmSaved(t, b, "s")["output"].(string))
		alive := pidRunning(pid)
		if alive != keep {
			t.Errorf("keep_background %v: background process alive = %v", keep, alive)
		}
		if alive {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// pidRunning reports whether pid is a live process; a zombie is dead
// (where PID 1 does not reap orphans, kill(pid, 0) still finds one).
func pidRunning(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// llmRunPlanIn runs src in a fresh workdir that prepare fills first.
func llmRunPlanIn(t *testing.T, src string, prepare func(dir string)) (*board.Board, error) {
	t.Helper()
	dir := t.TempDir()
	prepare(dir)
	return runPlan(t, dir, src, nil, zerolog.Nop())
}

// A command that is blank would run nothing and succeed: refused at load.
func TestCommandEmptyRunRefused(t *testing.T) {
	for _, run := range []string{`""`, `"  "`, "|\n      \n"} {
		_, err := engine.Compile("plan.yaml", []byte("version: 1\nsteps:\n  - label: a\n    type: command\n    run: "+run+"\n"), Registry())
		if err == nil || !strings.Contains(err.Error(), "plan.yaml:5:10: run is empty: give the command to run") {
			t.Errorf("run: %s: error %v", run, err)
		}
	}
}
