package patch

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The security table: diffs written by an attacker (or a confused model)
// against a tree with a directory beside it. Each refusal must leave both
// byte for byte and mode for mode as they were; each accepted diff must
// give exactly the bytes and modes listed. Reverting any of the rules in
// protect.go, parse.go (modes), emit.go (CRLF) or plan.go (missing files)
// fails a row here.

// protectedPaths are names a diff may not write, by every spelling a file
// system may read as .git or .runner (see protect.go), at any depth.
var protectedPaths = []string{
	".git/config", "sub/.git/config", "a/b/c/.git/hooks/pre-commit",
	".GIT/config", "sub/.Git/config", ".gIT/hooks/post-checkout",
	".git /config", "sub/.git./config", ".git. . ./config", ".git...",
	"git~1/config", "GIT~1/config", "sub/Git~1/hooks/x", "git~2/config",
	".git::$INDEX_ALLOCATION/config", ".git:stream", "sub/.git::$DATA",
	".g\u200cit/config", ".gi\u200dt/config", "\ufeff.git/config", ".git\u200f/config",
	".\u202agit/config", ".g\u206ait/config", "sub/.G\u200cIT/config",
	".g\u0131t/config", // dotless i: upper-cases to I
	".runner/backups/x", "sub/.runner/backups/x/.runner-backup.json", ".RUNNER/x",
	".runner./x", ".runner /x", "runner~1/x", "RUNNER~3/x", ".runner:x",
	".r\u200cunner/x", ".runne\ufeffr/x",
}

// allowedPaths look close to the protected ones but are ordinary files.
var allowedPaths = []string{
	".github/workflows/ci.yml", ".gitignore", "sub/.gitkeep", ".gitmodules",
	".gitattributes", "git/x", "sub/git", ".git-blame-ignore-revs", "git~/x",
	"runner/x", ".runner-notes", "runners~1/x", "gitx~1", ".g\u200bit/x",
	"sub/.git_old/config", "x.git", "notes.runner",
}

func createDiff(name string) string {
	return "--- /dev/null\n+++ b/" + name + "\n@@ -0,0 +1 @@\n+pwned\n"
}

func modifyDiff(name string) string {
	return "--- a/" + name + "\n+++ b/" + name + "\n@@ -1 +1 @@\n-secret\n+pwned\n"
}

type hostileCase struct {
	name  string
	setup map[string]string      // files in the tree before ("path": content; mode 0644)
	modes map[string]fs.FileMode // their modes where not 0644
	diff  string
	p0    bool // -p0 rather than detecting the strip level

	refuse Kind   // 0: must apply
	errHas string // the refusal says this
	want   map[string]string
	wantM  map[string]fs.FileMode
	gone   []string // paths that must not exist after
}

func hostileCases() []hostileCase {
	var cases []hostileCase
	for _, p := range protectedPaths {
		cases = append(cases,
			hostileCase{name: "create " + p, diff: createDiff(p), refuse: Unsafe, errHas: "may not change files under", gone: []string{p}},
			hostileCase{name: "modify " + p, setup: map[string]string{p: "secret\n"}, diff: modifyDiff(p), refuse: Unsafe, errHas: "may not change files under"},
			hostileCase{name: "create -p0 " + p, diff: "--- /dev/null\n+++ " + p + "\n@@ -0,0 +1 @@\n+pwned\n", p0: true, refuse: Unsafe, gone: []string{p}},
		)
	}
	for _, p := range allowedPaths {
		cases = append(cases, hostileCase{name: "allowed " + p, diff: createDiff(p), want: map[string]string{p: "pwned\n"}})
	}
	cases = append(cases, []hostileCase{
		// Paths that leave the directory, kept from before.
		{name: "dot-dot", diff: createDiff("../outside/new.txt"), refuse: Unsafe},
		{name: "dot-dot deep", diff: modifyDiff("sub/../../outside/secret.txt"), refuse: Unsafe},
		{name: "absolute", diff: "--- /dev/null\n+++ /tmp/abs\n@@ -0,0 +1 @@\n+x\n", refuse: Unsafe},
		{name: "backslash", diff: createDiff(`sub\.git\config`), refuse: Unsafe, errHas: "backslash"},
		{name: "backslash dot-dot", diff: createDiff(`..\outside\x`), refuse: Unsafe},
		{name: "NUL", diff: "--- /dev/null\n+++ \"b/x\\000y\"\n@@ -0,0 +1 @@\n+x\n", refuse: Unsafe},

		// Modes: never a silent regular file.
		{name: "new symlink", diff: "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+../outside/secret.txt\n\\ No newline at end of file\n",
			refuse: BadDiff, errHas: "symbolic links are not supported", gone: []string{"l"}},
		{name: "new symlink into .git", diff: "diff --git a/hooks b/hooks\nnew file mode 120000\n--- /dev/null\n+++ b/hooks\n@@ -0,0 +1 @@\n+.git/hooks\n\\ No newline at end of file\n",
			refuse: BadDiff, errHas: "symbolic links", gone: []string{"hooks"}},
		{name: "file becomes symlink", setup: map[string]string{"f": "secret\n"},
			diff: "diff --git a/f b/f\nold mode 100644\nnew mode 120000\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-secret\n+/etc/passwd\n", refuse: BadDiff, errHas: "symbolic links"},
		{name: "new gitlink", diff: "diff --git a/mod b/mod\nnew file mode 160000\n--- /dev/null\n+++ b/mod\n@@ -0,0 +1 @@\n+Subproject commit 0123456789abcdef0123456789abcdef01234567\n",
			refuse: BadDiff, errHas: "submodules", gone: []string{"mod"}},
		{name: "unknown mode", diff: "diff --git a/d b/d\nnew file mode 040000\n--- /dev/null\n+++ b/d\n@@ -0,0 +1 @@\n+x\n", refuse: BadDiff, errHas: "not a regular file", gone: []string{"d"}},
		{name: "mode change beside an edit", setup: map[string]string{"run.sh": "echo a\n"},
			diff: "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n--- a/run.sh\n+++ b/run.sh\n@@ -1 +1 @@\n-echo a\n+echo b\n",
			want: map[string]string{"run.sh": "echo b\n"}, wantM: map[string]fs.FileMode{"run.sh": 0o755}},
		{name: "pure mode change", setup: map[string]string{"run.sh": "echo a\n"},
			diff: "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n",
			want: map[string]string{"run.sh": "echo a\n"}, wantM: map[string]fs.FileMode{"run.sh": 0o755}},
		{name: "pure mode change off", setup: map[string]string{"run.sh": "echo a\n"}, modes: map[string]fs.FileMode{"run.sh": 0o755},
			diff: "diff --git a/run.sh b/run.sh\nold mode 100755\nnew mode 100644\n",
			want: map[string]string{"run.sh": "echo a\n"}, wantM: map[string]fs.FileMode{"run.sh": 0o644}},
		{name: "mode change of a missing file", diff: "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n", refuse: DoesNotApply, errHas: "does not exist", gone: []string{"run.sh"}},
		{name: "mode change into .git", diff: "diff --git a/sub/.git/hooks/post-checkout b/sub/.git/hooks/post-checkout\nold mode 100644\nnew mode 100755\n",
			setup: map[string]string{"sub/.git/hooks/post-checkout": "echo pwned\n"}, refuse: Unsafe},
		{name: "new executable", diff: "diff --git a/x.sh b/x.sh\nnew file mode 100755\n--- /dev/null\n+++ b/x.sh\n@@ -0,0 +1 @@\n+echo\n",
			want: map[string]string{"x.sh": "echo\n"}, wantM: map[string]fs.FileMode{"x.sh": 0o755}},
		{name: "new empty file", diff: "diff --git a/empty b/empty\nnew file mode 100644\nindex 0000000..e69de29\n",
			want: map[string]string{"empty": ""}},
		{name: "deleted empty file", setup: map[string]string{"empty": ""}, diff: "diff --git a/empty b/empty\ndeleted file mode 100644\nindex e69de29..0000000\n",
			gone: []string{"empty"}},
		{name: "deleted 'empty' file that is not", setup: map[string]string{"full": "data\n"}, diff: "diff --git a/full b/full\ndeleted file mode 100644\n",
			refuse: DoesNotApply, errHas: "not"},
		{name: "rename", setup: map[string]string{"a.txt": "x\n"}, diff: "diff --git a/a.txt b/b.txt\nsimilarity index 100%\nrename from a.txt\nrename to b.txt\n",
			refuse: BadDiff, errHas: "rename"},

		// CRLF: a diff that carries CRs is byte for byte; an LF diff adapts.
		{name: "CRLF file, CR diff, LF added line", setup: map[string]string{"w.txt": "a\r\nb\r\nc\r\n"},
			diff: "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,4 @@\n a\r\n b\r\n+lf only\n c\r\n",
			want: map[string]string{"w.txt": "a\r\nb\r\nlf only\nc\r\n"}},
		{name: "CRLF file, CR diff, CRLF added line", setup: map[string]string{"w.txt": "a\r\nb\r\nc\r\n"},
			diff: "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,4 @@\n a\r\n b\r\n+crlf\r\n c\r\n",
			want: map[string]string{"w.txt": "a\r\nb\r\ncrlf\r\nc\r\n"}},
		{name: "CRLF file, LF diff adapts", setup: map[string]string{"w.txt": "a\r\nb\r\nc\r\n"},
			diff: "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,4 @@\n a\n b\n+new\n c\n",
			want: map[string]string{"w.txt": "a\r\nb\r\nnew\r\nc\r\n"}},
		{name: "LF file, CR added line kept", setup: map[string]string{"u.txt": "a\nb\n"},
			diff: "--- a/u.txt\n+++ b/u.txt\n@@ -1,2 +1,3 @@\n a\n+cr\r\n b\n",
			want: map[string]string{"u.txt": "a\ncr\r\nb\n"}},
		{name: "new file, mixed endings kept", diff: "--- /dev/null\n+++ b/m.txt\n@@ -0,0 +1,3 @@\n+one\r\n+two\n+three\r\n",
			want: map[string]string{"m.txt": "one\r\ntwo\nthree\r\n"}},

		// A change to a file that is not there is not a create.
		{name: "modify a missing file", diff: "--- a/gone.txt\n+++ b/gone.txt\n@@ -1 +1 @@\n-x\n+y\n", refuse: DoesNotApply, errHas: "does not exist", gone: []string{"gone.txt"}},
		{name: "modify a missing file, no old lines", diff: "--- a/gone.txt\n+++ b/gone.txt\n@@ -0,0 +1 @@\n+y\n", refuse: DoesNotApply, errHas: "/dev/null", gone: []string{"gone.txt"}},
		{name: "modify a missing file in a missing dir", diff: "--- a/d/e/gone.txt\n+++ b/d/e/gone.txt\n@@ -0,0 +1 @@\n+y\n", refuse: DoesNotApply, gone: []string{"d"}},
	}...)
	return cases
}

func TestHostileDiffs(t *testing.T) {
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			top := t.TempDir()
			dir, outside := filepath.Join(top, "work"), filepath.Join(top, "outside")
			must(t, os.MkdirAll(outside, 0o755))
			must(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644))
			must(t, os.MkdirAll(dir, 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("keep\n"), 0o644))
			for p, s := range tc.setup {
				full := filepath.Join(dir, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Skipf("this file system cannot hold %q: %v", p, err)
				}
				if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
					t.Skipf("this file system cannot hold %q: %v", p, err)
				}
				if m, ok := tc.modes[p]; ok {
					must(t, os.Chmod(full, m))
				}
			}
			opt := Options{Strip: DetectStrip}
			if tc.p0 {
				opt.Strip = 0
			}
			before := snapshot(t, top)
			res, err := Apply(context.Background(), dir, []byte(tc.diff), opt)
			for _, p := range tc.gone {
				if _, serr := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); serr == nil {
					t.Errorf("%s exists after the apply", p)
				}
			}
			if tc.refuse != 0 {
				k, ok := IsRefused(err)
				if !ok || k != tc.refuse {
					t.Fatalf("want a refusal (%v), got %v, %+v", tc.refuse, err, res)
				}
				if !strings.Contains(err.Error(), tc.errHas) {
					t.Errorf("the refusal does not say %q:\n%v", tc.errHas, err)
				}
				if after := snapshot(t, top); !sameSnapshot(before, after) {
					t.Errorf("refused, but the tree changed")
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			for p, s := range tc.want {
				b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
				if err != nil || string(b) != s {
					t.Errorf("%s = %q (%v), want %q", p, b, err, s)
				}
			}
			for p, m := range tc.wantM {
				fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p)))
				if err != nil || fi.Mode().Perm() != m {
					t.Errorf("%s mode = %v (%v), want %v", p, fi.Mode().Perm(), err, m)
				}
			}
			b, _ := os.ReadFile(filepath.Join(outside, "secret.txt"))
			if string(b) != "secret\n" {
				t.Errorf("the file outside changed")
			}
		})
	}
}

// TestProtectedComponent pins the rule itself, name by name.
func TestProtectedComponent(t *testing.T) {
	for _, p := range protectedPaths {
		hit := false
		for c := range strings.SplitSeq(p, "/") {
			hit = hit || protectedComponent(c) != ""
		}
		if !hit {
			t.Errorf("%q is not refused", p)
		}
	}
	for _, p := range allowedPaths {
		for c := range strings.SplitSeq(p, "/") {
			if got := protectedComponent(c); got != "" {
				t.Errorf("%q is refused as %s", p, got)
			}
		}
	}
}
