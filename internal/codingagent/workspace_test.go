package codingagent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/planrunner/runner/internal/patch"
)

// TestDiffApplies checks that the diff of a change, applied to the files
// as they were, gives the files as they became, modes included.
func TestDiffApplies(t *testing.T) {
	type file struct {
		data string
		mode os.FileMode
	}
	cases := []struct {
		name          string
		before, after map[string]file
		want          string
	}{
		{"modify", map[string]file{"a.txt": {"1\n2\n3\n", 0o644}}, map[string]file{"a.txt": {"1\ntwo\n3\n", 0o644}},
			"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n"},
		{"create executable", map[string]file{}, map[string]file{"run.sh": {"echo hi\n", 0o755}},
			"diff --git a/run.sh b/run.sh\nnew file mode 100755\n--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1,1 @@\n+echo hi\n"},
		{"delete", map[string]file{"old.txt": {"x\n", 0o644}}, map[string]file{},
			"diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-x\n"},
		{"mode only", map[string]file{"t.sh": {"true\n", 0o644}}, map[string]file{"t.sh": {"true\n", 0o755}},
			"diff --git a/t.sh b/t.sh\nold mode 100644\nnew mode 100755\n"},
		{"no newline at end", map[string]file{"n.txt": {"a\nb", 0o644}}, map[string]file{"n.txt": {"a\nc", 0o644}},
			"diff --git a/n.txt b/n.txt\n--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
	}
	write := func(dir string, files map[string]file) {
		for name, f := range files {
			p := filepath.Join(dir, name)
			os.WriteFile(p, []byte(f.data), f.mode)
			os.Chmod(p, f.mode)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := t.TempDir(), t.TempDir()
			write(a, tc.before)
			write(b, tc.after)
			sa, _ := Take(a)
			sb, _ := Take(b)
			c := Diff(sa, sb)
			if c.Diff != tc.want {
				t.Fatalf("diff:\n%s\nwant:\n%s", c.Diff, tc.want)
			}
			if _, err := patch.Apply(context.Background(), a, []byte(c.Diff), patch.Options{Strip: patch.DetectStrip, NoBackup: true}); err != nil {
				t.Fatalf("apply: %v", err)
			}
			sa2, _ := Take(a)
			if again := Diff(sa2, sb); again.Diff != "" {
				t.Errorf("after applying, still differs:\n%s", again.Diff)
			}
		})
	}
}
