package testtool

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The helper's verdict is checked in a child test process, since a fatal
// or a skip ends the test that calls it: a missing tool fails under CI=true
// and skips elsewhere, and the message names the tool and what provides it.
func TestMissingToolFailsOnlyUnderCI(t *testing.T) {
	if os.Getenv("TESTTOOL_CHILD") == "1" {
		LookPath(t, "no-such-tool-for-runner-tests", ".ci/install installs it")
		t.Log("found")
		return
	}
	for _, tc := range []struct {
		ci       string
		wantFail bool
		want     string
	}{
		{"true", true, "--- FAIL"},
		{"", false, "--- SKIP"},
		{"false", false, "--- SKIP"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingToolFailsOnlyUnderCI$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTTOOL_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail {
			t.Errorf("CI=%q: failed=%v, want %v\n%s", tc.ci, failed, tc.wantFail, out)
		}
		for _, want := range []string{tc.want, "no-such-tool-for-runner-tests is missing", ".ci/install installs it"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("CI=%q: output lacks %q:\n%s", tc.ci, want, out)
			}
		}
	}
}

// FromEnv takes the path an environment variable names; an unset variable
// is a missing tool (a skip outside CI), a path that does not exist a
// failure even outside CI (the variable was set to be used).
func TestFromEnv(t *testing.T) {
	if os.Getenv("TESTTOOL_CHILD") == "1" {
		t.Log("got " + FromEnv(t, "TESTTOOL_PATH", "the thing", "set it"))
		return
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		path, want string
		wantFail   bool
	}{
		{dir, "got " + dir, false},
		{"", "$TESTTOOL_PATH is not set; set it", false},
		{dir + "/nothing", "the thing: $TESTTOOL_PATH names nothing usable", true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFromEnv$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTTOOL_CHILD=1", "CI=", "TESTTOOL_PATH="+tc.path)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail {
			t.Errorf("TESTTOOL_PATH=%q: failed=%v, want %v\n%s", tc.path, failed, tc.wantFail, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("TESTTOOL_PATH=%q: output lacks %q:\n%s", tc.path, tc.want, out)
		}
	}
}
