package patch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// TestPathLimits: names past what a file system can hold (PATH_MAX,
// NAME_MAX) or deeper than maxDepth directories are refused before
// anything is looked at or made. 3,000 levels once kept an apply busy for
// minutes and left 2,500 empty directories behind.
func TestPathLimits(t *testing.T) {
	cases := []struct {
		name, path, has string
	}{
		{"3,000 levels", strings.Repeat("a/", 3000) + "f", "over the limit of 4096"},
		{"long path", strings.Repeat("abcdefghij/", 400) + "f", "over the limit of 4096"},
		{"long name", "dir/" + strings.Repeat("x", 256), "over the limit of 255"},
		{"deep", strings.Repeat("d/", maxDepth+1) + "f", "directories deep"},
		{"deep, a few at a time", strings.Repeat("ab/", maxDepth+1) + "f", "directories deep"},
	}
	for _, tc := range cases {
		for _, create := range []bool{true, false} {
			t.Run(tc.name, func(t *testing.T) {
				dir := twoFileTree(t)
				before := snapshot(t, dir)
				diff := "--- a/" + tc.path + "\n+++ b/" + tc.path + "\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n"
				if create {
					diff = "--- /dev/null\n+++ b/" + tc.path + "\n@@ -0,0 +1 @@\n+new\n"
				}
				_, err := Apply(context.Background(), dir, []byte(twoFiles+diff), Options{Strip: DetectStrip})
				if k, ok := IsRefused(err); !ok || k != Unsafe {
					t.Fatalf("want a refusal as unsafe, got %v", err)
				}
				if !strings.Contains(err.Error(), tc.has) || len(err.Error()) > 400 {
					t.Errorf("the refusal does not say %q (or is too long):\n%s", tc.has, err)
				}
				if !sameSnapshot(before, snapshot(t, dir)) {
					t.Errorf("tree changed: %v", snapshot(t, dir))
				}
			})
		}
	}
	// At the limits it applies.
	dir := t.TempDir()
	p := strings.Repeat("d/", maxDepth) + strings.Repeat("n", maxNameBytes)
	if _, err := Apply(context.Background(), dir, []byte("--- /dev/null\n+++ b/"+p+"\n@@ -0,0 +1 @@\n+new\n"), Options{Strip: DetectStrip}); err != nil {
		t.Fatalf("a path at the limits: %v", err)
	}
}

// TestStopsInEveryPhase: an apply whose context ends (Ctrl-C, SIGTERM, a
// step's timeout) stops in whichever phase it is, says it was stopped,
// and leaves the tree as it was: files, modes, no new directory, no
// temporary file, no backup.
func TestStopsInEveryPhase(t *testing.T) {
	for _, phase := range []string{"parse", "plan", "stage", "backup", "commit"} {
		for _, nth := range []int{1, 2} {
			if phase == "parse" && nth == 2 {
				continue // once per apply
			}
			t.Run(phase, func(t *testing.T) {
				dir := twoFileTree(t)
				before := snapshot(t, dir)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var mu sync.Mutex // the hook runs on the planner's goroutines
				seen := 0
				testHook = func(ph, _ string) {
					mu.Lock()
					defer mu.Unlock()
					if ph == phase {
						if seen++; seen == nth {
							cancel()
						}
					}
				}
				defer func() { testHook = nil }()
				_, err := Apply(ctx, dir, []byte(twoFiles), Options{Strip: DetectStrip})
				if seen < nth {
					t.Fatalf("phase %s ran %d times, not %d: it is not checked", phase, seen, nth)
				}
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v, want it to say it was cancelled", err)
				}
				if _, refused := IsRefused(err); refused {
					t.Errorf("a cancellation reported as a refusal: %v", err)
				}
				if after := snapshot(t, dir); !sameSnapshot(before, after) {
					t.Errorf("tree changed:\nbefore %v\nafter  %v", before, after)
				}
			})
		}
	}
}
