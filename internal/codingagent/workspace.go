package codingagent

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Snapshot limits: a workspace past them is diffed in part, and the
// change says so (Change.Skipped).
const (
	maxSnapshotFiles = 20_000
	maxSnapshotFile  = 8 << 20
	maxDiffLines     = 20_000 // per side: larger files are replaced whole
)

// skipDirs are not the agent's work: version control and runner's own.
var skipDirs = map[string]bool{".git": true, ".runner": true, ".hg": true, ".svn": true}

type fileState struct {
	mode fs.FileMode
	data []byte
	big  bool // over maxSnapshotFile: only its size and mode are compared
	size int64
}

// Snapshot is the regular files of a directory as they were.
type Snapshot struct {
	files   map[string]fileState
	skipped []string
}

// Take reads the regular files under dir (not .git, .runner), in slash
// form relative to dir.
func Take(dir string) (*Snapshot, error) {
	s := &Snapshot{files: map[string]fileState{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // a file gone while walking
		}
		if d.IsDir() {
			if p != dir && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if len(s.files) >= maxSnapshotFiles {
			s.skipped = append(s.skipped, rel)
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		st := fileState{mode: fi.Mode().Perm(), size: fi.Size()}
		if fi.Size() > maxSnapshotFile {
			st.big = true
		} else if st.data, err = os.ReadFile(p); err != nil {
			return nil
		}
		s.files[rel] = st
		return nil
	})
	return s, err
}

// Change is what changed between two snapshots.
type Change struct {
	// Diff is a git-style unified diff (a/ and b/ paths, file modes) that
	// patch.Apply with DetectStrip applies to the first snapshot's files.
	Diff  string       `json:"diff"`
	Files []FileChange `json:"files"`
	// Skipped are files left out (binary, too large, past the file count).
	Skipped []string `json:"skipped,omitempty"`
}

// FileChange is one changed file.
type FileChange struct {
	Path    string `json:"path"`
	Op      string `json:"op"` // create, modify, delete
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	Mode    string `json:"mode,omitempty"` // its new mode ("0755") when that changed or it was created
}

// Diff compares two snapshots.
func Diff(before, after *Snapshot) Change {
	var c Change
	names := map[string]bool{}
	for n := range before.files {
		names[n] = true
	}
	for n := range after.files {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var out strings.Builder
	for _, n := range sorted {
		a, hadA := before.files[n]
		b, hasB := after.files[n]
		if hadA && hasB && a.mode == b.mode && a.size == b.size && bytes.Equal(a.data, b.data) {
			continue
		}
		if a.big || b.big || binary(a.data) || binary(b.data) {
			c.Skipped = append(c.Skipped, n)
			continue
		}
		fc := FileChange{Path: n, Op: "modify"}
		fmt.Fprintf(&out, "diff --git a/%s b/%s\n", n, n)
		oldName, newName := "a/"+n, "b/"+n
		switch {
		case !hadA:
			fc.Op, fc.Mode = "create", octal(b.mode)
			fmt.Fprintf(&out, "new file mode %s\n", gitMode(b.mode))
			oldName = "/dev/null"
		case !hasB:
			fc.Op = "delete"
			fmt.Fprintf(&out, "deleted file mode %s\n", gitMode(a.mode))
			newName = "/dev/null"
		case a.mode != b.mode:
			fc.Mode = octal(b.mode)
			fmt.Fprintf(&out, "old mode %s\nnew mode %s\n", gitMode(a.mode), gitMode(b.mode))
		}
		if !bytes.Equal(a.data, b.data) {
			fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
			fc.Added, fc.Removed = writeHunks(&out, string(a.data), string(b.data))
		}
		c.Files = append(c.Files, fc)
	}
	c.Skipped = append(c.Skipped, after.skipped...)
	c.Diff = out.String()
	return c
}

func octal(m fs.FileMode) string { return fmt.Sprintf("%04o", m.Perm()) }

// gitMode is a regular file's mode as git writes it.
func gitMode(m fs.FileMode) string {
	if m.Perm()&0o111 != 0 {
		return "100755"
	}
	return "100644"
}

func binary(b []byte) bool { return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 }

// lines splits text into lines that keep their newline.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	ls := strings.SplitAfter(s, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

type op struct {
	kind byte // ' ', '-', '+'
	text string
}

// lineOps is an edit script from x to y by longest common subsequence,
// after the common head and tail are set aside.
func lineOps(x, y []string) []op {
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	var ops []op
	for _, l := range x[:pre] {
		ops = append(ops, op{' ', l})
	}
	mx, my := x[pre:len(x)-suf], y[pre:len(y)-suf]
	if len(mx)*len(my) > maxDiffLines*200 {
		// Too large to compare line by line here: replaced whole.
		for _, l := range mx {
			ops = append(ops, op{'-', l})
		}
		for _, l := range my {
			ops = append(ops, op{'+', l})
		}
	} else {
		lcs := make([][]int32, len(mx)+1)
		for i := range lcs {
			lcs[i] = make([]int32, len(my)+1)
		}
		for i := len(mx) - 1; i >= 0; i-- {
			for j := len(my) - 1; j >= 0; j-- {
				if mx[i] == my[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(mx) || j < len(my) {
			switch {
			case i < len(mx) && j < len(my) && mx[i] == my[j]:
				ops = append(ops, op{' ', mx[i]})
				i++
				j++
			case i < len(mx) && (j == len(my) || lcs[i+1][j] >= lcs[i][j+1]):
				// Removals first, as diff writes them.
				ops = append(ops, op{'-', mx[i]})
				i++
			default:
				ops = append(ops, op{'+', my[j]})
				j++
			}
		}
	}
	for _, l := range x[len(x)-suf:] {
		ops = append(ops, op{' ', l})
	}
	return ops
}

// writeHunks writes the hunks that turn a into b, three lines of context,
// and counts the lines added and removed.
func writeHunks(out *strings.Builder, a, b string) (added, removed int) {
	x, y := lines(a), lines(b)
	ops := lineOps(x, y)
	const ctx = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-ctx, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*ctx {
				break
			}
		}
		end = min(end+ctx+1, len(ops))
		// Line numbers of the hunk's start on each side.
		oldLine, newLine := 1, 1
		for _, o := range ops[:start] {
			if o.kind != '+' {
				oldLine++
			}
			if o.kind != '-' {
				newLine++
			}
		}
		var oldN, newN int
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				oldN++
			}
			if o.kind != '-' {
				newN++
			}
		}
		if oldN == 0 {
			oldLine--
		}
		if newN == 0 {
			newLine--
		}
		fmt.Fprintf(out, "@@ -%d,%d +%d,%d @@\n", oldLine, oldN, newLine, newN)
		for _, o := range ops[start:end] {
			switch o.kind {
			case '+':
				added++
			case '-':
				removed++
			}
			out.WriteByte(o.kind)
			out.WriteString(o.text)
			if !strings.HasSuffix(o.text, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return added, removed
}
