package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// actionsRun runs `runner run` as a GitHub Actions step would: the
// environment Actions sets, the summary file in a temp dir.
func actionsRun(t *testing.T, plan string, env ...string) (work string, res result) {
	t.Helper()
	work = t.TempDir()
	for _, f := range []string{"plan.yaml", "tap.sh"} {
		b, err := os.ReadFile(filepath.Join(testdata("actions"), f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(work, f), b, 0o644)
	}
	if plan != "" {
		os.WriteFile(filepath.Join(work, "plan.yaml"), []byte(plan), 0o644)
	}
	cmd := exec.Command(binary, "run", "plan.yaml", "--report")
	cmd.Dir = work
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "GITHUB_ACTIONS=true",
		"GITHUB_STEP_SUMMARY=" + filepath.Join(work, "summary.md"), "GITHUB_WORKSPACE=" + work}, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res = result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return work, res
}

// workflowCommands reads output as the Actions runner does: a line
// starting with "::" is a command unless commands are stopped
// (::stop-commands::TOKEN until ::TOKEN::). It returns the commands
// that would take effect, and whether the output ended with commands on.
func workflowCommands(out string) (cmds []string, resumed bool) {
	stop := ""
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, "\r")
		if stop != "" {
			if l == "::"+stop+"::" {
				stop = ""
			}
			continue
		}
		if tok, ok := strings.CutPrefix(l, "::stop-commands::"); ok {
			stop = tok
			continue
		}
		if strings.HasPrefix(l, "::") {
			cmds = append(cmds, l)
		}
	}
	return cmds, stop == ""
}

var durations = regexp.MustCompile(`\b\d+(\\?\.\d+)?(ms|µs|s)\b|\b\d+m\d+(\\?\.\d+)?s\b`) // a summary escapes the dot: 1\.5s

// normalize takes out what changes from run to run: the run's id and
// directory, durations.
func normalize(s, work, runID string) string {
	s = strings.ReplaceAll(s, work, "$WORK")
	s = strings.ReplaceAll(s, runID, "$RUN")
	return durations.ReplaceAllString(s, "$$DUR")
}

// A whole run on GitHub Actions: test failures, a refused diff and failed
// steps are annotations with their file and line, each step a log group,
// the run summary is appended as Markdown; and nothing the steps printed
// (lines that are commands, a test's message with one in it, a file name
// with , and :) takes effect as a command.
func TestGitHubActionsRun(t *testing.T) {
	work, res := actionsRun(t, "", "NO_COLOR=1")
	if res.code != exitFailed {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", res.code, exitFailed, res.stderr)
	}
	b, err := board.Load(blackboardPath(t, res.stdout))
	if err != nil {
		t.Fatal(err)
	}
	runID := b.Run().ID
	cmds, resumed := workflowCommands(res.stderr)
	if !resumed {
		t.Errorf("the run ends with workflow commands still stopped: the job's next steps could not use them")
	}
	got := normalize(strings.Join(cmds, "\n")+"\n", work, runID)
	golden(t, "actions/commands.golden", got)
	for _, c := range cmds {
		for _, bad := range []string{"::error file=evil.go", "::warning::", "::error::"} {
			if strings.HasPrefix(c, bad) {
				t.Errorf("a step's text took effect as a command: %s", c)
			}
		}
	}
	if n, m := strings.Count(got, "::group::"), strings.Count(got, "::endgroup::"); n != 4 || m != 4 {
		t.Errorf("%d groups and %d ends of groups, want one each per step (4)", n, m)
	}
	if !strings.Contains(res.stderr, "::error file=evil.go,line=1::injected by a step") {
		t.Errorf("the step's output is not shown as written:\n%s", res.stderr)
	}
	sum, err := os.ReadFile(filepath.Join(work, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "actions/summary.golden.md", normalize(string(sum), work, runID))
}

// Colour follows the conventions everywhere, not only on GitHub Actions:
// FORCE_COLOR and CLICOLOR_FORCE force it where stderr is no terminal,
// FORCE_COLOR=0 turns it off, and NO_COLOR wins over all of them.
func TestColourForcedAndRefused(t *testing.T) {
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	os.WriteFile(plan, []byte("version: 1\nname: c\nsteps:\n  - {label: hello, type: command, run: echo hi}\n"), 0o644)
	green := "\x1b[32m✓"
	for _, tc := range []struct {
		env  []string
		want bool
	}{
		{nil, false},
		{[]string{"FORCE_COLOR=1"}, true},
		{[]string{"FORCE_COLOR="}, true},
		{[]string{"FORCE_COLOR=0"}, false},
		{[]string{"CLICOLOR_FORCE=1"}, true},
		{[]string{"CLICOLOR_FORCE=0"}, false},
		{[]string{"GITHUB_ACTIONS=true"}, true},
		{[]string{"FORCE_COLOR=1", "NO_COLOR=1"}, false},
		{[]string{"CLICOLOR_FORCE=1", "NO_COLOR=1"}, false},
		{[]string{"GITHUB_ACTIONS=true", "NO_COLOR=1"}, false},
	} {
		t.Run(strings.Join(tc.env, ","), func(t *testing.T) {
			cmd := exec.Command(binary, "run", plan, "--log-format", "console")
			cmd.Dir = filepath.Dir(plan)
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, tc.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if got := strings.Contains(string(out), green); got != tc.want {
				t.Errorf("coloured: %v, want %v\n%q", got, tc.want, out)
			}
		})
	}
}

// `runner report --format junit` turns a recorded run's test steps into
// JUnit XML any CI reads: a suite per test step with a case per failed
// test at its file and line, a suite of the plan's steps; it parses back
// whatever the tests printed (control characters, ]]>, < and &). A
// failure the plan tolerates (continue_on_error) is skipped as
// "tolerated": only what failed the run counts as a failure.
func TestReportJUnit(t *testing.T) {
	work, res := actionsRun(t, "", "GITHUB_ACTIONS=") // not on Actions
	if res.code != exitFailed {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	bb := blackboardPath(t, res.stdout)
	r := runCLI(t, work, "report", bb, "--format", "junit", "-o", "-")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// A case's file and line are its suite's properties testcase.N.file
	// and testcase.N.line (the JUnit schema has no attribute for them).
	var doc struct {
		Suites []struct {
			Name       string `xml:"name,attr"`
			Tests      int    `xml:"tests,attr"`
			Failures   int    `xml:"failures,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, r.stdout)
	}
	type row struct {
		suite, name, file string
		line              int
		failed            string
	}
	var got []row
	var tests, failures int
	for _, s := range doc.Suites {
		tests += s.Tests
		failures += s.Failures
		props := map[string]string{}
		for _, p := range s.Properties {
			props[p.Name] = p.Value
		}
		for i, c := range s.Cases {
			file := props[fmt.Sprintf("testcase.%d.file", i+1)]
			line, _ := strconv.Atoi(props[fmt.Sprintf("testcase.%d.line", i+1)])
			msg := ""
			if c.Failure != nil {
				msg = c.Failure.Message
			}
			if c.Skipped != nil {
				msg = "skipped: " + c.Skipped.Message
			}
			got = append(got, row{s.Name, c.Name, file, line, msg})
		}
	}
	want := []row{
		{"tests", "adds, numbers", "src/a,b:c%.js", 12, "skipped: failed (tolerated): want 4, got 5"},
		{"tests", "plain", "src/plain.js", 3, "skipped: failed (tolerated): it broke  <&> ]]>"},
		{"tests", "1 passed tests", "", 0, ""},
		{"steps", "hello", "", 0, ""},
		{"steps", "tests", "", 0, "skipped: failed (tolerated): FAILED: 2 of 3 tests failed (1 passed)."},
		{"steps", "apply", "", 0, "skipped: failed (tolerated): .git/config: the diff may not change files under .git/ (at any depth)"},
		{"steps", "build", "", 0, "exit status 3"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("cases:\ngot  %v\nwant %v", got, want)
	}
	if tests != 3+4 || failures != 1 {
		t.Errorf("totals: %d tests, %d failures; want 7 and 1 (build)", tests, failures)
	}
	// The default file is junit.xml beside the blackboard.
	r = runCLI(t, work, "report", bb, "--format", "junit")
	if want := filepath.Join(filepath.Dir(bb), "junit.xml"); r.code != 0 || strings.TrimSpace(r.stdout) != want {
		t.Fatalf("exit %d, printed %q, want %s", r.code, r.stdout, want)
	}
	if xmllint, err := exec.LookPath("xmllint"); err == nil {
		if out, err := exec.Command(xmllint, "--noout", filepath.Join(filepath.Dir(bb), "junit.xml")).CombinedOutput(); err != nil {
			t.Errorf("xmllint: %v\n%s", err, out)
		}
	}
	if r := runCLI(t, work, "report", bb, "--format", "xml"); r.code != exitUsage || !strings.Contains(r.stderr, `--format "xml": want html or junit`) {
		t.Errorf("--format xml: exit %d, %s", r.code, r.stderr)
	}
}
