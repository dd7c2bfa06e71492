package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A test file whose name holds ':', spaces and parentheses keeps its file
// and line end to end: a real pytest run through `runner run --junit` on
// GitHub Actions gives annotations and JUnit cases at the file's place.
func TestOddFileNamesInAnnotationsAndJUnit(t *testing.T) {
	if _, err := exec.LookPath("pytest"); err != nil {
		t.Fatalf("pytest not found (apt-get install python3-pytest, which .ci/install does): %v", err)
	}
	work := t.TempDir()
	files := map[string]string{
		"plan.yaml": "version: 1\nname: odd\nsteps:\n  - label: tests\n    type: test\n    framework: pytest\n" +
			"    command: pytest -q -p no:cacheprovider\n    dir: odd\n",
		"odd/a:12:b_test.py":      "def test_colon():\n    assert 1 == 2\n",
		"odd/x y/a(b), c_test.py": "def test_space():\n    assert 1 == 3\n",
	}
	for name, content := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(binary, "run", "plan.yaml", "--junit", "junit.xml")
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "NO_COLOR=1", "PYTHONDONTWRITEBYTECODE=1",
		"GITHUB_ACTIONS=true", "GITHUB_WORKSPACE=" + work, "GITHUB_STEP_SUMMARY=" + filepath.Join(work, "summary.md")}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != exitFailed {
		t.Fatalf("run: %v, want exit %d\n%s", err, exitFailed, stderr.String())
	}
	want := []string{"odd/a:12:b_test.py:2", "odd/x y/a(b), c_test.py:2"}

	// The annotations' properties are escaped (':' as %3A, ',' as %2C).
	unescape := strings.NewReplacer("%3A", ":", "%2C", ",", "%25", "%")
	var fromAnns []string
	cmds, _ := workflowCommands(stderr.String())
	for _, c := range cmds {
		props, ok := strings.CutPrefix(c, "::error ")
		if !ok || !strings.Contains(props, "title=tests") {
			continue
		}
		props, _, _ = strings.Cut(props, "::")
		var file, line string
		for _, kv := range strings.Split(props, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "file":
				file = unescape.Replace(v)
			case "line":
				line = v
			}
		}
		fromAnns = append(fromAnns, file+":"+line)
	}
	slices.Sort(fromAnns)
	if !slices.Equal(fromAnns, want) {
		t.Errorf("annotations at %q, want %q\n%s", fromAnns, want, stderr.String())
	}

	b, err := os.ReadFile(filepath.Join(work, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Name       string `xml:"name,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var fromJUnit []string
	for _, s := range doc.Suites {
		props := map[string]string{}
		for _, p := range s.Properties {
			props[p.Name] = p.Value
		}
		for i, c := range s.Cases {
			if s.Name == "tests" && c.Failure != nil {
				fromJUnit = append(fromJUnit, props[fmt.Sprintf("testcase.%d.file", i+1)]+":"+props[fmt.Sprintf("testcase.%d.line", i+1)])
			}
		}
	}
	slices.Sort(fromJUnit)
	if !slices.Equal(fromJUnit, want) {
		t.Errorf("JUnit cases at %q, want %q\n%s", fromJUnit, want, b)
	}
}
