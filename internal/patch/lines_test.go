package patch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigHunksDiff is a file of n lines and a diff that changes every tenth
// of them, in hunks of about 100 lines (so what is allocated per hunk is
// small beside what is allocated per line).
func bigHunksDiff(n int) (diff, file []byte) {
	var f, d strings.Builder
	for i := range n {
		fmt.Fprintf(&f, "line %d\n", i)
	}
	d.WriteString("--- a/f.txt\n+++ b/f.txt\n")
	for start := 0; start+100 <= n; start += 100 {
		fmt.Fprintf(&d, "@@ -%d,100 +%d,100 @@\n", start+1, start+1)
		for i := start; i < start+100; i++ {
			if i%10 == 5 {
				fmt.Fprintf(&d, "-line %d\n+changed %d\n", i, i)
			} else {
				fmt.Fprintf(&d, " line %d\n", i)
			}
		}
	}
	return []byte(d.String()), []byte(f.String())
}

// TestParseHoldsLinesAsOffsets: reading a diff holds where its lines end,
// not a string per line (the 9.8 MB diff's lines as strings
// would be a 7 MB array of pointers, memory to fault in and for the collector
// to scan). Bytes allocated per line of the diff, counted, not timed: a
// line's op (12 bytes) and its end (4 bytes and some room) fit under
// 24; with a 16-byte string per line as well, it was over 30.
func TestParseHoldsLinesAsOffsets(t *testing.T) {
	const n = 100_000
	diff, _ := bigHunksDiff(n)
	lines := strings.Count(string(diff), "\n")
	var before, after runtimeMem
	const runs = 3
	before.read()
	for range runs {
		fds, _, err := parse(diff, DefaultMaxHunks)
		if err != nil || len(fds) != 1 || len(fds[0].hunks) != n/100 {
			t.Fatalf("parse: %d files, %v", len(fds), err)
		}
	}
	after.read()
	per := float64(after.bytes-before.bytes) / runs / float64(lines)
	t.Logf("%.1f bytes allocated per line of a %d-line diff", per, lines)
	if per > 24 {
		t.Errorf("reading the diff allocates %.1f bytes per line, want at most 24 (no string per line)", per)
	}
}

// TestApplyReadsLinesAsBefore: the shapes of diff text whose reading
// changed when lines became offsets (where a line ends, CRs, fences, the
// end of the text) apply, or are refused, as before; and a refusal names
// the line of the answer as written, also inside a fence (it named the
// line's place among the fenced lines: "line 1" for line 4).
func TestApplyReadsLinesAsBefore(t *testing.T) {
	huge := strings.Repeat("y", 1<<20)
	cases := []struct {
		name   string
		files  map[string]string
		diff   string
		want   map[string]string // "" content with gone: the file must not exist
		gone   []string
		refuse Kind
		errHas []string
	}{
		{name: "fenced, with prose around",
			files: map[string]string{"f": "a\nb\nc\n"},
			diff:  "Here is the fix:\n\n```diff\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n```\nThat is all.\n",
			want:  map[string]string{"f": "a\nB\nc\n"}},
		{name: "two fenced blocks, one diff",
			files: map[string]string{"f": "a\nb\nc\n", "g": "x\ny\n"},
			diff:  "First:\n```diff\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n```\nThen:\n```diff\n--- a/g\n+++ b/g\n@@ -1,2 +1,2 @@\n x\n-y\n+Y\n```\n",
			want:  map[string]string{"f": "a\nB\nc\n", "g": "x\nY\n"}},
		{name: "fenced and CRLF throughout",
			files: map[string]string{"f": "a\nb\nc\n"},
			diff:  "Fix:\r\n```diff\r\n--- a/f\r\n+++ b/f\r\n@@ -1,3 +1,3 @@\r\n a\r\n-b\r\n+B\r\n c\r\n```\r\n",
			want:  map[string]string{"f": "a\nB\nc\n"}},
		{name: "CRLF diff with a blank context line",
			files: map[string]string{"f": "a\n\nb\n"},
			diff:  "--- a/f\r\n+++ b/f\r\n@@ -1,3 +1,3 @@\r\n a\r\n \r\n-b\r\n+B\r\n",
			want:  map[string]string{"f": "a\n\nB\n"}},
		{name: "no newline after the diff's last line (a context line)",
			files: map[string]string{"f": "a\nb\nc"},
			diff:  "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c",
			want:  map[string]string{"f": "a\nB\nc"}},
		{name: "a 1 MiB line added and removed, no newline at the end of either",
			files: map[string]string{"f": "a\n" + huge},
			diff:  "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-" + huge + "\n\\ No newline at end of file\n+" + huge + "z\n\\ No newline at end of file\n",
			want:  map[string]string{"f": "a\n" + huge + "z"}},
		{name: "a new empty file (git's header, no hunks) beside a change",
			files: map[string]string{"f": "a\nb\n"},
			diff:  "diff --git a/e b/e\nnew file mode 100644\nindex 0000000..e69de29\ndiff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n",
			want:  map[string]string{"f": "a\nB\n", "e": ""}},
		{name: "a file emptied and deleted",
			files: map[string]string{"f": "a\nb\n"},
			diff:  "--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n",
			gone:  []string{"f"}},
		{name: "a rename is refused, nothing changed",
			files:  map[string]string{"f": "a\n"},
			diff:   "diff --git a/f b/g\nsimilarity index 100%\nrename from f\nrename to g\n",
			refuse: BadDiff, errHas: []string{"line 1:", "rename"}},
		{name: "binary refused with the answer's line number, inside a fence",
			files:  map[string]string{"f": "a\n"},
			diff:   "Prose.\nMore prose.\n```diff\ndiff --git a/f b/f\nindex 1..2 100644\nBinary files a/f and b/f differ\n```\n",
			refuse: BadDiff, errHas: []string{"line 4:", "binary"}},
		{name: "cut off in an unclosed fence: the answer's own line numbers",
			files:  map[string]string{"f": "a\nb\nc\nd\n"},
			diff:   "Fix:\n\n```diff\n--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n",
			refuse: BadDiff, errHas: []string{"cut off after line 9", "line 6"}},
		{name: "empty text",
			files: map[string]string{"f": "a\n"}, diff: "",
			refuse: BadDiff, errHas: []string{"no diff found"}},
		{name: "only CRs, no newline: one line, read as a cut header",
			files: map[string]string{"f": "a\n"}, diff: "--- a/f\r+++ b/f\r@@ -1 +1 @@\r-a\r+b\r",
			refuse: BadDiff, errHas: []string{"line 1"}},
		{name: "a hunk before any header, fenced: the answer's line",
			files:  map[string]string{"f": "a\n"},
			diff:   "Prose.\n\n```diff\n@@ -1 +1 @@\n-a\n+b\n```\n",
			refuse: BadDiff, errHas: []string{"line 4:", "before any file header"}},
		{name: "a header with no hunks, fenced, then prose: the answer's line",
			files:  map[string]string{"f": "a\n"},
			diff:   "Prose.\n```diff\n--- a/f\n+++ b/f\n```\nand\n```diff\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n```\n",
			refuse: BadDiff, errHas: []string{"line 3:", "no hunks"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tree := map[string][]byte{}
			for p, s := range tc.files {
				tree[p] = []byte(s)
			}
			writeTree(t, dir, tree)
			_, err := Apply(context.Background(), dir, []byte(tc.diff), Options{Strip: 1, NoBackup: true})
			if tc.errHas != nil {
				var re *RefusedError
				if !errors.As(err, &re) || re.Kind != tc.refuse {
					t.Fatalf("err = %v, want a %v refusal", err, tc.refuse)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("refusal %q does not say %q", err, s)
					}
				}
				for p, s := range tc.files {
					if got, _ := os.ReadFile(filepath.Join(dir, p)); string(got) != s {
						t.Errorf("a refused diff changed %s to %q", p, clipBytes(string(got)))
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for p, s := range tc.want {
				got, err := os.ReadFile(filepath.Join(dir, p))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != s {
					t.Errorf("%s = %q, want %q", p, clipBytes(string(got)), clipBytes(s))
				}
			}
			for _, p := range tc.gone {
				if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s should be gone: %v", p, err)
				}
			}
		})
	}
}
