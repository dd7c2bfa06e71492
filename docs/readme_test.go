package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's runner commands, run in a fresh clone of the repository
// as a newcomer types them, leave its tree as it was: what they write
// goes where git ignores it, not beside the README as stray files.
func TestReadmeCommandsLeaveACleanTree(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git is needed on CI: ", err)
		}
		t.Skip("git is not installed")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "runner")
	home := t.TempDir()
	gitCmd := func(dir string, args ...string) string {
		t.Helper()
		c := exec.Command(git, args...)
		c.Dir = dir
		c.Env = append(cleanEnv(home), "GIT_CONFIG_NOSYSTEM=1")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gitCmd(root, "clone", "-q", "--no-hardlinks", root, clone)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, _ := split(string(readme))
	ran := 0
	for _, b := range blocks {
		if !shellBlock(b.lang) {
			continue
		}
		inClone := func(dir string) bool {
			fi, err := os.Stat(filepath.Join(clone, dir))
			return err == nil && fi.IsDir()
		}
		cmds, comments := commandsOf(b.body, inClone)
		for i, c := range cmds {
			args, ok := runnerArgs(c.words)
			if !ok || !runnable(t, c, args, comments[i], clone) {
				continue
			}
			r := run(t, filepath.Join(clone, c.dir), home, args...)
			if r.code != 0 {
				t.Errorf("README: runner %s: exit %d\n%s", strings.Join(args, " "), r.code, tail(r.out, 10))
			}
			ran++
		}
	}
	if ran < 5 {
		t.Fatalf("ran %d of the README's commands; the block reader is broken", ran)
	}
	if st := gitCmd(clone, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("the README's commands left files in a clone (git status --porcelain):\n%s", st)
	}
}
