package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/testutil/steptypetest"
	"github.com/planrunner/runner/internal/view/report"
	"github.com/planrunner/runner/internal/view/tracing"
)

const touchPlan = `version: 1
name: touchy
steps:
  - {label: poke, type: touch, path: touched.txt, agent: toucher, continue_on_error: true}
`

// inProcess runs the CLI in this process, where a type plugged into
// package steps is known (the built binary of the other tests has only
// the built-in ones).
func inProcess(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// A step type defined outside package steps, which declares nothing but
// the kinds of its result, is treated as what it is by everything that
// does not run it: its file is written by the run alone (not again by an
// offline replay, nor by --reuse --offline), and the report, eval, the
// trace, the Actions annotations and JUnit show its tests, its edit and
// its agent as they show a test, an apply_diff and an llm step.
func TestPluggedStepTypeIsAskedNotNamed(t *testing.T) {
	t.Cleanup(steps.Plug(steptypetest.Touch{}))
	wd := t.TempDir()
	t.Chdir(wd)
	t.Setenv("HOME", wd)
	os.WriteFile("plan.yaml", []byte(touchPlan), 0o644)
	touched := func() string {
		b, _ := os.ReadFile(filepath.Join(wd, "touched.txt"))
		return string(b)
	}

	r := inProcess(t, "run", "plan.yaml")
	if r.code != 0 || touched() != steptypetest.Line {
		t.Fatalf("run: exit %d, file %q: %s", r.code, touched(), r.stderr)
	}
	bb := blackboardPath(t, r.stdout)

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"replay --offline", []string{"replay", bb, "--offline"}},
		{"run --reuse --offline", []string{"run", "plan.yaml", "--reuse", bb, "--offline"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := inProcess(t, tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
			}
			if touched() != steptypetest.Line {
				t.Errorf("the step ran again: the file is %q", touched())
			}
		})
	}

	b, err := board.Load(bb)
	if err != nil {
		t.Fatal(err)
	}
	var html bytes.Buffer
	if err := report.WriteWith(&html, b, report.Options{BoardPath: bb}); err != nil {
		t.Fatal(err)
	}
	junitOut := inProcess(t, "report", bb, "--format", "junit", "-o", "-")
	evalOut := inProcess(t, "eval", bb, "--baseline", bb)
	tracePath := filepath.Join(wd, "trace.json")
	if _, err := tracing.Export(context.Background(), b, tracing.Config{File: tracePath, Options: tracing.Options{Types: steps.Registry()}}); err != nil {
		t.Fatal(err)
	}
	trace, _ := os.ReadFile(tracePath)
	anns, _ := json.Marshal(annotations(b, wd))
	var doc struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(junitOut.stdout), &doc); err != nil {
		t.Fatalf("junit: %v: %s", err, junitOut.stderr)
	}
	var suites []string
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			suites = append(suites, s.Name+":"+c.Name)
		}
	}
	for _, tc := range []struct {
		view, got string
		want      []string
	}{
		{"report", html.String(), []string{"tests: failed", "TestTouched", "<code>touched.txt</code> modify, +1 −0", `data-type="touch"`}},
		{"junit", strings.Join(suites, "\n"), []string{"poke:TestTouched"}},
		{"eval", evalOut.stdout, []string{"1/2"}},
		{"trace", string(trace), []string{"invoke_agent toucher"}},
		{"actions", string(anns), []string{`poke: TestTouched failed`, `"File":"touched.txt"`}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.got, w) {
				t.Errorf("%s does not show %q:\n%s", tc.view, w, tc.got)
			}
		}
	}
}
