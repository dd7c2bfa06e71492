package release_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/release"
	"github.com/planrunner/runner/internal/testutil/testtool"
)

// `go install …/temporal/cmd/runner-temporal@vX` builds the worker against
// the root module temporal/go.mod requires, fetched from the module proxy.
// That version must be this tree's root module, or the worker is built
// with another (and, as the code moves, does not build at all).
func TestTemporalRequiresThisRoot(t *testing.T) {
	noGitConfig(t)
	testtool.LookPath(t, "git", "apt-get install git")
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	gitDir, err := exec.Command("git", "-C", dir, "rev-parse", "--absolute-git-dir").Output()
	if err != nil {
		testtool.Missing(t, "a git checkout of the repository", "git clone")
	}
	// go test caches a pass by the files the test opens, and git's reads
	// are not the test's: reading what a commit or checkout changes makes
	// a new commit run the check again.
	for _, name := range []string{"HEAD", "index"} {
		os.ReadFile(filepath.Join(strings.TrimSpace(string(gitDir)), name))
	}
	if err := release.Check(dir, "HEAD"); err != nil {
		t.Fatalf("%v\nCommit the root module's changes, then run `go run ./internal/release/pinroot` and commit what it changed.", err)
	}
}

// noGitConfig keeps the user's and the system's git configuration out of
// the git commands the test starts (and x/mod starts): a module proxy
// makes the zip with its own.
func noGitConfig(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
}

// gitRepo makes a repository holding a module example.com/m, committed at
// a known time, and returns its directory.
func gitRepo(t *testing.T) string {
	t.Helper()
	noGitConfig(t)
	testtool.LookPath(t, "git", "apt-get install git")
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":         "module example.com/m\n\ngo 1.26.0\n",
		"m.go":           "package m\n\nconst A = 1\n",
		"go.work":        "go 1.26.0\n\nuse .\n",
		".gitattributes": "go.work export-ignore\n",
		"sub/go.mod":     "module example.com/m/sub\n",
		"sub/s.go":       "package sub\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "m"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE=2026-01-02T03:04:05+02:00", "GIT_AUTHOR_DATE=2026-01-02T03:04:05+02:00", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func TestPseudo(t *testing.T) {
	dir := gitRepo(t)
	hash, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	v, err := release.Pseudo(dir, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if want := "v0.0.0-20260102010405-" + string(hash[:12]); v != want {
		t.Errorf("pseudo-version %s, want %s (the commit's time in UTC)", v, want)
	}
}

// The hashes Sums gives are the ones the go command computes for the zip
// Zip makes, which holds the module's files but go.work and the nested
// module's.
func TestSumsAreTheGoCommands(t *testing.T) {
	dir := gitRepo(t)
	const ver = "v0.0.0-20260102010405-000000000000"
	// Zip and Sums name the module by release.Root: serve it as that.
	proxy := t.TempDir()
	at := filepath.Join(proxy, filepath.FromSlash(release.Root), "@v")
	os.MkdirAll(at, 0o755)
	var zb bytes.Buffer
	gomod, err := release.Zip(&zb, dir, ver, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"list": []byte(ver + "\n"), ver + ".info": []byte(`{"Version":"` + ver + `"}`), ver + ".mod": gomod, ver + ".zip": zb.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	cmd := exec.Command("go", "mod", "download", "-json", release.Root+"@"+ver)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+filepath.ToSlash(proxy), "GOSUMDB=off", "GOFLAGS=-modcacherw",
		"GOMODCACHE="+filepath.Join(tmp, "modcache"), "GOPATH="+filepath.Join(tmp, "gopath"), "GOWORK=off", "GOENV=off", "GOTOOLCHAIN=local")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download: %v\n%s", err, out)
	}
	var got struct{ Sum, GoModSum, Dir string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	sums, err := release.Sums(dir, ver, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{release.Root + " " + ver + " " + got.Sum, release.Root + " " + ver + "/go.mod " + got.GoModSum}
	if strings.Join(sums, "\n") != strings.Join(want, "\n") {
		t.Errorf("sums %q, the go command's %q", sums, want)
	}
	for name, in := range map[string]bool{"m.go": true, "go.mod": true, ".gitattributes": true, "go.work": false, "sub/s.go": false} {
		if _, err := os.Stat(filepath.Join(got.Dir, filepath.FromSlash(name))); (err == nil) != in {
			t.Errorf("%s in the module as downloaded: %v, want %v", name, err == nil, in)
		}
	}
}
