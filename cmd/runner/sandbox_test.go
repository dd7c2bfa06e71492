package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/testutil/testtool"
)

// tamperPlan's step goes for runner's own files from inside the run: the
// live board's socket (a write through runner board), the journal and the
// board file, and another run's board under the workdir's .runner.
const tamperPlan = `version: 1
steps:
  - label: tamper
    type: command
    SANDBOX
    env:
      BB: ${{ run.workdir + "/.runner/runs/" + run.id + "/blackboard.json" }}
    run: |
      "$RUNNER" board "$BB" put hacked '"yes"' 2>&1 || true
      printf '{"n":99}\n' >> "$BB.journal" 2>&1 || true
      echo '{}' > "$BB" 2>&1 || true
      echo '{}' > "$OTHER" 2>&1 || true
      "$PYTHON" -c 'import json,socket,sys; p=json.load(open(sys.argv[1]+".lock"))["socket"]; s=socket.socket(socket.AF_UNIX); s.connect(p); print("connected")' "$BB" 2>&1 | tail -1
      echo scratch > "$(dirname "$BB")/scratch" && echo wrote scratch
      rm -f "$BB.running" 2>/dev/null; ln -s "$OUTSIDE" "$BB.running" 2>&1 || true
  - label: after
    type: command
    run: echo done
`

// TestSandboxKeepsRunnersFiles: a sandboxed step cannot write the run's
// directory (so it cannot plant a link where runner makes its running
// file), runner's board, journal or another run's board, and
// cannot reach the live board's socket. The control (no sandbox) shows
// the writes work otherwise, and that runner replaces the links it finds
// where its files go without writing the file they point at.
func TestSandboxKeepsRunnersFiles(t *testing.T) {
	for _, tc := range []struct {
		name, sandbox string
		hacked        bool
	}{{"sandboxed", "sandbox: strict", false}, {"control: unconfined", "", true}} {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			other := filepath.Join(wd, ".runner", "runs", "OTHER", "blackboard.json")
			os.MkdirAll(filepath.Dir(other), 0o755)
			os.WriteFile(other, []byte("other run"), 0o644)
			plan := filepath.Join(wd, "plan.yaml")
			os.WriteFile(plan, []byte(strings.Replace(tamperPlan, "SANDBOX", tc.sandbox, 1)), 0o644)
			python := testtool.LookPath(t, "python3", "the system's python3")
			outside := filepath.Join(t.TempDir(), "outside")
			os.WriteFile(outside, []byte("outside\n"), 0o644)
			env := append(os.Environ(), "RUNNER="+binary, "OTHER="+other, "PYTHON="+python, "OUTSIDE="+outside)
			r := runEnv(t, wd, env, "run", plan)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			bb := blackboardPath(t, r.stdout)
			b, err := board.Load(bb)
			if err != nil {
				t.Fatalf("the board no longer loads: %v", err)
			}
			_, hacked := b.Get("hacked")
			if hacked != tc.hacked {
				t.Errorf("key written through the live board's socket: %v, want %v", hacked, tc.hacked)
			}
			var out map[string]any
			for _, s := range b.Steps() {
				if s.Label == "tamper" {
					json.Unmarshal(s.Result, &out)
				}
			}
			if connected := strings.Contains(fmt.Sprint(out["stdout"]), "connected"); connected != tc.hacked {
				t.Errorf("connected to the live board's socket: %v, want %v (stdout %q)", connected, tc.hacked, out["stdout"])
			}
			if strings.Contains(fmt.Sprint(out["stdout"]), "warning") {
				t.Errorf("runner inside the sandbox warned: %q", out["stdout"])
			}
			if data, _ := os.ReadFile(other); tc.sandbox != "" && string(data) != "other run" {
				t.Errorf("another run's board was changed: %q", data)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(bb), "scratch")); (err == nil) != tc.hacked {
				t.Errorf("the run's directory took a write: %v, want %v", err == nil, tc.hacked)
			}
			if data, _ := os.ReadFile(outside); string(data) != "outside\n" {
				t.Errorf("a file outside was written through a link planted in the run's directory: %q", data)
			}
			if len(b.Steps()) != 2 || b.Run().Status != "succeeded" {
				t.Errorf("run %s with %d steps", b.Run().Status, len(b.Steps()))
			}
		})
	}
}

// TestSandboxRunDirOfItsOwn: where --out puts blackboard.json decides
// whether a sandboxed step could reach runner's files. A directory below
// the workdir is mounted read-only for the step; the workdir itself
// cannot be, so the step is refused with what to do.
func TestSandboxRunDirOfItsOwn(t *testing.T) {
	const plan = `version: 1
steps:
  - label: plant
    type: command
    sandbox: strict
    run: |
      d="${RUNDIR:-.runner/runs/${{ run.id }}}"
      ln -s "$OUTSIDE" "$d/blackboard.json.journal.x" 2>/dev/null && echo planted || echo refused
      echo ok > here.txt
`
	for _, tc := range []struct {
		name, out string // --out, relative to the workdir ("": the default)
		wantErr   string
	}{
		{name: "default run directory", out: ""},
		{name: "a directory in the workdir", out: "out/bb.json"},
		{name: "the workdir itself", out: "bb.json", wantErr: "give --out a directory of its own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			planPath := filepath.Join(wd, "plan.yaml")
			os.WriteFile(planPath, []byte(plan), 0o644)
			outside := filepath.Join(t.TempDir(), "outside")
			args := []string{"run", planPath}
			env := append(os.Environ(), "OUTSIDE="+outside)
			if tc.out != "" {
				bb := filepath.Join(wd, tc.out)
				os.MkdirAll(filepath.Dir(bb), 0o700)
				args = append(args, "--out", bb)
				env = append(env, "RUNDIR="+filepath.Dir(bb))
			}
			r := runEnv(t, wd, env, args...)
			bb := blackboardPath(t, r.stdout)
			b, err := board.Load(bb)
			if err != nil {
				t.Fatalf("exit %d, no board: %v\n%s", r.code, err, r.stderr)
			}
			var res map[string]any
			var errText string
			for _, s := range b.Steps() {
				if s.Label == "plant" {
					json.Unmarshal(s.Result, &res)
					errText = s.Error
				}
			}
			if tc.wantErr != "" {
				if r.code == 0 || !strings.Contains(errText, tc.wantErr) || !strings.Contains(errText, filepath.Dir(bb)) {
					t.Errorf("exit %d, step error %q: want it to name %s and say %q", r.code, errText, filepath.Dir(bb), tc.wantErr)
				}
				return
			}
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if res["stdout"] != "refused\n" {
				t.Errorf("a link was planted in the run's directory: stdout %q", res["stdout"])
			}
			if _, err := os.Stat(filepath.Join(wd, "here.txt")); err != nil {
				t.Errorf("the workdir took no write: %v", err)
			}
		})
	}
}
