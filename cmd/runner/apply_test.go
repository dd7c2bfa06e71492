package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const applyOrig = "package x\n\nfunc F() int {\n\treturn 1\n}\n"

const applyDiff = "Fix:\n```diff\n--- a/x.go\n+++ b/x.go\n@@ -3,3 +3,3 @@\n func F() int {\n-\treturn 1\n+\treturn 2\n }\n```\n"

func applyRun(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmdApply(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func applySetup(t *testing.T) (dir, patchFile string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(applyOrig), 0o644); err != nil {
		t.Fatal(err)
	}
	patchFile = filepath.Join(t.TempDir(), "fix.diff")
	if err := os.WriteFile(patchFile, []byte(applyDiff), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, patchFile
}

func applyContent(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "x.go"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestApplyCommand(t *testing.T) {
	dir, pf := applySetup(t)

	code, out, errs := applyRun(t, "", "--check", "--dir", dir, pf)
	if code != exitOK || !strings.Contains(out, "nothing changed (--check)") || applyContent(t, dir) != applyOrig {
		t.Fatalf("--check: %d %q %q", code, out, errs)
	}

	code, out, errs = applyRun(t, "", pf, "--dir", dir) // flags after PATCH too
	if code != exitOK || !strings.Contains(out, "modify x.go (+1 -1)") || !strings.Contains(out, "backup: .runner/backups/") {
		t.Fatalf("apply: %d %q %q", code, out, errs)
	}
	if !strings.Contains(applyContent(t, dir), "return 2") {
		t.Fatal("not applied")
	}

	code, out, _ = applyRun(t, applyDiff, "--dir", dir, "-")
	if code != exitOK || !strings.Contains(out, "already applied") {
		t.Fatalf("again from stdin: %d %q", code, out)
	}

	code, _, errs = applyRun(t, "", "--dir", dir, "--reverse", "-p1", pf)
	if code != exitOK || applyContent(t, dir) != applyOrig {
		t.Fatalf("reverse: %d %q %q", code, errs, applyContent(t, dir))
	}
}

func TestApplyCommandRefuses(t *testing.T) {
	dir, _ := applySetup(t)
	bad := strings.Replace(applyDiff, "-\treturn 1", "-\treturn 7", 1)
	code, out, errs := applyRun(t, bad, "--dir", dir, "-")
	if code != exitFailed || out != "" {
		t.Fatalf("code %d, stdout %q", code, out)
	}
	for _, want := range []string{"not applied", "Hunk 1 of 1 for x.go does not apply", "return 7", "closest part of x.go"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if applyContent(t, dir) != applyOrig {
		t.Error("file changed")
	}
	escape := "--- a/../x.go\n+++ b/../x.go\n@@ -1 +1 @@\n-a\n+b\n"
	if code, _, errs := applyRun(t, escape, "--dir", dir, "-"); code != exitFailed || !strings.Contains(errs, "goes up a directory") {
		t.Errorf("traversal: %d %q", code, errs)
	}
}

func TestApplyCommandUsage(t *testing.T) {
	dir, pf := applySetup(t)
	for _, args := range [][]string{
		{},
		{pf, pf},
		{"--nope", pf},
		{"-p", "-3", pf},
	} {
		if code, _, errs := applyRun(t, "", args...); code != exitUsage {
			t.Errorf("%q: code %d, stderr %q", args, code, errs)
		}
	}
	if code, _, _ := applyRun(t, "", "--dir", dir, filepath.Join(dir, "missing.diff")); code != exitFailed {
		t.Errorf("missing patch file: code %d", code)
	}
	if code, _, _ := applyRun(t, "", "-h"); code != exitOK {
		t.Errorf("-h: code %d", code)
	}
}

// --undo puts the files back from the backup an apply printed.
func TestApplyUndo(t *testing.T) {
	dir, pf := applySetup(t)
	code, out, errs := applyRun(t, "", "--dir", dir, pf)
	if code != exitOK || applyContent(t, dir) == applyOrig {
		t.Fatalf("apply: %d %q %q", code, out, errs)
	}
	_, backup, _ := strings.Cut(out, "backup: ")
	backup = strings.TrimSpace(backup)
	code, out, errs = applyRun(t, "", "--dir", dir, "--undo", backup)
	if code != exitOK || applyContent(t, dir) != applyOrig || !strings.Contains(out, "restored") {
		t.Fatalf("undo: %d %q %q; content %q", code, out, errs, applyContent(t, dir))
	}
	if code, _, errs = applyRun(t, "", "--dir", dir, "--undo", "nope"); code != exitFailed || !strings.Contains(errs, "undo") {
		t.Fatalf("undo of a missing backup: %d %q", code, errs)
	}
	if code, _, _ = applyRun(t, "", "--dir", dir, "--undo", backup, pf); code != exitUsage {
		t.Fatalf("--undo with a PATCH: exit %d, want 2", code)
	}
}

// TestApplyCommandHostile: runner apply refuses what the step refuses
// (the full table is internal/patch TestHostileDiffs), exits 1, and leaves
// the directory as it was.
func TestApplyCommandHostile(t *testing.T) {
	for _, diff := range []string{
		"--- /dev/null\n+++ b/sub/.git/config\n@@ -0,0 +1 @@\n+[core]\n",
		"--- /dev/null\n+++ b/.GIT/hooks/pre-commit\n@@ -0,0 +1 @@\n+x\n",
		"--- /dev/null\n+++ b/git~1/config\n@@ -0,0 +1 @@\n+x\n",
		"--- /dev/null\n+++ b/.git. /config\n@@ -0,0 +1 @@\n+x\n",
		"--- /dev/null\n+++ b/.g\u200dit/config\n@@ -0,0 +1 @@\n+x\n",
		"diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc\n",
		"--- a/none.go\n+++ b/none.go\n@@ -1 +1 @@\n-a\n+b\n",
	} {
		dir, _ := applySetup(t)
		code, out, errs := applyRun(t, diff, "--dir", dir, "-")
		if code != exitFailed || out != "" || !strings.Contains(errs, "not applied") {
			t.Errorf("%q: code %d, stdout %q, stderr %q", diff, code, out, errs)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 || applyContent(t, dir) != applyOrig {
			t.Errorf("%q: the directory changed: %v", diff, entries)
		}
	}
}

// TestApplyCommandModes: a mode change is made (chmod), with or without
// content edits, and printed.
func TestApplyCommandModes(t *testing.T) {
	dir, _ := applySetup(t)
	diff := "diff --git a/x.go b/x.go\nold mode 100644\nnew mode 100755\n"
	code, out, errs := applyRun(t, diff, "--dir", dir, "-q", "-")
	fi, err := os.Stat(filepath.Join(dir, "x.go"))
	if code != exitOK || err != nil || fi.Mode().Perm() != 0o755 || !strings.Contains(out, "mode 0755") {
		t.Fatalf("code %d, mode %v, stdout %q, stderr %q", code, fi.Mode(), out, errs)
	}
	if code, out, _ := applyRun(t, diff, "--dir", dir, "-"); code != exitOK || !strings.Contains(out, "already applied") {
		t.Errorf("again: %d %q", code, out)
	}
}

func TestPFlag(t *testing.T) {
	for a, want := range map[string]string{"-p1": "1", "--p0": "0", "-p12": "12", "-p": "", "-px": "", "-p1x": "", "---p1": "", "p1": "", "-q": ""} {
		got, ok := pFlag(a)
		if got != want || ok != (want != "") {
			t.Errorf("pFlag(%q) = %q, %v; want %q", a, got, ok, want)
		}
	}
}

// TestApplyKeepsBackupsBounded: runner apply keeps the newest
// --keep-backups backups (20 by default), --undo restores a kept one and
// says a pruned one was pruned; 0 keeps them all.
func TestApplyKeepsBackupsBounded(t *testing.T) {
	count := func(dir string) int {
		ents, err := os.ReadDir(filepath.Join(dir, ".runner", "backups"))
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	for _, tc := range []struct {
		name string
		flag []string
		want int
	}{
		{"default", nil, 20},
		{"keep 2", []string{"--keep-backups", "2"}, 2},
		{"keep all", []string{"--keep-backups", "0"}, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, pf := applySetup(t)
			var backups []string
			for i := 0; i < 24; i++ {
				args := append([]string{"--dir", dir}, tc.flag...)
				if i%2 == 1 {
					args = append(args, "--reverse")
				}
				code, out, errs := applyRun(t, "", append(args, pf)...)
				_, b, ok := strings.Cut(out, "backup: ")
				if code != exitOK || !ok {
					t.Fatalf("apply %d: %d %q %q", i, code, out, errs)
				}
				backups = append(backups, strings.TrimSpace(b))
			}
			if n := count(dir); n != tc.want {
				t.Fatalf("%d backups, want %d", n, tc.want)
			}
			// The newest kept backup was made by a forward apply's reverse:
			// undoing it gives the changed file back.
			last := backups[len(backups)-1]
			if code, out, errs := applyRun(t, "", "--dir", dir, "--undo", last); code != exitOK || !strings.Contains(applyContent(t, dir), "return 2") {
				t.Fatalf("undo of the newest: %d %q %q", code, out, errs)
			}
			first := backups[0]
			code, _, errs := applyRun(t, "", "--dir", dir, "--undo", first)
			if tc.want == len(backups) {
				if code != exitOK {
					t.Fatalf("undo of the first with every backup kept: %d %q", code, errs)
				}
				return
			}
			if code != exitFailed || !strings.Contains(errs, "no backup at "+first+": it was pruned") {
				t.Fatalf("undo of a pruned backup: %d %q", code, errs)
			}
		})
	}
	dir, pf := applySetup(t)
	if code, _, errs := applyRun(t, "", "--dir", dir, "--keep-backups", "-1", pf); code != exitUsage || !strings.Contains(errs, "--keep-backups -1") {
		t.Errorf("--keep-backups -1: %d %q", code, errs)
	}
}

// TestApplyFormats: runner apply reads the other edit formats with
// --format, undoes them with --undo, and refuses a bad --format or
// --reverse with one as bad usage.
func TestApplyFormats(t *testing.T) {
	dir := t.TempDir()
	orig := "package x\n\nfunc F() int { return 1 }\n"
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	sr := "x.go\n<<<<<<< SEARCH\nfunc F() int { return 1 }\n=======\nfunc F() int { return 2 }\n>>>>>>> REPLACE\n"
	if code, _, errs := applyRun(t, sr, "--dir", dir, "-"); code != exitFailed || !strings.Contains(errs, "no diff found") {
		t.Errorf("unified (the default): %d %q", code, errs)
	}
	code, out, errs := applyRun(t, sr, "--dir", dir, "--format", "auto", "-")
	if code != exitOK || applyContent(t, dir) != "package x\n\nfunc F() int { return 2 }\n" {
		t.Fatalf("auto: %d %q %q", code, out, errs)
	}
	_, backup, _ := strings.Cut(out, "backup: ")
	backup = strings.TrimSpace(strings.SplitN(backup, "\n", 2)[0])
	if code, _, errs := applyRun(t, "", "--dir", dir, "--undo", backup); code != exitOK || applyContent(t, dir) != orig {
		t.Errorf("undo %q: %d %q", backup, code, errs)
	}
	ap := "*** Begin Patch\n*** Update File: x.go\n@@\n-func F() int { return 1 }\n+func F() int { return 3 }\n*** End Patch\n"
	if code, _, errs := applyRun(t, ap, "--dir", dir, "--format", "apply_patch", "-"); code != exitOK || !strings.Contains(applyContent(t, dir), "return 3") {
		t.Errorf("apply_patch: %d %q", code, errs)
	}
	for _, args := range [][]string{{"--format", "aider"}, {"--format", "auto", "--reverse"}} {
		if code, _, errs := applyRun(t, sr, append(append([]string{"--dir", dir}, args...), "-")...); code != exitUsage {
			t.Errorf("%v: %d %q, want bad usage", args, code, errs)
		}
	}
}

// writeCounter counts the writes made to it.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// TestApplyListsFilesInOneWrite: the list of changed files reaches
// standard output in one write, not one per file (a system call each when
// stdout is a file or pipe: 3,241 for the benchmark diff), and says the
// same as before, a line per file in the diff's order.
func TestApplyListsFilesInOneWrite(t *testing.T) {
	const n = 50
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet=%v", quiet), func(t *testing.T) {
			dir := t.TempDir()
			var diff strings.Builder
			for i := range n {
				name := fmt.Sprintf("f%02d.txt", i)
				if err := os.WriteFile(filepath.Join(dir, name), []byte("a\nb\nc\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&diff, "--- a/%s\n+++ b/%s\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", name, name)
			}
			pf := filepath.Join(t.TempDir(), "many.diff")
			if err := os.WriteFile(pf, []byte(diff.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"--dir", dir, pf}
			if quiet {
				args = append([]string{"-q"}, args...)
			}
			var out writeCounter
			var errb bytes.Buffer
			if code := cmdApply(args, strings.NewReader(""), &out, &errb); code != exitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if out.writes != 1 {
				t.Errorf("%d writes to stdout for %d files, want 1", out.writes, n)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) < n {
				t.Fatalf("%d lines, want a line per file:\n%s", len(lines), out.String())
			}
			for i := range n {
				if want := fmt.Sprintf("modify f%02d.txt (+1 -1)", i); lines[i] != want {
					t.Errorf("line %d: %q, want %q", i, lines[i], want)
				}
			}
			if quiet != !strings.Contains(out.String(), "backup: ") {
				t.Errorf("quiet=%v, and the backup line is there: %v", quiet, !quiet)
			}
		})
	}
}
