package patch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goFile = `package main

import "fmt"

func main() {
	fmt.Println("hello")
}

func helper() int {
	return 42
}
`

// applyCase is one diff applied to a small tree.
type applyCase struct {
	name    string
	tree    map[string]string
	diff    string
	opt     *Options // nil: detect strip, no backup
	want    map[string]string
	already bool
	refuse  Kind   // expect a refusal of this kind (tree unchanged)
	errHas  string // and the message holds this
}

// inFence puts a diff in a markdown code block, as a model's answer
// has it: the closing fence shows that the answer did not stop inside the
// diff.
func inFence(diff string) string { return "```diff\n" + diff + "```\n" }

func runApplyCases(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tree := map[string][]byte{}
			for p, s := range tc.tree {
				tree[p] = []byte(s)
			}
			writeTree(t, dir, tree)
			opt := Options{Strip: DetectStrip, NoBackup: true}
			if tc.opt != nil {
				opt = *tc.opt
			}
			res, err := Apply(context.Background(), dir, []byte(tc.diff), opt)
			got := readTree(t, dir)
			if tc.refuse != 0 {
				k, ok := IsRefused(err)
				if !ok || k != tc.refuse {
					t.Fatalf("want refusal %v, got %v (%v)", tc.refuse, k, err)
				}
				if !strings.Contains(err.Error(), tc.errHas) {
					t.Errorf("error does not mention %q:\n%s", tc.errHas, err)
				}
				if !sameTree(got, tree) {
					t.Errorf("refused but the tree changed: %s", firstDiff(got, tree))
				}
				return
			}
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if res.AlreadyApplied != tc.already {
				t.Errorf("AlreadyApplied = %v, want %v", res.AlreadyApplied, tc.already)
			}
			want := tree
			if tc.want != nil {
				want = map[string][]byte{}
				for p, s := range tc.want {
					want[p] = []byte(s)
				}
			}
			if !sameTree(got, want) {
				t.Errorf("%s\nmessages: %q", firstDiff(got, want), res.Messages)
			}
		})
	}
}

func TestFrontEnd(t *testing.T) {
	hello := strings.Replace(goFile, `"hello"`, `"hello, world"`, 1)
	plain := `--- a/main.go
+++ b/main.go
@@ -4,5 +4,5 @@ import "fmt"
 
 func main() {
-	fmt.Println("hello")
+	fmt.Println("hello, world")
 }
 
`
	tree := map[string]string{"main.go": goFile}
	want := map[string]string{"main.go": hello}
	runApplyCases(t, []applyCase{
		{name: "plain", tree: tree, diff: plain, want: want},
		{name: "fenced with prose", tree: tree, want: want,
			diff: "Sure! The fix:\n\n```diff\n" + plain + "```\n\nThat prints the full greeting.\n"},
		{name: "tilde fence, no language", tree: tree, want: want, diff: "~~~\n" + plain + "~~~\n"},
		{name: "diff split over two fences", tree: map[string]string{"main.go": goFile, "b.txt": "one\ntwo\n"},
			want: map[string]string{"main.go": hello, "b.txt": "one\n2\n"},
			diff: "First:\n```diff\n" + plain + "```\nThen:\n```diff\n--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n```\n"},
		{name: "unfenced prose around", tree: tree, want: want,
			diff: "Here you go:\n" + plain + "\nLet me know if it works.\n"},
		// A last hunk without counts (or with wrong ones) is taken as
		// whole only when something after it says the answer went on
		// (here the closing fence); TestTruncated has the rest.
		{name: "@@ ... @@ header", tree: tree, want: want,
			diff: inFence(strings.Replace(plain, "@@ -4,5 +4,5 @@ import \"fmt\"", "@@ ... @@", 1))},
		{name: "bare @@ header", tree: tree, want: want, diff: inFence(strings.Replace(plain, "@@ -4,5 +4,5 @@ import \"fmt\"", "@@", 1))},
		{name: "wrong line numbers", tree: tree, want: want, diff: strings.Replace(plain, "-4,5 +4,5", "-40,5 +40,5", 1)},
		{name: "wrong counts", tree: tree, want: want, diff: inFence(strings.Replace(plain, "-4,5 +4,5", "-4,2 +4,9", 1))},
		{name: "wrong counts, another hunk after", tree: tree, want: map[string]string{"main.go": strings.Replace(hello, "return 42", "return 43", 1)},
			diff: strings.Replace(plain, "-4,5 +4,5", "-4,2 +4,9", 1) + "@@ -9,3 +9,3 @@\n func helper() int {\n-\treturn 42\n+\treturn 43\n }\n"},
		{name: "blank context lines lost their space", tree: tree, want: want,
			diff: strings.ReplaceAll(plain, "\n \n", "\n\n")},
		{name: "context line lost its leading space", tree: tree, want: want,
			diff: strings.Replace(plain, "\n func main() {\n", "\nfunc main() {\n", 1)},
		{name: "no a/ b/ prefixes", tree: tree, want: want,
			diff: strings.NewReplacer("--- a/", "--- ", "+++ b/", "+++ ").Replace(plain)},
		{name: "timestamps after a tab", tree: tree, want: want,
			diff: strings.NewReplacer("--- a/main.go", "--- main.go\t2024-01-01 10:00:00.000000000 +0100",
				"+++ b/main.go", "+++ main.go\t(working copy)").Replace(plain)},
		{name: "CRLF diff text", tree: tree, want: want, diff: strings.ReplaceAll(plain, "\n", "\r\n")},
		{name: "CRLF file, LF diff", tree: map[string]string{"main.go": strings.ReplaceAll(goFile, "\n", "\r\n")},
			want: map[string]string{"main.go": strings.ReplaceAll(hello, "\n", "\r\n")}, diff: plain},
		{name: "trailing whitespace lost", tree: map[string]string{"main.go": strings.Replace(goFile, "func main() {", "func main() {  ", 1)},
			want: map[string]string{"main.go": strings.Replace(hello, "func main() {", "func main() {  ", 1)}, diff: plain},
		{name: "indentation differs", tree: tree, want: map[string]string{"main.go": strings.Replace(goFile, "\tfmt.Println(\"hello\")\n", "    fmt.Println(\"hello, world\")\n", 1)},
			diff: "--- a/main.go\n+++ b/main.go\n@@ -5,3 +5,3 @@\n func main() {\n-    fmt.Println(\"hello\")\n+    fmt.Println(\"hello, world\")\n }\n"},
		{name: "context line that is not in the file, dropped (fuzz)", tree: tree, want: want,
			diff: inFence(strings.Replace(plain, " func main() {\n", " // main prints a greeting\n func main() {\n", 1))},
		{name: "git header with index line", tree: tree, want: want,
			diff: "diff --git a/main.go b/main.go\nindex 1111111..2222222 100644\n" + plain},
		{name: "quoted names", tree: map[string]string{"sp ace.go": goFile}, want: map[string]string{"sp ace.go": hello},
			diff: strings.NewReplacer(`--- a/main.go`, `--- "a/sp ace.go"`, `+++ b/main.go`, `+++ "b/sp ace.go"`).Replace(plain)},
		{name: "quoted octal escapes", tree: map[string]string{"é.go": goFile}, want: map[string]string{"é.go": hello},
			diff: strings.NewReplacer(`--- a/main.go`, `--- "a/\303\251.go"`, `+++ b/main.go`, `+++ "b/\303\251.go"`).Replace(plain)},
		{name: "explicit -p0", tree: map[string]string{"a/main.go": goFile}, want: map[string]string{"a/main.go": hello},
			opt: &Options{Strip: 0, NoBackup: true}, diff: plain},
		{name: "detect prefers a/x when both exist", tree: map[string]string{"main.go": goFile, "a/main.go": "other\n"},
			want: map[string]string{"main.go": hello, "a/main.go": "other\n"}, diff: plain},
		{name: "two hunks, second offset", tree: tree,
			want: map[string]string{"main.go": strings.Replace(hello, "return 42", "return 43", 1)},
			diff: plain + "@@ -9,3 +9,3 @@\n func helper() int {\n-\treturn 42\n+\treturn 43\n }\n"},
		{name: "hunks sharing context", tree: map[string]string{"f.txt": "a\nb\nc\nd\ne\n"}, want: map[string]string{"f.txt": "a\nB\nc\nD\ne\n"},
			diff: "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -3,3 +3,3 @@\n c\n-d\n+D\n e\n"},
		// Hunk 1 matches twice; hunk 2, whose context lost its trailing
		// blanks, matches once, so hunk 1 is the place before it.
		{name: "no numbers, order decides, trailing blanks lost", tree: map[string]string{"f": "a\nb\nc\nx  \ny\nz\na\nb\nc\n"},
			want: map[string]string{"f": "a\nB\nc\nx  \nY\nz\na\nb\nc\n"},
			diff: inFence("--- a/f\n+++ b/f\n@@ ... @@\n a\n-b\n+B\n c\n@@ ... @@\n x\n-y\n+Y\n z\n")},
	})
}

func TestFilesAndEdges(t *testing.T) {
	runApplyCases(t, []applyCase{
		{name: "create", tree: map[string]string{"x.go": "x\n"}, want: map[string]string{"x.go": "x\n", "new/dir/y.go": "one\ntwo\n"},
			diff: "diff --git a/new/dir/y.go b/new/dir/y.go\nnew file mode 100644\n--- /dev/null\n+++ b/new/dir/y.go\n@@ -0,0 +1,2 @@\n+one\n+two\n"},
		// A modify-diff never creates: git apply refuses it too.
		{name: "create without /dev/null", tree: map[string]string{}, refuse: DoesNotApply, errHas: "--- /dev/null",
			diff: "--- a/y.go\n+++ b/y.go\n@@ -0,0 +1 @@\n+one\n"},
		{name: "create, no newline at end", tree: map[string]string{}, want: map[string]string{"y.go": "one\ntwo"},
			diff: "--- /dev/null\n+++ b/y.go\n@@ -0,0 +1,2 @@\n+one\n+two\n\\ No newline at end of file\n"},
		{name: "create over an existing file", tree: map[string]string{"y.go": "mine\n"}, refuse: DoesNotApply, errHas: "already exists",
			diff: "--- /dev/null\n+++ b/y.go\n@@ -0,0 +1 @@\n+one\n"},
		{name: "create already applied", tree: map[string]string{"y.go": "one\n"}, already: true,
			diff: "--- /dev/null\n+++ b/y.go\n@@ -0,0 +1 @@\n+one\n"},
		{name: "delete", tree: map[string]string{"y.go": "one\ntwo\n", "z": "z\n"}, want: map[string]string{"z": "z\n"},
			diff: "--- a/y.go\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"},
		{name: "delete with lines left over", tree: map[string]string{"y.go": "one\ntwo\nthree\n"}, refuse: DoesNotApply, errHas: "does not remove",
			diff: "--- a/y.go\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"},
		{name: "modify a missing file", tree: map[string]string{}, refuse: DoesNotApply, errHas: "does not exist",
			diff: "--- a/y.go\n+++ b/y.go\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"},
		{name: "add newline at end", tree: map[string]string{"f": "a\nb"}, want: map[string]string{"f": "a\nb\n"},
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{name: "newline at end already added", tree: map[string]string{"f": "a\nb\n"}, already: true,
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{name: "remove newline at end", tree: map[string]string{"f": "a\nb\n"}, want: map[string]string{"f": "a\nc"},
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n"},
		{name: "append after a last line without newline", tree: map[string]string{"f": "a\nb"}, want: map[string]string{"f": "a\nb\nc\n"},
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n b\n+c\n"},
		{name: "append at end, applied twice", tree: map[string]string{"f": "a\nb\nc\nd\n"}, already: true,
			diff: "--- a/f\n+++ b/f\n@@ -2,2 +2,3 @@\n b\n c\n+d\n"},
		{name: "insert without context, by line number", tree: map[string]string{"f": "a\nb\n"}, want: map[string]string{"f": "a\nx\nb\n"},
			diff: "--- a/f\n+++ b/f\n@@ -1,0 +2 @@\n+x\n"},
		{name: "insert without context or numbers", tree: map[string]string{"f": "a\nb\n"}, refuse: DoesNotApply, errHas: "no context lines",
			diff: inFence("--- a/f\n+++ b/f\n@@ ... @@\n+x\n")},
		{name: "same file in two sections", tree: map[string]string{"f": "a\nb\nc\nd\ne\nf\ng\nh\n"}, want: map[string]string{"f": "A\nb\nc\nd\ne\nf\ng\nH\n"},
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n--- a/f\n+++ b/f\n@@ -7,2 +7,2 @@\n g\n-h\n+H\n"},
		{name: "CRLF file with no newline at end", tree: map[string]string{"f": "a\r\nb"}, want: map[string]string{"f": "a\r\nb\r\nc"},
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n"},
	})
}

func TestRefusals(t *testing.T) {
	f := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	tree := map[string]string{"f": f}
	runApplyCases(t, []applyCase{
		{name: "not a diff", tree: tree, refuse: BadDiff, errHas: "no diff found", diff: "I could not find the bug, sorry.\n"},
		{name: "hunk without file header", tree: tree, refuse: BadDiff, errHas: "before any file header", diff: "@@ -1,2 +1,2 @@\n a\n-b\n+B\n"},
		{name: "no hunks", tree: tree, refuse: BadDiff, errHas: "has no hunks", diff: "--- a/f\n+++ b/f\n"},
		{name: "rename", tree: tree, refuse: BadDiff, errHas: "rename",
			diff: "diff --git a/f b/g\nsimilarity index 100%\nrename from f\nrename to g\n"},
		{name: "rename with changes", tree: tree, refuse: BadDiff, errHas: "renames",
			diff: "diff --git a/f b/g\nsimilarity index 90%\nrename from f\nrename to g\n--- a/f\n+++ b/g\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n"},
		{name: "binary", tree: tree, refuse: BadDiff, errHas: "binary", diff: "diff --git a/x.png b/x.png\nBinary files a/x.png and b/x.png differ\n"},
		{name: "combined diff", tree: tree, refuse: BadDiff, errHas: "combined", diff: "--- a/f\n+++ b/f\n@@@ -1,2 -1,2 +1,2 @@@\n  a\n- b\n"},
		{name: "context only", tree: tree, refuse: BadDiff, errHas: "no lines starting", diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n b\n"},
		{name: "misplaced no-newline marker", tree: tree, refuse: BadDiff, errHas: "No newline",
			diff: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\\ No newline at end of file\n-b\n+B\n c\n"},
		{name: "does not match", tree: tree, refuse: DoesNotApply, errHas: "closest part of f",
			diff: "--- a/f\n+++ b/f\n@@ -3,3 +3,3 @@\n c\n-x\n+X\n e\n"},
		{name: "ambiguous", tree: map[string]string{"f": "a\nb\nc\na\nb\nc\n"}, refuse: DoesNotApply, errHas: "matches equally well at lines 1, 4",
			diff: inFence("--- a/f\n+++ b/f\n@@ ... @@\n a\n-b\n+B\n c\n")},
		{name: "partly applied", tree: map[string]string{"f": "A\nb\nc\nd\ne\nf\ng\nh\n"}, refuse: DoesNotApply, errHas: "partly applied",
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -7,2 +7,2 @@\n g\n-h\n+H\n"},
		{name: "second file fails", tree: map[string]string{"f": f, "g": "x\n"}, refuse: DoesNotApply, errHas: "These would apply: f hunk 1",
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-y\n+Y\n"},
		{name: "too large", tree: tree, refuse: BadDiff, errHas: "over the limit", opt: &Options{Strip: DetectStrip, MaxBytes: 10},
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n"},
		{name: "too many hunks", tree: tree, refuse: BadDiff, errHas: "more than 1 hunks", opt: &Options{Strip: DetectStrip, MaxHunks: 1},
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -7,2 +7,2 @@\n g\n-h\n+H\n"},
	})
}

// TestRefusalText checks the message a model gets: which hunk, the lines
// that did not match, the closest region with line numbers, what else
// would apply; and that it stays short for a huge hunk.
func TestRefusalText(t *testing.T) {
	var file strings.Builder
	for i := 1; i <= 200; i++ {
		file.WriteString("line " + strings.Repeat("x", i%7) + " " + string(rune('a'+i%26)) + "\n")
	}
	lines := strings.Split(file.String(), "\n")
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{"f": []byte(file.String())})
	// Hunk 2 has a wrong context line between two changes, where no
	// amount of fuzz can drop it; hunks 1 and 3 are fine.
	diff := "--- a/f\n+++ b/f\n" +
		"@@ -2,3 +2,3 @@\n " + lines[1] + "\n-" + lines[2] + "\n+CHANGED\n " + lines[3] + "\n" +
		"@@ -50,6 +50,6 @@ func Foo\n " + lines[49] + "\n " + lines[50] + "\n-" + lines[51] + "\n+CHANGED\n WRONG CONTEXT\n-" + lines[53] + "\n+CHANGED\n " + lines[54] + "\n" +
		"@@ -100,3 +100,3 @@\n " + lines[99] + "\n-" + lines[100] + "\n+CHANGED\n " + lines[101] + "\n"
	_, err := Apply(context.Background(), dir, []byte(diff), Options{Strip: DetectStrip})
	if err == nil {
		t.Fatal("applied a hunk with a wrong context line in the middle")
	}
	msg := err.Error()
	for _, want := range []string{
		"Hunk 2 of 3 for f does not apply: @@ -50,6 +50,6 @@ func Foo",
		"    WRONG CONTEXT",
		"The closest part of f is lines 50-55 (5 of 6 lines agree",
		"!    53 | " + lines[52],
		"     52 | " + lines[51],
		"These would apply: f hunk 1, 3.",
		"Nothing was changed.",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}

	// A hunk of 500 lines still gives a bounded message.
	var big strings.Builder
	big.WriteString("--- a/f\n+++ b/f\n@@ -1,500 +1,1 @@\n")
	for i := 0; i < 500; i++ {
		big.WriteString("-nope " + strings.Repeat("y", i) + "\n")
	}
	big.WriteString("+x\n")
	_, err = Apply(context.Background(), dir, []byte(big.String()), Options{Strip: DetectStrip})
	if err == nil {
		t.Fatal("applied nonsense")
	}
	if n := strings.Count(err.Error(), "\n"); n > maxReport {
		t.Errorf("message has %d lines, want at most %d", n, maxReport)
	}
}

func TestCheckAndReverse(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{"f": []byte("a\nb\nc\n")})
	diff := []byte("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")
	res, err := Apply(context.Background(), dir, diff, Options{Strip: DetectStrip, Check: true})
	if err != nil || len(res.Files) != 1 || res.Files[0] != (FileResult{Path: "f", Op: "modify", Added: 1, Removed: 1}) || res.BackupDir != "" {
		t.Fatalf("check: %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "a\nb\nc\n" {
		t.Fatalf("check wrote the file: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, ".runner")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("check made a backup directory")
	}
	if _, err := Apply(context.Background(), dir, diff, Options{Strip: DetectStrip}); err != nil {
		t.Fatal(err)
	}
	res, err = Apply(context.Background(), dir, diff, Options{Strip: DetectStrip, Reverse: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "a\nb\nc\n" {
		t.Fatalf("reverse gave %q", b)
	}
	if len(res.Hunks) != 1 || res.Hunks[0] != (HunkResult{File: "f", Line: 1}) {
		t.Errorf("hunks = %+v", res.Hunks)
	}
}

func TestResultFields(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{"f": []byte("0\n1\n2\na\nb\nc\n"), "g": []byte("x\n")})
	diff := "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+1\n+2\n--- a/g\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
	res, err := Apply(context.Background(), dir, []byte(diff), Options{Strip: DetectStrip, BackupID: "run1/apply-1"})
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []FileResult{{"f", "modify", 1, 1, ""}, {"n", "create", 2, 0, ""}, {"g", "delete", 0, 1, ""}}
	if len(res.Files) != 3 {
		t.Fatalf("files = %+v", res.Files)
	}
	for _, w := range wantFiles {
		found := false
		for _, f := range res.Files {
			found = found || f == w
		}
		if !found {
			t.Errorf("files %+v lack %+v", res.Files, w)
		}
	}
	if res.BackupDir != ".runner/backups/run1/apply-1" {
		t.Errorf("backup dir %q", res.BackupDir)
	}
	if h := res.Hunks[0]; h != (HunkResult{File: "f", Line: 4, Offset: 3}) {
		t.Errorf("hunk = %+v", h)
	}
}
