package steps

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/testutil/testtool"
	"github.com/rs/zerolog"
)

// goProject writes a small Go module: calc passes, fail has one failing
// assertion at fail/fail_test.go:6, hang never ends, env checks $WANT.
func goProject(t *testing.T) string {
	t.Helper()
	testtool.LookPath(t, "go", "install Go")
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":            "module example.com/p\n\ngo 1.22\n",
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
		"fail/fail_test.go": "package fail\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tt.Errorf(\"Add(1, 2) = 4, want 3\")\n}\n",
		"hang/hang_test.go": "package hang\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestHang(t *testing.T) { time.Sleep(time.Hour) }\n",
		"env/env_test.go":   "package env\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestEnv(t *testing.T) {\n\tif os.Getenv(\"WANT\") != \"yes\" {\n\t\tt.Fatal(\"WANT not set\")\n\t}\n}\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runIn runs a plan with workdir as the run's working directory.
func runIn(t *testing.T, workdir, src string) (*board.Board, error) {
	t.Helper()
	return runPlan(t, workdir, src, nil, zerolog.Nop())
}

func TestTestStepFailingSuiteFeedsLaterSteps(t *testing.T) {
	dir := goProject(t)
	b, err := runIn(t, dir, `
version: 1
steps:
  - label: test
    type: test
    command: go test ./fail/
    continue_on_error: true
  - label: report
    type: command
    run: |
      echo "${{ steps.test.passed }} ${{ steps.test.outcome }} ${{ steps.test.counts.failed }} ${{ steps.test.failures[0].file }}:${{ steps.test.failures[0].line }}"
      echo ${{ steps.test.summary }}
`)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res, status, errText := saved(t, b, "test")
	if status != "failed" || !strings.Contains(errText, "Add(1, 2) = 4, want 3") {
		t.Errorf("status %q error %q; want failed with the summary", status, errText)
	}
	if res["passed"] != false || res["outcome"] != "failed" || res["framework"] != "go" {
		t.Errorf("result %v", res)
	}
	out, _, _ := saved(t, b, "report")
	got := out["output"].(string)
	for _, want := range []string{"false failed 1 fail/fail_test.go:6", "FAILED: 1 of 1 test failed"} {
		if !strings.Contains(got, want) {
			t.Errorf("a later step saw %q, want it to contain %q", got, want)
		}
	}
}

func TestTestStepPassingSuite(t *testing.T) {
	dir := goProject(t)
	b, err := runIn(t, dir, `
version: 1
steps:
  - label: test
    type: test
    dir: calc
`)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res, status, _ := saved(t, b, "test")
	if status != "succeeded" || res["passed"] != true || res["command"] != "go test ./..." {
		t.Errorf("status %q result %v", status, res)
	}
	if !strings.HasPrefix(res["output"].(string), "PASSED: 1 test passed") {
		t.Errorf("output %q", res["output"])
	}
}

func TestTestStepEnvAndQuoting(t *testing.T) {
	dir := goProject(t)
	// A value from a model tries to break out of the command: it stays one
	// word, a -run pattern that matches no test.
	b, err := runIn(t, dir, `
version: 1
vars:
  name: "x; touch pwned #"
steps:
  - label: env
    type: test
    command: go test ./env/
    env:
      WANT: "yes"
  - label: quoted
    type: test
    command: go test -run ${{ vars.name }} ./calc/
    continue_on_error: true
`)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, status, errText := saved(t, b, "env"); status != "succeeded" {
		t.Errorf("env step %s: %s", status, errText)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("a ${{ }} value reached the shell as syntax")
	}
	if res, _, _ := saved(t, b, "quoted"); res["outcome"] != "no_tests" {
		t.Errorf("outcome %v, want no_tests (the pattern matched nothing)", res["outcome"])
	}
}

func TestTestStepTimeout(t *testing.T) {
	dir := goProject(t)
	// The suite is a test binary built beforehand, run under test2json as
	// `go test -json` runs it: started in milliseconds, so TestHang is
	// under way when the 5s timeout stops it even on a loaded machine.
	// (Through `go test`, the go command itself could take the 5s to
	// start the binary, and the run then named no test.) test2json is
	// built beforehand too: Go ships it as source, and `go tool test2json`
	// compiles it on first use, which with an empty build cache on a
	// loaded machine took the 5s.
	for _, build := range [][]string{
		{"go", "-C", dir, "test", "-c", "-o", "hang.test", "./hang/"},
		{"go", "build", "-o", filepath.Join(dir, "test2json"), "cmd/test2json"},
	} {
		if out, err := exec.Command(build[0], build[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(build, " "), err, out)
		}
	}
	b, err := runIn(t, dir, `
version: 1
steps:
  - label: test
    type: test
    framework: go
    command: ./test2json -p example.com/p/hang ./hang.test -test.v=test2json
    timeout: 5s
    continue_on_error: true
`)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res, status, errText := saved(t, b, "test")
	if status != "failed" || !strings.Contains(errText, "was stopped after 5s") || strings.Contains(errText, "timed out after") {
		t.Errorf("status %q error %q", status, errText)
	}
	if res["outcome"] != "timeout" || res["timed_out"] != true {
		t.Errorf("outcome %v timed_out %v", res["outcome"], res["timed_out"])
	}
	failures, _ := res["failures"].([]any)
	if len(failures) != 1 || failures[0].(map[string]any)["id"] != "example.com/p/hang.TestHang" {
		t.Errorf("failures %v, want TestHang", failures)
	}
}

func TestTestStepLoadErrors(t *testing.T) {
	tests := []struct {
		name, step, want string
	}{
		{"unknown framework", "framework: pytset", `"pytset" is not one of`},
		{"generic without a command", "framework: generic", "framework generic needs a command"},
		{"unknown field", "comand: go test", `unknown field "comand"`},
		{"bad expression", "command: go test ${{ steps.nope.output }}", "nope"},
		{"empty command", "command: '  '", "plan.yaml:5:14: command is empty: give the command to run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := engine.Compile("plan.yaml", []byte("version: 1\nsteps:\n  - label: test\n    type: test\n    "+tt.step+"\n"), Registry())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
