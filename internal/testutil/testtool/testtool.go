// Package testtool is how tests find the external tools they drive
// (pytest, jest, Chromium, the Temporal CLI, ...) and what they do when one
// is missing. On a developer's machine a missing tool skips the test,
// saying what would enable it. Under CI (CI=true) it fails the test
// instead: .ci/install provides every such tool there, so a missing one
// means CI is broken, and a skip would let the tests that need it vanish
// while the package still prints ok.
//
// Tests find tools only on PATH or through an environment variable that
// .ci/run exports; never in the user's home or cache directories.
package testtool

import (
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true, as GitHub Actions,
// GitLab CI and most others set it, and .ci/run does).
func InCI() bool {
	return os.Getenv("CI") == "true"
}

// Missing stops the test because tool is missing: it fails under CI and
// skips elsewhere. how says what provides the tool, e.g.
// ".ci/install installs it with apt-get (python3-pytest)".
func Missing(t testing.TB, tool, how string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s is missing, and CI=true: CI must have it (%s)", tool, how)
	}
	t.Skipf("%s is missing (%s)", tool, how)
}

// Need stops the test (see Missing) unless found.
func Need(t testing.TB, tool string, found bool, how string) {
	t.Helper()
	if !found {
		Missing(t, tool, how)
	}
}

// LookPath returns the path of the program name found on PATH, or stops
// the test (see Missing).
func LookPath(t testing.TB, name, how string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name, how)
	}
	return p
}

// FromEnv returns the path the environment variable env names, or stops
// the test (see Missing) if it is unset. A path that does not exist fails
// the test everywhere: whoever set the variable meant the tool to be used.
// tool names what the path is for, in the message.
func FromEnv(t testing.TB, env, tool, how string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		Missing(t, tool, "$"+env+" is not set; "+how)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: $%s names nothing usable: %v (%s)", tool, env, err, how)
	}
	return p
}
