package runs_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/runs"

	"github.com/planrunner/runner/internal/sys/boot"
)

// fakeTemporal is a runner-temporal that runs script, recording its
// arguments.
func fakeTemporal(t *testing.T, script string) (bin, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	bin, argsFile = filepath.Join(dir, "runner-temporal"), filepath.Join(dir, "args")
	src := "#!/bin/sh\necho \"$@\" > " + argsFile + "\n" + script + "\n"
	if err := os.WriteFile(bin, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, argsFile
}

// RunOnTemporal hands the plan to runner-temporal, passes its events on
// as they come (a line that is not one is skipped) and returns the end.
func TestRunOnTemporalReadsEvents(t *testing.T) {
	bin, argsFile := fakeTemporal(t, `cat <<'EOF'
{"begin": {"run_id": "R1", "workflow": "runner-R1", "board": "/b.json"}}
{"started": {"label": "a", "visit": 1}}
not an event
{"finished": {"label": "a", "visit": 1, "status": "succeeded"}}
{"waiting": {"label": "ok", "visit": 1, "prompt": "go?"}, "board": "/b.json"}
{"end": {"run_id": "R1", "status": "waiting", "board": "/b.json", "parts": 1, "workflow": "runner-R1"}}
EOF
echo "a warning" >&2`)
	var seen []string
	var stderr strings.Builder
	end, err := runs.RunOnTemporal(bin, "plan.yaml", []string{"--temporal", "h:1"}, &stderr, func(ev runs.Event) {
		switch {
		case ev.Begin != nil:
			seen = append(seen, "begin "+ev.Begin.Workflow)
		case ev.Started != nil:
			seen = append(seen, "started "+ev.Started.Label)
		case ev.Finished != nil:
			seen = append(seen, "finished "+ev.Finished.Label+" "+ev.Finished.Status)
		case ev.Waiting != nil:
			seen = append(seen, "waiting "+ev.Waiting.Label+" on "+ev.Board)
		case ev.End != nil:
			seen = append(seen, "end "+ev.End.Status)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "begin runner-R1, started a, finished a succeeded, waiting ok on /b.json, end waiting"
	if got := strings.Join(seen, ", "); got != want {
		t.Errorf("events: %s\nwant:   %s", got, want)
	}
	if end.RunID != "R1" || end.Status != "waiting" || end.Board != "/b.json" {
		t.Errorf("end: %+v", end)
	}
	if stderr.String() != "a warning\n" {
		t.Errorf("stderr %q", stderr.String())
	}
	if args, _ := os.ReadFile(argsFile); string(args) != "run plan.yaml --events --temporal h:1\n" {
		t.Errorf("runner-temporal got %q", args)
	}
}

// A runner-temporal that ends without an end event gives its exit code;
// one that cannot start is a usage error.
func TestRunOnTemporalWithoutAnEnd(t *testing.T) {
	bin, _ := fakeTemporal(t, `echo '{"begin": {"run_id": "R1"}}'; exit 7`)
	_, err := runs.RunOnTemporal(bin, "plan.yaml", nil, nil, func(runs.Event) {})
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("err %v; want exit status 7", err)
	}
	_, err = runs.RunOnTemporal(filepath.Join(t.TempDir(), "none"), "plan.yaml", nil, nil, func(runs.Event) {})
	if !runs.IsUsage(err) || !strings.Contains(err.Error(), "starting") {
		t.Errorf("missing binary: %v; want a usage error", err)
	}
}

// ExecuteOnTemporal gives runner-temporal the run's options as its flags;
// --offline, which runs nothing, is refused.
func TestExecuteOnTemporalPassesTheOptions(t *testing.T) {
	dir := t.TempDir()
	plan := writePlan(t, dir, twoSteps)
	bin, argsFile := fakeTemporal(t, `echo '{"end": {"run_id": "R", "status": "succeeded", "board": "b"}}'`)
	r, err := runs.New(runs.Options{Plan: plan, Workdir: dir, Vars: map[string]string{"n": "0"}, Board: "out.json", Reuse: []string{"old.json"}})
	if err != nil {
		t.Fatal(err)
	}
	end, err := r.ExecuteOnTemporal(runs.Temporal{Binary: bin, Conn: boot.Conn{HostPort: "h:1", TaskQueue: "q"}, HeartbeatTimeout: 5e9}, nil, func(runs.Event) {})
	if err != nil || end.Status != "succeeded" {
		t.Fatalf("%v %+v", err, end)
	}
	want := "run " + plan + " --events --temporal h:1 --task-queue q --heartbeat-timeout 5s --workdir " + dir +
		" --reuse old.json --var n=0 --out out.json\n"
	if args, _ := os.ReadFile(argsFile); string(args) != want {
		t.Errorf("runner-temporal got\n%s\nwant\n%s", args, want)
	}
	r, err = runs.New(runs.Options{Plan: plan, Reuse: []string{"old.json"}, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ExecuteOnTemporal(runs.Temporal{Binary: bin}, nil, func(runs.Event) {}); !runs.IsUsage(err) || !strings.Contains(err.Error(), "--offline") {
		t.Errorf("offline: %v", err)
	}
}
