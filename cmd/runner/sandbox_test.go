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
  - label: after
    type: command
    run: echo done
`

// TestSandboxKeepsRunnersFiles: a sandboxed step can write the run's
// directory (a scratch copy lives there) but not runner's board, journal
// or another run's board, and cannot reach the live board's socket. The
// control (no sandbox) shows the socket write works otherwise.
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
			env := append(os.Environ(), "RUNNER="+binary, "OTHER="+other, "PYTHON="+python)
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
			if _, err := os.Stat(filepath.Join(filepath.Dir(bb), "scratch")); err != nil {
				t.Errorf("the run's directory took no write: %v", err)
			}
			if len(b.Steps()) != 2 || b.Run().Status != "succeeded" {
				t.Errorf("run %s with %d steps", b.Run().Status, len(b.Steps()))
			}
		})
	}
}
