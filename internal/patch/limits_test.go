package patch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRepetitiveInputIsBounded: a file of identical lines and hunks that
// match everywhere must be refused quickly, not searched quadratically.
func TestRepetitiveInputIsBounded(t *testing.T) {
	n := 20_000
	if testing.Short() {
		n = 5_000
	}
	dir := t.TempDir()
	file := strings.Repeat("x\n", n)
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	var d strings.Builder
	d.WriteString("--- a/f\n+++ b/f\n")
	for range 50 {
		d.WriteString("@@ ... @@ x\n x\n x\n x\n-x\n+y\n x\n x\n x\n")
	}
	d.WriteString("@@ ... @@\n x\n x\n-z\n+y\n x\n x\n")
	start := time.Now()
	// In a fence: a last hunk without counts that ends the answer is
	// refused before any search (TestTruncated), and the search is what
	// this measures.
	_, err := Apply(context.Background(), dir, []byte(inFence(d.String())), Options{Strip: DetectStrip})
	if err == nil {
		t.Fatal("applied an ambiguous diff")
	}
	if el := time.Since(start); el > 20*time.Second { // generous: -race on a busy machine
		t.Errorf("took %v", el)
	}
	t.Logf("refused in %v: %.200s", time.Since(start), err)
}
