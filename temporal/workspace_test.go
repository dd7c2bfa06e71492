package temporal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
)

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func manifestPaths(t *testing.T, store Store, name string) []string {
	t.Helper()
	m, err := LoadManifest(store, name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range m.Files {
		out = append(out, f.Path)
	}
	sort.Strings(out)
	return out
}

// What travels with a run: the plan's directory, laid out under the
// worker's workdir as under the client's when it is inside it, without
// .git, .runner and what .runnerignore lists.
func TestPackWorkspace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		files    map[string]string
		plan     string // relative to the checkout
		workdir  string // relative to the checkout
		want     []string
		planDir  string
		wantWork string
	}{
		{"plan dir inside the workdir", map[string]string{"ex/plan.yaml": "x", "ex/project/a.go": "a", "other/b.txt": "b"},
			"ex/plan.yaml", ".", []string{"work/ex/plan.yaml", "work/ex/project/a.go"}, "work/ex", "work"},
		{"plan dir is the workdir", map[string]string{"plan.yaml": "x", "data.txt": "d", ".git/HEAD": "ref", ".runner/runs/old/blackboard.json": "{}"},
			"plan.yaml", ".", []string{"work/data.txt", "work/plan.yaml"}, "work", "work"},
		{"plan dir outside the workdir", map[string]string{"plans/plan.yaml": "x", "plans/fix.yaml": "f", "wd/x": "x"},
			"plans/plan.yaml", "wd", []string{"plan/fix.yaml", "plan/plan.yaml"}, "plan", "work"},
		{".runnerignore", map[string]string{"plan.yaml": "x", ".runnerignore": "# big\n*.bin\nbuild/\n/docs/draft.md\n", "a.bin": "0",
			"sub/b.bin": "0", "build/out": "o", "docs/draft.md": "d", "docs/keep.md": "k", "build.txt": "t"},
			"plan.yaml", ".", []string{"work/.runnerignore", "work/build.txt", "work/docs/keep.md", "work/plan.yaml"}, "work", "work"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			store := DirStore{Dir: t.TempDir()}
			name, err := PackWorkspace(store, filepath.Join(dir, tc.plan), filepath.Join(dir, tc.workdir))
			if err != nil {
				t.Fatal(err)
			}
			if got := manifestPaths(t, store, name); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("files %v; want %v", got, tc.want)
			}
			m, _ := LoadManifest(store, name)
			if m.PlanDir != tc.planDir || m.Workdir != tc.wantWork || m.Plan != filepath.Base(tc.plan) {
				t.Errorf("layout %+v", m)
			}
			// Made again on a worker: the same files, the same bytes.
			root := filepath.Join(t.TempDir(), "run")
			if err := materialize(store, m, root); err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.want {
				rel := strings.SplitN(p, "/", 2)[1]
				src := filepath.Join(dir, tc.workdir, rel)
				if strings.HasPrefix(p, "plan/") {
					src = filepath.Join(dir, filepath.Dir(tc.plan), rel)
				}
				want, _ := os.ReadFile(src)
				got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
				if err != nil || string(got) != string(want) {
					t.Errorf("%s: %q, %v; want %q", p, got, err, want)
				}
			}
		})
	}
}

// A plan's directory too big to travel is refused before the run starts,
// saying what to do; a bad .runnerignore names its line.
func TestPackWorkspaceRefuses(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"plan.yaml": "x"})
	for i := range MaxWorkspaceFiles + 1 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%06d", i)), nil, 0o644)
	}
	_, err := PackWorkspace(DirStore{Dir: t.TempDir()}, filepath.Join(dir, "plan.yaml"), dir)
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), ".runnerignore") || !strings.Contains(err.Error(), "--shared-workspace") {
		t.Errorf("too many files: %v", err)
	}
	dir = t.TempDir()
	writeTree(t, dir, map[string]string{"plan.yaml": "x", ".runnerignore": "ok\n[bad\n"})
	if _, err := PackWorkspace(DirStore{Dir: t.TempDir()}, filepath.Join(dir, "plan.yaml"), dir); err == nil || !strings.Contains(err.Error(), ".runnerignore:2") {
		t.Errorf("a bad pattern: %v", err)
	}
}

// A worker that cannot make a run's workspace (its files are not in the
// store it was given) fails the step for good, naming the host and the
// path; a plan file missing from the workspace is named too.
func TestWorkspaceMissingIsNonRetryable(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"plan.yaml": "x", "data.txt": "d"})
	client := DirStore{Dir: t.TempDir()}
	name, err := PackWorkspace(client, filepath.Join(dir, "plan.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		store Store
		want  []string
	}{
		{"another store", DirStore{Dir: t.TempDir()}, []string{"host h1", "is not in the store"}},
		{"a file's blob missing", func() Store {
			s := DirStore{Dir: t.TempDir()}
			data, _ := client.Get(name)
			s.Put(data) // the manifest, not the files
			return s
		}(), []string{"host h1", "data.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			a := &Activities{Store: tc.store, HostID: "h1", WorkRoot: root}
			_, _, err := a.workspace("runner-r1", name)
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || !app.NonRetryable() {
				t.Fatalf("err %v: want a non-retryable application error", err)
			}
			for _, w := range append(tc.want, filepath.Join(root, "runner-r1")) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
	// The workspace made, then its plan file gone (a worker's disk
	// cleaned under it): named, for good.
	root := t.TempDir()
	a := &Activities{Store: client, HostID: "h2", WorkRoot: root}
	if _, _, err := a.workspace("runner-r2", name); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, "runner-r2", "work", "plan.yaml"))
	b := &Activities{Store: client, HostID: "h2", WorkRoot: root} // a restarted worker
	_, _, err = b.workspace("runner-r2", name)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || !strings.Contains(err.Error(), "host h2") ||
		!strings.Contains(err.Error(), filepath.Join(root, "runner-r2", "work", "plan.yaml")) {
		t.Errorf("a missing plan file: %v", err)
	}
}

// After each step the host puts the workspace back: what the step wrote
// (this run's .runner/runs/<id>/ included, other runs' left out) is in
// the snapshot, which another host makes again, and --sync-back writes.
func TestWorkspaceSnapshotAndSyncBack(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"ex/plan.yaml": "x", "ex/project/a.go": "old"})
	store := DirStore{Dir: t.TempDir()}
	name, err := PackWorkspace(store, filepath.Join(dir, "ex/plan.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: store, HostID: "h1", WorkRoot: t.TempDir()}
	root, _, err := a.workspace("runner-R", name)
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, filepath.Join(root, "work"), map[string]string{"ex/project/a.go": "new", "out.txt": "made",
		".runner/runs/R/project/a.go": "copy", ".runner/runs/OTHER/x": "not ours"})
	snap, _, _, err := a.snapshot("runner-R", "R")
	if err != nil {
		t.Fatal(err)
	}
	got := manifestPaths(t, store, snap)
	want := []string{"work/.runner/runs/R/project/a.go", "work/ex/plan.yaml", "work/ex/project/a.go", "work/out.txt"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("snapshot %v; want %v", got, want)
	}
	// Another host takes the run over from the snapshot.
	b := &Activities{Store: store, HostID: "h2", WorkRoot: t.TempDir()}
	root2, _, err := b.workspace("runner-R", snap)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(root2, "work/ex/project/a.go")); string(data) != "new" {
		t.Errorf("re-pinned host sees %q; want the step's change", data)
	}
	back := t.TempDir()
	writeTree(t, back, map[string]string{"mine.txt": "kept"})
	if err := SyncBack(store, snap, back); err != nil {
		t.Fatal(err)
	}
	for p, w := range map[string]string{"ex/project/a.go": "new", "out.txt": "made", ".runner/runs/R/project/a.go": "copy", "mine.txt": "kept"} {
		if data, err := os.ReadFile(filepath.Join(back, p)); err != nil || string(data) != w {
			t.Errorf("synced back %s = %q, %v; want %q", p, data, err, w)
		}
	}
}

// A plan at the root of its workdir: the snapshot holds each file once,
// and other runs' folders not at all.
func TestSnapshotOfAPlanAtTheWorkdirsRoot(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"plan.yaml": "x", "a.go": "old"})
	store := DirStore{Dir: t.TempDir()}
	name, err := PackWorkspace(store, filepath.Join(dir, "plan.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: store, HostID: "h1", WorkRoot: t.TempDir()}
	root, _, err := a.workspace("runner-R", name)
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, filepath.Join(root, "work"), map[string]string{"a.go": "new", ".runner/runs/OTHER/x": "not ours"})
	snap, _, _, err := a.snapshot("runner-R", "R")
	if err != nil {
		t.Fatal(err)
	}
	got := manifestPaths(t, store, snap)
	if want := []string{"work/a.go", "work/plan.yaml"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("snapshot %v; want %v", got, want)
	}
}

// A manifest whose path climbs out of the workspace is refused.
func TestManifestPathsStayInside(t *testing.T) {
	store := DirStore{Dir: t.TempDir()}
	for _, p := range []string{"../x", "/etc/x", "work/../../x", ""} {
		for _, m := range []Manifest{
			{Workdir: "work", PlanDir: "work", Plan: "p", Files: []WorkspaceFile{{Path: p, Blob: Sum(nil)}}},
			{Workdir: p, PlanDir: "work", Plan: "p"},
			{Workdir: "work", PlanDir: p, Plan: "p"},
			{Workdir: "work", PlanDir: "work", Plan: p},
		} {
			name, _ := putManifest(store, m)
			if _, err := LoadManifest(store, name); err == nil || !strings.Contains(err.Error(), "leaves the workspace") {
				t.Errorf("%+v: %v", m, err)
			}
		}
	}
}

// A host's copy of a run: a pin naming the copy the host holds keeps it
// (the files steps left there stay), a pin naming another copy makes it
// again from the manifest it is handed (a host the run comes back to
// does not go on with what it had), and the snapshots a copy numbers go
// on past a restarted worker's last.
func TestHostCopies(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"plan.yaml": "x"})
	store := DirStore{Dir: t.TempDir()}
	base, err := PackWorkspace(store, filepath.Join(dir, "plan.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		copy     func(held string) string // the copy the pin names
		kept     bool
		wantFile bool // the file the host's steps left is there
	}{
		{"the host's own copy", func(held string) string { return held }, true, true},
		{"another host's copy", func(string) string { return "h2-0123" }, false, false},
		{"a first pin", func(string) string { return "" }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			workRoot := t.TempDir()
			a := &Activities{Store: store, HostID: "h1", WorkRoot: workRoot}
			st, _, err := a.hostCopy("wf", wsWant{Manifest: base}, true)
			if err != nil {
				t.Fatal(err)
			}
			held := st.copy
			writeTree(t, filepath.Join(st.root, "work"), map[string]string{"left.txt": "by a step"})
			if _, _, seq, err := a.snapshot("wf", "R"); err != nil || seq != 1 {
				t.Fatalf("first snapshot: %d, %v", seq, err)
			}
			b := &Activities{Store: store, HostID: "h1", WorkRoot: workRoot} // the worker restarted
			st, kept, err := b.hostCopy("wf", wsWant{Manifest: base, Copy: tc.copy(held)}, true)
			if err != nil {
				t.Fatal(err)
			}
			if kept != tc.kept || (st.copy == held) != tc.wantFile {
				t.Errorf("kept %v, copy %s (held %s); want kept %v", kept, st.copy, held, tc.kept)
			}
			_, err = os.Stat(filepath.Join(st.root, "work", "left.txt"))
			if (err == nil) != tc.wantFile {
				t.Errorf("left.txt there: %v; want %v", err == nil, tc.wantFile)
			}
			_, cp, seq, err := b.snapshot("wf", "R")
			want := int64(1)
			if tc.wantFile {
				want = 2 // numbered on past the last before the restart
			}
			if err != nil || cp != st.copy || seq != want {
				t.Errorf("next snapshot: copy %s seq %d, %v; want %s %d", cp, seq, err, st.copy, want)
			}
		})
	}
	// A step whose host lost its copy (a new disk) makes it from the
	// newest snapshot it is handed, under the copy's name, numbered on.
	a := &Activities{Store: store, HostID: "h1", WorkRoot: t.TempDir()}
	st, kept, err := a.hostCopy("wf", wsWant{Manifest: base, Copy: "h1-abc", Seq: 7}, false)
	if err != nil || kept || st.copy != "h1-abc" {
		t.Fatalf("copy %+v kept %v, %v", st, kept, err)
	}
	if _, cp, seq, err := a.snapshot("wf", "R"); err != nil || cp != "h1-abc" || seq != 8 {
		t.Errorf("snapshot: %s %d %v; want h1-abc 8", cp, seq, err)
	}
}
