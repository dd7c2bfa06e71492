package patch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const pyFile = `class Greeter:
    def hello(self):
        print("hello")
        return 1

    def bye(self):
        print("bye")
        return 1
`

// TestEditFormats applies each edit format, and the damage models do to
// it, to a small tree: what must come out, or the refusal (and its words)
// that must leave the tree as it was.
func TestEditFormats(t *testing.T) {
	tree := map[string][]byte{"app.py": []byte(pyFile), "lib/util.go": []byte("package util\n\nfunc A() int { return 1 }\n")}
	with := func(p, content string) map[string][]byte {
		m := map[string][]byte{}
		for k, v := range tree {
			m[k] = v
		}
		if content == "" {
			delete(m, p)
		} else {
			m[p] = []byte(content)
		}
		return m
	}
	helloFixed := strings.Replace(pyFile, `print("hello")`, `print("hello, world")`, 1)
	cases := []struct {
		name    string
		format  string
		answer  string
		want    map[string][]byte // nil: refused, tree unchanged
		refusal []string          // words the refusal must hold
		already bool
	}{
		{name: "search/replace", format: FormatAuto, answer: "Here is the fix.\n\napp.py\n```python\n<<<<<<< SEARCH\n    def hello(self):\n        print(\"hello\")\n=======\n    def hello(self):\n        print(\"hello, world\")\n>>>>>>> REPLACE\n```\n",
			want: with("app.py", helloFixed)},
		{name: "search/replace, path inside the fence", format: FormatSearchReplace, answer: "```python\napp.py\n<<<<<<< SEARCH\n        print(\"hello\")\n=======\n        print(\"hello, world\")\n>>>>>>> REPLACE\n```\n",
			want: with("app.py", helloFixed)},
		{name: "search/replace, indentation shifted", format: FormatAuto, answer: "app.py\n<<<<<<< SEARCH\ndef hello(self):\n    print(\"hello\")\n=======\ndef hello(self):\n    print(\"hello, world\")\n>>>>>>> REPLACE\n",
			want: with("app.py", helloFixed)},
		{name: "search/replace, indentation uneven", format: FormatAuto, answer: "app.py\n<<<<<<< SEARCH\ndef hello(self):\n        print(\"hello\")\n=======\ndef hello(self):\n    print(\"hello, world\")\n>>>>>>> REPLACE\n",
			refusal: []string{"SEARCH/REPLACE block 1", "indentation", "Nothing was changed", "Send all the blocks again"}},
		{name: "search/replace, found twice", format: FormatAuto, answer: "app.py\n<<<<<<< SEARCH\n        return 1\n=======\n        return 2\n>>>>>>> REPLACE\n",
			refusal: []string{"2 times, at lines 4, 8", "Add unchanged lines"}},
		{name: "search/replace, missing line", format: FormatAuto, answer: "app.py\n<<<<<<< SEARCH\n    def hello(self):\n        return 1\n=======\n    def hello(self):\n        return 2\n>>>>>>> REPLACE\n",
			refusal: []string{"Its SEARCH lines are not in app.py", "closest part"}},
		// A damaged SEARCH (a line lost) whose REPLACE is a run of it: the
		// REPLACE lines were in the file before any edit, so finding them
		// does not make the block applied.
		{name: "search/replace, damaged, REPLACE part of SEARCH", format: FormatAuto, answer: "app.py\n<<<<<<< SEARCH\nclass Greeter:\n    def hello(self):\n        return 1\n=======\n    def hello(self):\n>>>>>>> REPLACE\n",
			refusal: []string{"Its SEARCH lines are not in app.py"}},
		{name: "search/replace, cut off", format: FormatAuto, answer: "app.py\n<<<<<<< SEARCH\n        print(\"hello\")\n=======\n        print(\"hel",
			refusal: []string{"never ends", "cut off"}},
		{name: "search/replace, second block cut off keeps the first out", format: FormatAuto, answer: "app.py\n<<<<<<< SEARCH\n        print(\"hello\")\n=======\n        print(\"hello, world\")\n>>>>>>> REPLACE\n\nlib/util.go\n<<<<<<< SEARCH\nfunc A",
			refusal: []string{"block 2", "never ends"}},
		{name: "search/replace, no file", format: FormatSearchReplace, answer: "<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n",
			refusal: []string{"names no file"}},
		{name: "search/replace, blocks in any order, applied in turn", format: FormatAuto, answer: "app.py\n<<<<<<< SEARCH\n        print(\"bye\")\n=======\n        print(\"bye now\")\n>>>>>>> REPLACE\n\napp.py\n<<<<<<< SEARCH\n        print(\"hello\")\n=======\n        print(\"hello, world\")\n>>>>>>> REPLACE\n",
			want: with("app.py", strings.Replace(helloFixed, `"bye"`, `"bye now"`, 1))},
		{name: "search/replace, new file", format: FormatAuto, answer: "docs/new.md\n<<<<<<< SEARCH\n=======\n# New\n>>>>>>> REPLACE\n",
			want: with("docs/new.md", "# New\n")},
		{name: "search/replace, empty SEARCH on an existing file", format: FormatAuto, answer: "app.py\n<<<<<<< SEARCH\n=======\nprint(1)\n>>>>>>> REPLACE\n",
			refusal: []string{"SEARCH part is empty", "app.py exists"}},
		{name: "search/replace, missing file", format: FormatAuto, answer: "nope.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n",
			refusal: []string{"nope.py does not exist", "empty SEARCH"}},
		{name: "search/replace, already applied", format: FormatAuto, answer: "lib/util.go\n<<<<<<< SEARCH\nfunc B() int { return 1 }\n=======\nfunc A() int { return 1 }\n>>>>>>> REPLACE\n",
			want: tree, already: true},
		{name: "search/replace, leaves the directory", format: FormatAuto, answer: "../evil.py\n<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n",
			refusal: []string{"evil.py"}},
		{name: "search/replace, into .git", format: FormatAuto, answer: ".git/config\n<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n",
			refusal: []string{".git"}},
		{name: "apply_patch", format: FormatAuto, answer: "*** Begin Patch\n*** Update File: app.py\n@@ class Greeter:\n     def hello(self):\n-        print(\"hello\")\n+        print(\"hello, world\")\n         return 1\n*** Add File: lib/new.go\n+package util\n*** Delete File: lib/util.go\n*** End Patch\n",
			want: map[string][]byte{"app.py": []byte(helloFixed), "lib/new.go": []byte("package util\n")}},
		{name: "apply_patch, ambiguous", format: FormatApplyPatch, answer: "*** Begin Patch\n*** Update File: app.py\n@@\n-        return 1\n+        return 2\n*** End Patch\n",
			refusal: []string{"*** Update File: app.py", "lines 4, 8", "Send the whole patch again"}},
		{name: "apply_patch, cut off", format: FormatAuto, answer: "*** Begin Patch\n*** Update File: app.py\n@@\n-        print(\"hello\")\n+        print(\"hello, world\")\n",
			refusal: []string{"no \"*** End Patch\"", "cut off"}},
		{name: "apply_patch, move", format: FormatAuto, answer: "*** Begin Patch\n*** Update File: app.py\n*** Move to: b.py\n*** End Patch\n",
			refusal: []string{"renames"}},
		{name: "apply_patch, line without a prefix", format: FormatAuto, answer: "*** Begin Patch\n*** Update File: app.py\n@@\nclass Greeter:\n-        print(\"hello\")\n+        print(\"hello, world\")\n*** End Patch\n",
			refusal: []string{"every line of a hunk starts with"}},
		{name: "apply_patch, add an existing file", format: FormatAuto, answer: "*** Begin Patch\n*** Add File: app.py\n+x\n*** End Patch\n",
			refusal: []string{"*** Add File: app.py", "*** Update File: app.py"}},
		{name: "whole file", format: FormatAuto, answer: "lib/util.go\n```go\npackage util\n\nfunc A() int { return 2 }\n```\n",
			want: with("lib/util.go", "package util\n\nfunc A() int { return 2 }\n")},
		{name: "whole file, cut off", format: FormatWhole, answer: "lib/util.go\n```go\npackage util\n\nfunc A() int {",
			refusal: []string{"never closed", "lose its end"}},
		{name: "whole file, lines left out", format: FormatWhole, answer: "app.py\n```python\nclass Greeter:\n    # ... rest of the code unchanged ...\n```\n",
			refusal: []string{"stands for lines left out", "line 4"}},
		{name: "whole file, same content", format: FormatWhole, answer: "lib/util.go\n```go\npackage util\n\nfunc A() int { return 1 }\n```\n",
			want: tree, already: true},
		{name: "mixed: unified diff, SEARCH/REPLACE and a patch in one answer", format: FormatAuto, answer: "First:\n```diff\n--- a/lib/util.go\n+++ b/lib/util.go\n@@ -3 +3 @@\n-func A() int { return 1 }\n+func A() int { return 3 }\n```\nThen:\napp.py\n```\n<<<<<<< SEARCH\n        print(\"hello\")\n=======\n        print(\"hello, world\")\n>>>>>>> REPLACE\n```\nAnd:\n*** Begin Patch\n*** Add File: NEWS.md\n+news\n*** End Patch\n",
			want: map[string][]byte{"app.py": []byte(helloFixed), "lib/util.go": []byte("package util\n\nfunc A() int { return 3 }\n"), "NEWS.md": []byte("news\n")}},
		{name: "a code block beside an edit is not a whole file", format: FormatAuto, answer: "lib/util.go\n<<<<<<< SEARCH\nfunc A() int { return 1 }\n=======\nfunc A() int { return 4 }\n>>>>>>> REPLACE\n\nso that app.py\n\napp.py\n```python\nGreeter().hello()\n```\n",
			want: with("lib/util.go", "package util\n\nfunc A() int { return 4 }\n")},
		{name: "all or nothing across files", format: FormatAuto, answer: "lib/util.go\n<<<<<<< SEARCH\nfunc A() int { return 1 }\n=======\nfunc A() int { return 4 }\n>>>>>>> REPLACE\n\napp.py\n<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE\n",
			refusal: []string{"block 2", "These would apply: lib/util.go"}},
		{name: "unified only does not read SEARCH/REPLACE", format: FormatUnified, answer: "app.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n",
			refusal: []string{"no diff found"}},
		{name: "nothing in the answer", format: FormatAuto, answer: "I could not find the bug.\n",
			refusal: []string{"no edits found", "SEARCH/REPLACE", "*** Begin Patch"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tree)
			res, err := Apply(context.Background(), dir, []byte(tc.answer), Options{Format: tc.format, Strip: DetectStrip})
			got := readTree(t, dir)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("applied, want a refusal: %+v", res)
				}
				if _, ok := IsRefused(err); !ok {
					t.Fatalf("not a refusal: %v", err)
				}
				for _, w := range tc.refusal {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("refusal lacks %q:\n%s", w, err)
					}
				}
				if !sameTree(got, tree) {
					t.Errorf("a refusal changed the tree: %s", firstDiff(got, tree))
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if res.AlreadyApplied != tc.already {
				t.Errorf("AlreadyApplied = %v, want %v", res.AlreadyApplied, tc.already)
			}
			if !sameTree(got, tc.want) {
				t.Errorf("wrong result: %s", firstDiff(got, tc.want))
			}
		})
	}
}

// TestEditFormatsUndo: an edit in another format keeps its backup, and
// Rollback puts the files back, as for a diff.
func TestEditFormatsUndo(t *testing.T) {
	dir := t.TempDir()
	tree := map[string][]byte{"app.py": []byte(pyFile)}
	writeTree(t, dir, tree)
	answer := "app.py\n<<<<<<< SEARCH\n        print(\"hello\")\n=======\n        print(\"hello, world\")\n>>>>>>> REPLACE\n" +
		"*** Begin Patch\n*** Add File: b.py\n+x\n*** End Patch\n"
	res, err := Apply(context.Background(), dir, []byte(answer), Options{Format: FormatAuto})
	if err != nil {
		t.Fatal(err)
	}
	if res.BackupDir == "" || len(res.Files) != 2 {
		t.Fatalf("result %+v: want a backup and two files", res)
	}
	if err := Rollback(dir, res.BackupDir); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, dir); !sameTree(got, tree) {
		t.Errorf("after rollback: %s", firstDiff(got, tree))
	}
}

func TestEditFormatsCRLF(t *testing.T) {
	dir := t.TempDir()
	tree := map[string][]byte{"a.txt": []byte("one\r\ntwo\r\n")}
	writeTree(t, dir, tree)
	answer := "a.txt\n<<<<<<< SEARCH\ntwo\n=======\nTWO\nthree\n>>>>>>> REPLACE\n"
	if _, err := Apply(context.Background(), dir, []byte(answer), Options{Format: FormatAuto}); err != nil {
		t.Fatal(err)
	}
	if got := string(readTree(t, dir)["a.txt"]); got != "one\r\nTWO\r\nthree\r\n" {
		t.Errorf("got %q", got)
	}
}

// TestEditFormatsProtectedPaths: the path rules hold for every format.
// Each protected spelling, created or changed by a SEARCH/REPLACE block,
// an apply_patch Add, Update or Delete, or a whole file, is refused with
// the tree as it was; so is a path through a symbolic link or out of the
// directory. The allowed look-alikes are created.
func TestEditFormatsProtectedPaths(t *testing.T) {
	answers := func(p string) map[string]string {
		return map[string]string{
			"sr create":   p + "\n<<<<<<< SEARCH\n=======\npwned\n>>>>>>> REPLACE\n",
			"sr modify":   p + "\n<<<<<<< SEARCH\nsecret\n=======\npwned\n>>>>>>> REPLACE\n",
			"patch add":   "*** Begin Patch\n*** Add File: " + p + "\n+pwned\n*** End Patch\n",
			"patch edit":  "*** Begin Patch\n*** Update File: " + p + "\n@@\n-secret\n+pwned\n*** End Patch\n",
			"patch del":   "*** Begin Patch\n*** Delete File: " + p + "\n*** End Patch\n",
			"whole":       p + "\n```\npwned\n```\n",
			"whole, more": "x.txt\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n\n" + p + "\n<<<<<<< SEARCH\nsecret\n=======\npwned\n>>>>>>> REPLACE\n",
		}
	}
	paths := append(append([]string{}, protectedPaths...), "../outside/x", "link/x", "/etc/passwd", `sub\x`)
	for _, p := range paths {
		for kind, answer := range answers(p) {
			t.Run(kind+" "+p, func(t *testing.T) {
				base := t.TempDir()
				dir := filepath.Join(base, "tree")
				tree := map[string][]byte{"x.txt": []byte("x\n")}
				if !strings.HasPrefix(p, "..") && !strings.HasPrefix(p, "/") && !strings.Contains(p, `\`) && !strings.HasPrefix(p, "link/") {
					tree[p] = []byte("secret\n")
				}
				writeTree(t, dir, tree)
				writeTree(t, filepath.Join(base, "outside"), map[string][]byte{"x": []byte("secret\n")})
				before, beside := readTree(t, dir), readTree(t, filepath.Join(base, "outside"))
				if strings.HasPrefix(p, "link/") {
					// Removed before the tree is read: readTree would
					// follow it.
					if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(dir, "link")); err != nil {
						t.Fatal(err)
					}
				}
				_, err := Apply(context.Background(), dir, []byte(answer), Options{Format: FormatAuto})
				if _, ok := IsRefused(err); !ok {
					t.Fatalf("not refused: %v", err)
				}
				if strings.HasPrefix(p, "link/") {
					if err := os.Remove(filepath.Join(dir, "link")); err != nil {
						t.Fatal(err)
					}
				}
				if got := readTree(t, dir); !sameTree(got, before) {
					t.Errorf("the tree changed: %s", firstDiff(got, before))
				}
				if got := readTree(t, filepath.Join(base, "outside")); !sameTree(got, beside) {
					t.Errorf("the directory beside changed: %s", firstDiff(got, beside))
				}
			})
		}
	}
	for _, p := range allowedPaths {
		t.Run("allowed "+p, func(t *testing.T) {
			dir := t.TempDir()
			answer := "*** Begin Patch\n*** Add File: " + p + "\n+ok\n*** End Patch\n"
			if _, err := Apply(context.Background(), dir, []byte(answer), Options{Format: FormatAuto}); err != nil {
				t.Fatal(err)
			}
			if got := readTree(t, dir)[p]; string(got) != "ok\n" {
				t.Errorf("%s = %q", p, got)
			}
		})
	}
}

// TestAsDiff: edits in any format render as a unified diff, for the
// report; a unified diff alone is left as it is.
func TestAsDiff(t *testing.T) {
	answer := "app.py\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n" +
		"*** Begin Patch\n*** Update File: b.py\n@@ def f():\n ctx\n-x\n+y\n*** Delete File: c.py\n*** End Patch\n"
	got, ok := AsDiff([]byte(answer))
	want := "--- a/app.py\n+++ b/app.py\n@@ SEARCH/REPLACE block 1 @@\n-old\n+new\n" +
		"--- a/b.py\n+++ b/b.py\n@@ @@ def f():\n ctx\n-x\n+y\n" +
		"--- a/c.py\n+++ /dev/null\n@@ the whole file is deleted @@\n"
	if !ok || got != want {
		t.Errorf("got %v\n%s\nwant\n%s", ok, got, want)
	}
	whole, ok := AsDiff([]byte("new.txt\n```\none\ntwo\n```\n"))
	if !ok || whole != "--- a/new.txt\n+++ b/new.txt\n@@ the whole file, 2 lines @@\n+one\n+two\n" {
		t.Errorf("whole: %v %q", ok, whole)
	}
	if _, ok := AsDiff([]byte("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")); ok {
		t.Error("a unified diff was rendered again")
	}
}
