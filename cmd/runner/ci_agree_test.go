package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// One run as CI sees it (`runner run --junit` on GitHub Actions): a real
// go test failure in a parallel group, a tolerated pytest failure and a
// tolerated command. JUnit, the annotations and the summary agree on
// what failed and what was tolerated, on the files (relative to the
// workspace) and on the names (label paths), and the log does not tell a
// test failure a third time.
func TestCIOutputsAgree(t *testing.T) {
	for _, tool := range []string{"go", "pytest"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	work := t.TempDir()
	if err := os.CopyFS(work, os.DirFS(testdata("ci"))); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "run", "plan.yaml", "--junit", "junit.xml")
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "NO_COLOR=1",
		"GOCACHE=" + filepath.Join(work, ".gocache"), "GOPATH=" + filepath.Join(work, ".gopath"),
		"GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "PYTHONDONTWRITEBYTECODE=1",
		"GITHUB_ACTIONS=true", "GITHUB_WORKSPACE=" + work, "GITHUB_STEP_SUMMARY=" + filepath.Join(work, "summary.md")}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != exitFailed {
		t.Fatalf("run: %v, want exit %d\n%s", err, exitFailed, stderr.String())
	}
	b, err := board.Load(blackboardPath(t, stdout.String()))
	if err != nil {
		t.Fatal(err)
	}
	runID := b.Run().ID
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	junitXML, sum := read("junit.xml"), read("summary.md")
	cmds, _ := workflowCommands(stderr.String())
	var anns []string
	for _, c := range cmds {
		if strings.HasPrefix(c, "::error") || strings.HasPrefix(c, "::warning") {
			anns = append(anns, c)
		}
	}
	golden(t, "ci/annotations.golden", normalize(strings.Join(anns, "\n")+"\n", work, runID))
	golden(t, "ci/summary.golden.md", normalize(sum, work, runID))
	golden(t, "ci/junit.golden.xml", junitTimes.ReplaceAllString(normalize(junitXML, work, runID), `$1="$$T"`))

	// Each source's failures as (name, file:line, tolerated).
	type failure struct {
		name, place string
		tolerated   bool
	}
	var fromJUnit, fromAnns, fromSummary []failure
	var doc struct {
		Suites []struct {
			Name string `xml:"name,attr"`
			// A case's file, line and skip type are its suite's
			// properties (the JUnit schema has no attribute for them).
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(junitXML), &doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range doc.Suites {
		props := map[string]string{}
		for _, p := range s.Properties {
			props[p.Name] = p.Value
		}
		for i, c := range s.Cases {
			prop := func(what string) string { return props[fmt.Sprintf("testcase.%d.%s", i+1, what)] }
			place := prop("file") + ":" + prop("line")
			switch {
			case s.Name == "steps":
			case c.Failure != nil:
				fromJUnit = append(fromJUnit, failure{s.Name + ": " + c.Name, place, false})
			case c.Skipped != nil && prop("skipped.type") == "tolerated":
				fromJUnit = append(fromJUnit, failure{s.Name + ": " + c.Name, place, true})
			}
		}
	}
	annRE := regexp.MustCompile(`^::(error|warning) file=([^,]+),line=(\d+),title=(.*?)(%3A|:) (.*) failed( \(tolerated\))?::`)
	for _, a := range anns {
		m := annRE.FindStringSubmatch(strings.ReplaceAll(a, "%3A", ":"))
		if m == nil || !strings.Contains(a, "title=") || strings.HasPrefix(m[4], "step ") {
			continue // a step's failure, at its line in the plan
		}
		tol := m[1] == "warning"
		if tol != (m[7] != "") {
			t.Errorf("annotation level and title disagree on tolerated: %s", a)
		}
		fromAnns = append(fromAnns, failure{m[4] + ": " + m[6], m[2] + ":" + m[3], tol})
	}
	sumRE := regexp.MustCompile("^- (.*?): (.*) failed( \\\\\\(tolerated\\))? `([^`]+)`")
	for _, l := range strings.Split(sum, "\n") {
		m := sumRE.FindStringSubmatch(l)
		if m == nil || strings.HasPrefix(m[1], "step ") {
			continue
		}
		name := strings.NewReplacer(`\_`, "_", "\u2060", "").Replace(m[1] + ": " + m[2])
		fromSummary = append(fromSummary, failure{name, m[4], m[3] != ""})
	}
	want := []failure{
		{"smoke: test_calc.py::test_sub", "py/test_calc.py:2", true},
		{"checks/unit: example.com/gt.TestAdd", "gt/calc_test.go:7", false},
	}
	for src, got := range map[string][]failure{"junit": fromJUnit, "annotations": fromAnns, "summary": fromSummary} {
		if !slices.Equal(got, want) {
			t.Errorf("%s says the tests that failed are\n%v\nwant\n%v", src, got, want)
		}
	}
	// The log tells a failed test's message in neither the step's lines
	// nor its output: the annotation and the summary do.
	log := strings.Join(slices.DeleteFunc(strings.Split(stderr.String(), "\n"), func(l string) bool {
		return strings.HasPrefix(l, "::")
	}), "\n")
	for _, msg := range []string{"want 5, got 4", "assert (5 - 3) == 3"} {
		if strings.Contains(log, msg) {
			t.Errorf("the log repeats %q:\n%s", msg, log)
		}
	}
}

var junitTimes = regexp.MustCompile(`\b(time|timestamp)="[^"]*"`)
