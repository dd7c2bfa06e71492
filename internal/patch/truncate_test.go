package patch

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestTruncated: an answer cut off at the model's token limit is refused,
// saying where it stopped, and the tree is left as it was; what the writer
// visibly finished (a hunk followed by a header or a closing fence, a
// last hunk that meets its counts) still applies. Before, every refused
// case here but the rename-like ones was applied with success.
func TestTruncated(t *testing.T) {
	const f = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\n"
	const head = "--- a/f\n+++ b/f\n"
	const h1 = "@@ -2,7 +2,8 @@\n b\n c\n d\n-e\n+E\n+E2\n f\n g\n h\n"
	const h2 = "@@ -10,4 +11,4 @@\n j\n k\n-l\n+L\n m\n"
	const both = "a\nb\nc\nd\nE\nE2\nf\ng\nh\ni\nj\nk\nL\nm\nn\n"
	const one = "a\nb\nc\nd\nE\nE2\nf\ng\nh\ni\nj\nk\nl\nm\nn\n"
	cases := []struct {
		name string
		tree map[string]string
		diff string
		has  string            // the refusal says this ("" : it applies)
		want map[string]string // when it applies
		// ended: the writer says the answer ended whole (Options.Ended).
		ended bool
	}{
		// Refused: the answer stopped inside the diff.
		{name: "last hunk lost its last line", diff: head + strings.TrimSuffix(h1, " h\n"), has: "cut off after line 11"},
		{name: "last hunk lost its last lines", diff: head + h1 + "@@ -10,4 +11,4 @@\n j\n k\n", has: "promises 4 old and 4 new lines but has 2 and 2"},
		{name: "cut in the middle of an added line", diff: head + "@@ -2,3 +2,4 @@\n b\n c\n-d\n+D\n+tuple(ma", has: `line 8 of your answer ("+tuple(ma") has no newline`},
		{name: "cut in the middle of a line, counts short", diff: head + strings.TrimSuffix(h1, "\n g\n h\n") + "\n g", has: "cut off after line 11"},
		{name: "cut in the middle of the last context line", diff: head + h1 + h2[:len(h2)-2], has: "line 18 of your answer, the last line of hunk 2 of f"},
		{name: "cut in a hunk's last line, the next hunks lost", diff: strings.TrimSuffix(head+h1, "h\n"), has: "is not a whole line of the file"},
		{name: "cut in an earlier hunk", diff: head + "@@ -2,7 +2,8 @@\n b\n c\n d\n-e\n", has: "inside hunk 1 of b/f"},
		{name: "cut right after a hunk header", diff: head + h1 + "@@ -10,4 +11,4 @@\n", has: "right after the header of hunk 2"},
		{name: "cut inside a hunk header", diff: head + h1 + "@@ -10,4 +1", has: "right after the header of hunk 2"},
		{name: "cut inside a diff --git line", diff: head + h1 + "diff --gi", has: `header (line 13, "diff --gi")`},
		{name: "cut after a diff --git line", tree: map[string]string{"g": "x\n"}, diff: head + h1 + "diff --git a/g b/g\n", has: "before its \"---\" and \"+++\" lines"},
		{name: "cut after a diff --git line and its index", tree: map[string]string{"g": "x\n"}, diff: head + h1 + "diff --git a/g b/g\nindex 1234567..89abcde 100644\n", has: "cut off after line 14"},
		{name: "cut after a new file's index line", diff: head + h1 + "diff --git a/g b/g\nnew file mode 100644\nindex 0000000..89abcde\n", has: "says the file has content"},
		{name: "cut after the next file's header", tree: map[string]string{"g": "x\n"}, diff: head + h1 + "--- a/g\n+++ b/g\n", has: "which has no hunks"},
		{name: "cut after an Index: line", tree: map[string]string{"g": "x\n"}, diff: head + h1 + "Index: g\n", has: `"Index: g"`},
		{name: "cut in a no-newline marker", diff: head + "@@ -13,2 +13,2 @@\n m\n-n\n+N\n\\", has: "No newline at end of file\" line"},
		{name: "cut after a lone --- line", tree: map[string]string{"g": "x\n"}, diff: head + h1 + "--- a/g\n", has: "more lines than its header says"},
		{name: "fence never closed", diff: "Here:\n```diff\n" + head + strings.TrimSuffix(h1, " h\n"), has: "cut off after line 13"},
		{name: "last hunk without counts", diff: head + "@@ ... @@\n d\n-e\n+E\n f\n", has: `"@@ -START,3 +START,3 @@"`},
		{name: "last hunk longer than its header", diff: head + "@@ -2,2 +2,2 @@\n b\n c\n-d\n+D\n e\n", has: `correct its header to "@@ -2,4 +2,4 @@"`},

		// Applied: the writer finished.
		{name: "whole", diff: head + h1 + h2, want: map[string]string{"f": both}},
		{name: "whole, no newline at the very end", diff: strings.TrimSuffix(head+h1+h2, "\n"), want: map[string]string{"f": both}},
		{name: "whole, prose after", diff: head + h1 + h2 + "\nThis renames l.", want: map[string]string{"f": both}},
		{name: "miscounted hunk followed by another", diff: head + strings.Replace(h1, "-2,7 +2,8", "-2,9 +2,11", 1) + h2, want: map[string]string{"f": both}},
		{name: "miscounted last hunk, fence closed", diff: inFence(head + strings.Replace(h1, "-2,7 +2,8", "-2,9 +2,11", 1)), want: map[string]string{"f": one}},
		{name: "no counts, fence closed", diff: inFence(head + "@@ ... @@\n d\n-e\n+E\n+E2\n f\n"), want: map[string]string{"f": one}},
		// The answer went on, so it was not cut in the hunk; the blank
		// line makes up the count as a blank context line, which fuzz
		// drops.
		{name: "last hunk one line short, prose after", diff: head + strings.TrimSuffix(h1, " h\n") + "\nThat should do it\n", want: map[string]string{"f": one}},

		// The writer says the answer ended whole: a last hunk is read by
		// its body, as a closed fence would have it; every other sign of
		// a cut still refuses.
		{name: "ended: last hunk without counts", ended: true, diff: head + "@@ ... @@\n d\n-e\n+E\n+E2\n f\n", want: map[string]string{"f": one}},
		{name: "ended: last hunk longer than its header", ended: true, diff: head + strings.Replace(h1, "-2,7 +2,8", "-2,2 +2,3", 1), want: map[string]string{"f": one}},
		{name: "ended: last hunk shorter than its header", ended: true, diff: head + strings.Replace(h1, "-2,7 +2,8", "-2,9 +2,11", 1), want: map[string]string{"f": one}},
		{name: "ended: a bare @@", ended: true, diff: head + "@@\n d\n-e\n+E\n+E2\n f\n", want: map[string]string{"f": one}},
		{name: "ended, yet cut in the middle of an added line", ended: true, diff: head + "@@ -2,3 +2,4 @@\n b\n c\n-d\n+D\n+tuple(ma", has: `line 8 of your answer ("+tuple(ma") has no newline`},
		{name: "ended, yet cut inside a diff --git line", ended: true, diff: head + h1 + "diff --gi", has: `header (line 13, "diff --gi")`},
		{name: "ended, yet cut right after a hunk header", ended: true, diff: head + h1 + "@@ -10,4 +11,4 @@\n", has: "right after the header of hunk 2"},
		{name: "new empty file last", diff: head + h1 + "diff --git a/g b/g\nnew file mode 100644\nindex 0000000..e69de29\n", want: map[string]string{"f": one, "g": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tree := map[string][]byte{"f": []byte(f)}
			for p, s := range tc.tree {
				tree[p] = []byte(s)
			}
			writeTree(t, dir, tree)
			_, err := Apply(context.Background(), dir, []byte(tc.diff), Options{Strip: DetectStrip, NoBackup: true, Ended: tc.ended})
			got := readTree(t, dir)
			if tc.has == "" {
				if err != nil {
					t.Fatalf("apply: %v", err)
				}
				want := map[string][]byte{}
				for p, s := range tree {
					want[p] = s
				}
				for p, s := range tc.want {
					want[p] = []byte(s)
				}
				if !sameTree(got, want) {
					t.Errorf("wrong result: %s", firstDiff(got, want))
				}
				return
			}
			var re *RefusedError
			if !errors.As(err, &re) || !re.Truncated {
				t.Fatalf("want a refusal as cut off, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.has) {
				t.Errorf("the refusal does not say %q:\n%s", tc.has, err)
			}
			if !sameTree(got, tree) {
				t.Errorf("refused but the tree changed: %s", firstDiff(got, tree))
			}
		})
	}
}

// CheckEnded reads a text as Apply with Options.Ended does; Check as
// without.
func TestCheckEnded(t *testing.T) {
	const head = "--- a/f\n+++ b/f\n"
	tests := []struct {
		name, diff   string
		plain, ended bool // whether Check and CheckEnded accept it
	}{
		{"counts right", head + "@@ -1,2 +1,2 @@\n a\n-b\n+B\n", true, true},
		{"miscounted last hunk", head + "@@ -1,5 +1,5 @@\n a\n-b\n+B\n", false, true},
		{"no counts", head + "@@ ... @@\n a\n-b\n+B\n", false, true},
		{"cut mid-line", head + "@@ -1,2 +1,2 @@\n a\n-b\n+B", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, plain := Check([]byte(tc.diff), FormatUnified)
			_, ended := CheckEnded([]byte(tc.diff), FormatAuto)
			if (plain == nil) != tc.plain || (ended == nil) != tc.ended {
				t.Errorf("Check: %v; CheckEnded: %v", plain, ended)
			}
		})
	}
}
