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

// hunkDiff is a file of 4n lines and a diff of n hunks, each changing one
// line, with line numbers that hold.
func hunkDiff(n int) (diff, file []byte) {
	var f, d strings.Builder
	for i := range 4 * n {
		fmt.Fprintf(&f, "line %d\n", i)
	}
	d.WriteString("--- a/f.txt\n+++ b/f.txt\n")
	for k := range n {
		a := 4*k + 1
		fmt.Fprintf(&d, "@@ -%d,3 +%d,3 @@\n line %d\n-line %d\n+changed %d\n line %d\n", a+1, a+1, a, a+1, a+1, a+2)
	}
	return []byte(d.String()), []byte(f.String())
}

// TestParseAndPlaceAllocateNotPerHunk: reading a diff and placing its
// hunks where their line numbers say makes a number of allocations that
// does not grow with the hunks (one or more small allocations
// per hunk, per hunk body, per hunk's ops and per hunk's sides were most
// of the parse's and the placing's cost on a 24,000-hunk diff). Counts,
// not times: they do not depend on the machine's load.
func TestParseAndPlaceAllocateNotPerHunk(t *testing.T) {
	allocs := func(n int) float64 {
		diff, file := hunkDiff(n)
		return testing.AllocsPerRun(3, func() {
			fds, _, err := parse(diff, DefaultMaxHunks)
			if err != nil || len(fds) != 1 || len(fds[0].hunks) != n {
				t.Fatalf("parse: %d files, %v", len(fds), err)
			}
			c := splitContent(file)
			if !hintsHold(c, fds[0].hunks) {
				t.Fatal("the line numbers should hold")
			}
			pls, fails := placeAll(c, fds[0].hunks, true)
			if len(pls) != n || len(fails) != 0 {
				t.Fatalf("placed %d of %d hunks", len(pls), n)
			}
		})
	}
	small, large := allocs(200), allocs(2200)
	t.Logf("%.0f allocations for 200 hunks, %.0f for 2,200", small, large)
	if per := (large - small) / 2000; per > 0.5 {
		t.Errorf("%.2f allocations per hunk (%.0f for 200 hunks, %.0f for 2,200); want none per hunk", per, small, large)
	}
}

// TestApplyLineShapes: the shapes of lines whose reading was changed for
// speed (bodies shared with the diff's lines, or copied when a line was
// repaired or a marker read; a diff's CRLF dropped when every line has
// one) apply as before, byte for byte.
func TestApplyLineShapes(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	cases := []struct {
		name       string
		file, diff string
		want       string
		refuse     Kind
		errHas     string
	}{
		{name: "plain", file: "a\nb\nc\n",
			diff: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", want: "a\nB\nc\n"},
		{name: "every line CRLF: the diff's CRs dropped, the file's kept",
			file: "a\r\nb\r\nc\r\n",
			diff: "--- a/f\r\n+++ b/f\r\n@@ -1,3 +1,3 @@\r\n a\r\n-b\r\n+B\r\n c\r\n", want: "a\r\nB\r\nc\r\n"},
		{name: "every line CRLF, the last without a newline",
			file: "a\nb\nc\n",
			diff: "--- a/f\r\n+++ b/f\r\n@@ -1,3 +1,3 @@\r\n a\r\n-b\r\n+B\r\n c\r", want: "a\nB\nc\n"},
		{name: "CR on some lines only: the line's own",
			file: "a\nb\nc\n",
			diff: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\r\n c\n", want: "a\nB\r\nc\n"},
		{name: "no newline at the end, added",
			file: "a\nb\n",
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n\\ No newline at end of file\n", want: "a\nB"},
		{name: "no newline at the end, removed",
			file: "a\nb",
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n", want: "a\nB\n"},
		{name: "context lines that lost their space",
			file: "a\n\nb\nc\n",
			diff: "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\na\n\n-b\n+B\n c\n", want: "a\n\nB\nc\n"},
		{name: "a line of 1 MiB",
			file: "a\n" + huge + "\nc\n",
			diff: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-" + huge + "\n+" + huge + "y\n c\n", want: "a\n" + huge + "y\nc\n"},
		{name: "binary diff refused",
			file: "a\n", diff: "diff --git a/f b/f\nindex 1..2 100644\nBinary files a/f and b/f differ\n",
			refuse: BadDiff, errHas: "binary"},
		{name: "git binary patch refused",
			file: "a\n", diff: "diff --git a/f b/f\nindex 1..2 100644\nGIT binary patch\nliteral 1\nIcmZ?l000\n",
			refuse: BadDiff, errHas: "binary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string][]byte{"f": []byte(tc.file)})
			_, err := Apply(context.Background(), dir, []byte(tc.diff), Options{Strip: 1, NoBackup: true})
			got, rerr := os.ReadFile(filepath.Join(dir, "f"))
			if rerr != nil {
				t.Fatal(rerr)
			}
			if tc.errHas != "" {
				var re *RefusedError
				if !errors.As(err, &re) || re.Kind != tc.refuse || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want a %v refusal mentioning %q", err, tc.refuse, tc.errHas)
				}
				if string(got) != tc.file {
					t.Errorf("a refused diff changed the file to %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("file = %q, want %q", clipBytes(string(got)), clipBytes(tc.want))
			}
		})
	}
}

func clipBytes(s string) string {
	if len(s) > 80 {
		return s[:40] + "..." + s[len(s)-40:]
	}
	return s
}
