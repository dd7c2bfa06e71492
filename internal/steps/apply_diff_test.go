package steps

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// applyPlan runs a plan in workdir and returns its board.
func applyPlan(t *testing.T, workdir, src string) (*board.Board, error) {
	t.Helper()
	return runPlan(t, workdir, src, nil, zerolog.Nop())
}

// applyVisits returns the saved results of every visit of label, with
// their errors.
func applyVisits(t *testing.T, b *board.Board, label string) ([]ApplyDiffResult, []string) {
	t.Helper()
	var out []ApplyDiffResult
	var errs []string
	for _, s := range b.Steps() {
		if s.Label != label {
			continue
		}
		var r ApplyDiffResult
		if err := json.Unmarshal(s.Result, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
		errs = append(errs, s.Error)
	}
	return out, errs
}

func applyWorkdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pkg", "add.go"), []byte("package pkg\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The diff as a model writes it: prose, a fence, no line numbers.
const applyModelDiff = `Here is the fix:

` + "```diff" + `
--- a/pkg/add.go
+++ b/pkg/add.go
@@ ... @@
 func Add(a, b int) int {
-	return a - b
+	return a + b
 }
` + "```\n"

func TestApplyDiffStep(t *testing.T) {
	dir := applyWorkdir(t)
	plan := `
version: 1
vars:
  patch: |
` + applyIndent(applyModelDiff, "    ") + `
steps:
  - label: apply
    type: apply_diff
    diff: ${{ vars.patch }}
    max_visits: 3
  - label: again
    type: branch
    cases:
      - when: steps.apply.visits < 2 && !steps.apply.already_applied && steps.apply.files[0].path == "pkg/add.go"
        goto: apply
`
	b, err := applyPlan(t, dir, plan)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "pkg", "add.go"))
	if !strings.Contains(string(got), "return a + b") {
		t.Fatalf("file not patched:\n%s", got)
	}
	res, errs := applyVisits(t, b, "apply")
	if len(res) != 2 {
		t.Fatalf("%d visits", len(res))
	}
	first := res[0]
	if len(first.Files) != 1 || first.Files[0].Path != "pkg/add.go" || first.Files[0].Op != "modify" ||
		first.Files[0].Added != 1 || first.Files[0].Removed != 1 {
		t.Errorf("files = %+v", first.Files)
	}
	if first.BackupDir != ".runner/backups/run1/apply-1" {
		t.Errorf("backup_dir = %q", first.BackupDir)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, first.BackupDir, "pkg", "add.go")); !strings.Contains(string(b), "a - b") {
		t.Errorf("backup holds %q", b)
	}
	if len(first.Hunks) != 1 || first.Hunks[0].Line != 3 || first.Hunks[0].File != "pkg/add.go" {
		t.Errorf("hunks = %+v", first.Hunks)
	}
	// The loop came back with the same diff: already applied, not twice.
	if !res[1].AlreadyApplied || errs[1] != "" || res[1].BackupDir != "" {
		t.Errorf("second visit = %+v, %q", res[1], errs[1])
	}
}

func TestApplyDiffStepRefusal(t *testing.T) {
	dir := applyWorkdir(t)
	bad := strings.Replace(applyModelDiff, "return a - b", "return a * b", 1)
	if err := os.WriteFile(filepath.Join(dir, "fix.diff"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := applyPlan(t, dir, `
version: 1
steps:
  - label: apply
    type: apply_diff
    diff_file: fix.diff
    continue_on_error: true
  - label: report
    type: command
    run: echo ${{ steps.apply.failed }}
`)
	if err != nil {
		t.Fatal(err)
	}
	_, errs := applyVisits(t, b, "apply")
	for _, want := range []string{"Hunk 1 of 1 for pkg/add.go does not apply", "return a * b", "Nothing was changed"} {
		if !strings.Contains(errs[0], want) {
			t.Errorf("error lacks %q:\n%s", want, errs[0])
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "pkg", "add.go"))
	if !strings.Contains(string(got), "return a - b") {
		t.Errorf("file changed:\n%s", got)
	}
}

func TestApplyDiffStepOptions(t *testing.T) {
	dir := applyWorkdir(t)
	diff := "--- add.go\n+++ add.go\n@@ -4 +4 @@\n-\treturn a - b\n+\treturn a + b\n"
	if err := os.WriteFile(filepath.Join(dir, "fix.diff"), []byte(diff), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := applyPlan(t, dir, `
version: 1
steps:
  - label: dry
    type: apply_diff
    diff_file: ${{ "fix" + ".diff" }}
    dir: pkg
    check: true
  - label: real
    type: apply_diff
    diff_file: fix.diff
    dir: pkg
    strip: 0
    backup: false
  - label: undo
    type: apply_diff
    diff_file: fix.diff
    dir: pkg
    reverse: true
`)
	if err != nil {
		t.Fatal(err)
	}
	dry, _ := applyVisits(t, b, "dry")
	real, _ := applyVisits(t, b, "real")
	undo, _ := applyVisits(t, b, "undo")
	if len(dry[0].Files) != 1 || dry[0].BackupDir != "" {
		t.Errorf("check result = %+v", dry[0])
	}
	if real[0].BackupDir != "" {
		t.Errorf("backup: false made %q", real[0].BackupDir)
	}
	if undo[0].BackupDir != ".runner/backups/run1/undo-1" {
		t.Errorf("undo backup = %q", undo[0].BackupDir)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "pkg", "add.go"))
	if !strings.Contains(string(got), "return a - b") {
		t.Errorf("after apply and reverse:\n%s", got)
	}
}

// TestApplyDiffStepKeepsBackupsBounded: a step applying and undoing in a
// loop keeps its keep_backups newest backups, pruning the older ones.
func TestApplyDiffStepKeepsBackupsBounded(t *testing.T) {
	dir := applyWorkdir(t)
	diff := "--- add.go\n+++ add.go\n@@ -4 +4 @@\n-\treturn a - b\n+\treturn a + b\n"
	if err := os.WriteFile(filepath.Join(dir, "fix.diff"), []byte(diff), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := applyPlan(t, dir, `
version: 1
steps:
  - label: fix
    type: apply_diff
    diff_file: fix.diff
    dir: pkg
    keep_backups: 3
    max_visits: 5
  - label: undo
    type: apply_diff
    diff_file: fix.diff
    dir: pkg
    reverse: true
    keep_backups: 3
    max_visits: 5
  - label: again
    type: branch
    cases:
      - when: steps.fix.visits < 5
        goto: fix
`)
	if err != nil {
		t.Fatal(err)
	}
	undo, _ := applyVisits(t, b, "undo")
	if len(undo) != 5 {
		t.Fatalf("%d visits of undo", len(undo))
	}
	ents, err := os.ReadDir(filepath.Join(dir, "pkg", ".runner", "backups", "run1"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := "fix-5 undo-4 undo-5"; strings.Join(names, " ") != want {
		t.Errorf("backups kept: %v, want %s", names, want)
	}
}

func TestApplyDiffStepDecode(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"", "needs exactly one of diff and diff_file"},
		{"\n    diff: x\n    diff_file: y", "needs exactly one of diff and diff_file"},
		{"\n    diff: x\n    strip: -1", "strip must be 0 or more"},
		{"\n    diff: x\n    backup: maybe", "backup"},
		{"\n    diff: x\n    keep_backups: -1", "keep_backups must be 0 (keep every backup) or more"},
		{"\n    diff: x\n    keep_backups: many", "keep_backups"},
		{"\n    diff: x\n    reverse_it: true", `unknown field "reverse_it"`},
		// A diff written into the plan is read at load.
		{"\n    diff: not a diff", `plan.yaml:5:11: diff: no diff found`},
	} {
		_, err := engine.Compile("plan.yaml", []byte("version: 1\nsteps:\n  - label: a\n    type: apply_diff"+tc.body+"\n"), Registry())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.body, err, tc.want)
		}
	}
	// One made when the plan runs is read then.
	if _, err := engine.Compile("plan.yaml", []byte("version: 1\nsteps:\n  - label: a\n    type: apply_diff\n    diff: ${{ 'x' }}\n"), Registry()); err != nil {
		t.Errorf("a templated diff: %v", err)
	}
}

func applyIndent(s, pre string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pre + l
	}
	return strings.Join(lines, "\n")
}

// TestApplyDiffStepHostile: the step refuses, as runner apply does, a
// diff that plants files in .git or .runner under any spelling, a
// symbolic link, or a change to a file that is not there; nothing in the
// directory changes. (The full table is internal/patch TestHostileDiffs.)
func TestApplyDiffStepHostile(t *testing.T) {
	create := func(p string) string { return "--- /dev/null\n+++ b/" + p + "\n@@ -0,0 +1 @@\n+[core]\n" }
	cases := map[string]string{
		"nested .git":         create("sub/.git/config"),
		"upper case":          create(".GIT/config"),
		"trailing dot":        create("sub/.git./config"),
		"trailing space":      create(".git /config"),
		"NTFS short name":     create("GIT~1/config"),
		"NTFS stream":         create(".git::$INDEX_ALLOCATION/config"),
		"HFS ignorable":       create(".g\u200cit/config"),
		"backups":             create("x/.Runner/backups/y"),
		"symlink":             "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc/passwd\n",
		"modify missing file": "--- a/pkg/none.go\n+++ b/pkg/none.go\n@@ -0,0 +1 @@\n+package pkg\n",
	}
	for name, diff := range cases {
		t.Run(name, func(t *testing.T) {
			dir := applyWorkdir(t)
			if err := os.WriteFile(filepath.Join(dir, "fix.diff"), []byte(diff), 0o644); err != nil {
				t.Fatal(err)
			}
			before := listTree(t, dir)
			b, err := applyPlan(t, dir, "version: 1\nsteps:\n  - {label: apply, type: apply_diff, diff_file: fix.diff, continue_on_error: true}\n")
			if err != nil {
				t.Fatal(err)
			}
			if _, errs := applyVisits(t, b, "apply"); len(errs) != 1 || errs[0] == "" {
				t.Fatalf("applied: %q", errs)
			}
			after := listTree(t, dir)
			for p, v := range after {
				if strings.HasPrefix(p, ".runner/") && !strings.HasPrefix(p, ".runner/backups") {
					continue // the run's own records
				}
				if before[p] != v {
					t.Errorf("%s changed or appeared", p)
				}
			}
		})
	}
}

// listTree maps each file under dir to its mode and content.
func listTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		b, _ := os.ReadFile(p)
		m[filepath.ToSlash(rel)] = fi.Mode().String() + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A diff written into the plan is whole, as its author wrote it: a last
// hunk whose header miscounts its lines is read by its body, as for a
// model's answer that finished normally, not refused as cut short.
func TestApplyDiffStepPlanDiffIsWhole(t *testing.T) {
	dir := applyWorkdir(t)
	b, err := applyPlan(t, dir, `
version: 1
steps:
  - label: apply
    type: apply_diff
    diff: |
      --- a/pkg/add.go
      +++ b/pkg/add.go
      @@ -3,9 +3,9 @@
       func Add(a, b int) int {
      -	return a - b
      +	return a + b
`)
	if err != nil {
		t.Fatal(err)
	}
	if _, errs := applyVisits(t, b, "apply"); errs[0] != "" {
		t.Fatalf("refused: %s", errs[0])
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "pkg", "add.go")); !strings.Contains(string(got), "return a + b") {
		t.Errorf("not applied:\n%s", got)
	}
}
