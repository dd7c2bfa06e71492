package main

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bigApply writes a tree of n files and a diff that changes each and
// creates n/10 files in new directories: enough work that a signal or a
// kill lands in the middle of an apply.
func bigApply(t *testing.T, n int) (tree map[string]string, diff string) {
	t.Helper()
	tree = map[string]string{}
	var d strings.Builder
	for i := range n {
		p := fmt.Sprintf("pkg%02d/file%04d.txt", i%20, i)
		var b strings.Builder
		for l := range 100 {
			fmt.Fprintf(&b, "file %d line %d: some text to make the file larger than a line\n", i, l)
		}
		tree[p] = b.String()
		fmt.Fprintf(&d, "--- a/%s\n+++ b/%s\n@@ -50,3 +50,3 @@\n file %d line 49: some text to make the file larger than a line\n-file %d line 50: some text to make the file larger than a line\n+file %d line 50: changed\n file %d line 51: some text to make the file larger than a line\n", p, p, i, i, i, i)
		if i%10 == 0 {
			q := fmt.Sprintf("new%02d/deeper/made%04d.txt", i%7, i)
			fmt.Fprintf(&d, "--- /dev/null\n+++ b/%s\n@@ -0,0 +1,2 @@\n+new file %d\n+second line\n", q, i)
		}
	}
	return tree, d.String()
}

// treeDir is a directory for a test tree, on tmpfs when there is one:
// an apply's cost is mostly fsync, which proves nothing here.
func treeDir(t *testing.T) string {
	t.Helper()
	if d, err := os.MkdirTemp("/dev/shm", "runner-apply-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return t.TempDir()
}

func writeFiles(t *testing.T, dir string, tree map[string]string) {
	t.Helper()
	for p, s := range tree {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// listTree is every path under dir with what it is (a directory, or a
// file's mode and content), skipping .runner when skipRunner is set.
func listTree(t *testing.T, dir string, skipRunner bool) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if skipRunner && rel == ".runner" {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			m[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		m[rel] = fi.Mode().String() + " " + string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestApplySIGTERMLeavesTreeUnchanged: SIGTERM to runner apply in the
// middle of a 1,000-file diff stops it (exit 130) and leaves the directory
// exactly as it was, .runner included: no file changed, no directory
// made, no temporary file, no backup.
func TestApplySIGTERMLeavesTreeUnchanged(t *testing.T) {
	tree, diff := bigApply(t, 1000)
	pf := filepath.Join(t.TempDir(), "big.diff")
	if err := os.WriteFile(pf, []byte(diff), 0o644); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		dir := treeDir(t)
		writeFiles(t, dir, tree)
		before := listTree(t, dir, false)
		cmd := exec.Command(binary, "apply", "--dir", dir, pf)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// The staging directory appears once planning has staged its
		// first file: the apply is under way.
		var err error
	wait:
		for {
			select {
			case err = <-done:
				break wait
			default:
			}
			if _, serr := os.Stat(filepath.Join(dir, ".runner", "staging")); serr == nil {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				err = <-done
				break
			}
			time.Sleep(time.Millisecond)
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code == 0 && attempt < 5 {
			continue // it finished before the signal: try again
		}
		if code != exitInterrupted {
			t.Fatalf("exit %d, want %d (interrupted); stderr:\n%s", code, exitInterrupted, stderr.String())
		}
		if !strings.Contains(stderr.String(), "nothing was changed") {
			t.Errorf("stderr does not say nothing was changed:\n%s", stderr.String())
		}
		after := listTree(t, dir, false)
		for p, v := range after {
			if before[p] != v {
				t.Errorf("%s changed or appeared after SIGTERM", p)
			}
		}
		for p := range before {
			if _, ok := after[p]; !ok {
				t.Errorf("%s is gone after SIGTERM", p)
			}
		}
		return
	}
}

// TestApplyDeepPathRefused: a diff whose path is 3,000 directories deep
// once kept runner apply busy for over 10 minutes, deaf to SIGTERM, and
// left thousands of empty directories. It is refused at once (on the old
// code this test runs until the test binary's timeout).
func TestApplyDeepPathRefused(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"x.txt": "x\n"})
	before := listTree(t, dir, false)
	p := strings.Repeat("a/", 3000) + "f.txt"
	pf := filepath.Join(t.TempDir(), "deep.diff")
	if err := os.WriteFile(pf, []byte("--- /dev/null\n+++ b/"+p+"\n@@ -0,0 +1 @@\n+x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, dir, "apply", "--dir", dir, pf)
	if r.code != exitFailed || !strings.Contains(r.stderr, "over the limit of 4096") {
		t.Errorf("exit %d, want %d and a refusal naming the limit; stderr:\n%s", r.code, exitFailed, r.stderr)
	}
	if after := listTree(t, dir, false); len(after) != len(before) {
		t.Errorf("the tree has %d entries after, %d before", len(after), len(before))
	}
}

// TestApplyKill9LeavesNoTempFiles: runner apply killed with SIGKILL at
// random points leaves no temporary file among the tree's files (they
// are staged under .runner/staging), every file is either as it was or as
// the diff makes it, and the next apply removes what the killed one left
// under .runner/staging.
func TestApplyKill9LeavesNoTempFiles(t *testing.T) {
	tree, diff := bigApply(t, 300)
	pf := filepath.Join(t.TempDir(), "big.diff")
	if err := os.WriteFile(pf, []byte(diff), 0o644); err != nil {
		t.Fatal(err)
	}
	// How long a whole apply takes here, to spread the kills over it.
	dir := treeDir(t)
	writeFiles(t, dir, tree)
	start := time.Now()
	if out, err := exec.Command(binary, "apply", "--dir", dir, pf).CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	whole := time.Since(start)
	applied := listTree(t, dir, true)

	rng := rand.New(rand.NewPCG(21, 4))
	const kills = 10
	for i := range kills {
		dir := treeDir(t)
		writeFiles(t, dir, tree)
		cmd := exec.Command(binary, "apply", "--dir", dir, pf)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(whole) + 1)))
		_ = cmd.Process.Kill()
		_ = cmd.Wait()

		bad := 0
		for p, v := range listTree(t, dir, true) {
			base := filepath.Base(p)
			switch {
			case strings.Contains(base, ".runner-") || strings.HasSuffix(base, ".tmp"):
				bad++
				if bad <= 3 {
					t.Errorf("kill %d: temporary file %s left in the tree", i, p)
				}
			case v != "dir" && v != "-rw-r--r-- "+tree[p] && v != applied[p]:
				bad++
				if bad <= 3 {
					t.Errorf("kill %d: %s is neither as it was nor as the diff makes it", i, p)
				}
			}
		}
		if bad > 3 {
			t.Errorf("kill %d: and %d more", i, bad-3)
		}
		// The next apply in the tree (here one that changes nothing,
		// already applied or not) clears what the killed one staged.
		other := filepath.Join(dir, "other.txt")
		if err := os.WriteFile(other, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		od := filepath.Join(t.TempDir(), "o.diff")
		if err := os.WriteFile(od, []byte("--- a/other.txt\n+++ b/other.txt\n@@ -1 +1 @@\n-x\n+y\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(binary, "apply", "--dir", dir, od).CombinedOutput(); err != nil {
			t.Fatalf("kill %d: the next apply: %v\n%s", i, err, out)
		}
		if ents, err := os.ReadDir(filepath.Join(dir, ".runner", "staging")); err == nil && len(ents) > 0 {
			t.Errorf("kill %d: the next apply left %d entries in .runner/staging", i, len(ents))
		}
	}
}
