package patch

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// The corpus is real code: files from the Go source tree, edited at random
// (a fixed seed), diffed by git. Each diff is then damaged the way models
// damage diffs, and every result is checked byte for byte.

type caseFile struct {
	path           string // relative, e.g. "net/http/server.go"
	orig, edited   []byte
	deco, decoEdit []byte // the same with trailing blanks on some lines
}

type corpusCase struct {
	files    []caseFile
	diff     []byte // git diff, a/ b/ prefixes
	decoDiff []byte // git diff of the decorated files
}

// goSources lists Go files under GOROOT/src, sorted, that make good
// targets: not test data, between 1 and 60 KB.
func goSources(t testing.TB) (string, []string) {
	t.Helper()
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		testtool.Missing(t, "the Go source tree", "go env GOROOT: "+err.Error())
	}
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	var out []string
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Size() >= 1<<10 && fi.Size() <= 60<<10 {
			rel, _ := filepath.Rel(src, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil || len(out) < 100 {
		testtool.Missing(t, "the Go source tree", fmt.Sprintf("%s: %v, %d files; the corpus tests patch its files", src, err, len(out)))
	}
	sort.Strings(out)
	return src, out
}

func needGit(t testing.TB) {
	t.Helper()
	testtool.LookPath(t, "git", "apt-get install git")
}

func splitKeep(b []byte) []string {
	s := strings.SplitAfter(string(b), "\n")
	if len(s) > 0 && s[len(s)-1] == "" {
		s = s[:len(s)-1]
	}
	return s
}

// edit makes 1 to 4 random changes to a file: insertions of lines taken
// from another file, deletions, replacements; some close together so that
// hunks hold several changes, some at the very start or end.
func edit(rng *rand.Rand, orig []byte, donor []string) []byte {
	noNL := len(orig) > 0 && !bytes.HasSuffix(orig, []byte("\n"))
	base := orig
	if noNL {
		base = append(bytes.Clone(orig), '\n')
	}
	for {
		lines := splitKeep(base)
		n := 1 + rng.IntN(4)
		pos := make([]int, n)
		for i := range pos {
			switch r := rng.IntN(10); {
			case r == 0:
				pos[i] = rng.IntN(min(3, len(lines)+1))
			case r == 1:
				pos[i] = max(0, len(lines)-rng.IntN(3))
			case r < 4 && i > 0:
				pos[i] = min(len(lines), pos[i-1]+1+rng.IntN(6))
			default:
				pos[i] = rng.IntN(len(lines) + 1)
			}
		}
		sort.Sort(sort.Reverse(sort.IntSlice(pos)))
		for _, p := range pos {
			del := 0
			if p < len(lines) && rng.IntN(3) > 0 {
				del = 1 + rng.IntN(min(4, len(lines)-p))
			}
			var ins []string
			if del == 0 || rng.IntN(2) == 0 {
				at := rng.IntN(len(donor))
				for j := 0; j < 1+rng.IntN(4) && at+j < len(donor); j++ {
					l := donor[at+j]
					if !strings.HasSuffix(l, "\n") {
						l += "\n"
					}
					ins = append(ins, l)
				}
			}
			lines = append(lines[:p], append(ins, lines[p+del:]...)...)
		}
		out := []byte(strings.Join(lines, ""))
		if noNL {
			out = bytes.TrimSuffix(out, []byte("\n"))
		}
		if !bytes.Equal(out, orig) {
			return out
		}
	}
}

// decorate adds trailing blanks to some lines, chosen by their text, so
// that the same line gets the same blanks in both versions of a file.
func decorate(b []byte) []byte {
	var out strings.Builder
	for _, l := range splitKeep(b) {
		body, nl := strings.CutSuffix(l, "\n")
		h := fnv.New32a()
		h.Write([]byte(body))
		switch h.Sum32() % 7 {
		case 0:
			body += "  "
		case 1:
			body += "\t"
		}
		out.WriteString(body)
		if nl {
			out.WriteString("\n")
		}
	}
	return []byte(out.String())
}

// gitDiff diffs one file with git and names it p with a/ b/ prefixes.
func gitDiff(t testing.TB, tmp, p string, orig, edited []byte) []byte {
	t.Helper()
	o, n := filepath.Join(tmp, "o"), filepath.Join(tmp, "n")
	if err := os.WriteFile(o, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "-c", "core.quotepath=false", "diff", "--no-index", "--no-color", "--no-ext-diff", "o", "n")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+tmp)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("git diff: %v", err)
	}
	lines := splitKeep(out)
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "@@"):
			return []byte(strings.Join(lines, ""))
		case strings.HasPrefix(l, "diff --git "):
			lines[i] = "diff --git a/" + p + " b/" + p + "\n"
		case strings.HasPrefix(l, "--- "):
			lines[i] = "--- a/" + p + "\n"
		case strings.HasPrefix(l, "+++ "):
			lines[i] = "+++ b/" + p + "\n"
		}
	}
	t.Fatalf("git diff gave no hunk for %s", p)
	return nil
}

func buildCorpus(t testing.TB, n int) []corpusCase {
	t.Helper()
	needGit(t)
	src, all := goSources(t)
	rng := rand.New(rand.NewPCG(2026, 3))
	tmp := t.TempDir()
	var cases []corpusCase
	for len(cases) < n {
		var c corpusCase
		seen := map[string]bool{}
		for k := 1 + rng.IntN(3); len(c.files) < k; {
			p := all[rng.IntN(len(all))]
			if seen[p] {
				continue
			}
			seen[p] = true
			orig, err := os.ReadFile(filepath.Join(src, p))
			if err != nil {
				t.Fatal(err)
			}
			donor, err := os.ReadFile(filepath.Join(src, all[rng.IntN(len(all))]))
			if err != nil {
				t.Fatal(err)
			}
			if rng.IntN(25) == 0 {
				orig = bytes.TrimSuffix(orig, []byte("\n"))
			}
			ed := edit(rng, orig, splitKeep(donor))
			if rng.IntN(25) == 0 {
				ed = bytes.TrimSuffix(ed, []byte("\n"))
			}
			if bytes.Equal(ed, orig) {
				ed = append(ed, "// end\n"...)
			}
			c.files = append(c.files, caseFile{path: p, orig: orig, edited: ed, deco: decorate(orig), decoEdit: decorate(ed)})
		}
		for _, f := range c.files {
			c.diff = append(c.diff, gitDiff(t, tmp, f.path, f.orig, f.edited)...)
			c.decoDiff = append(c.decoDiff, gitDiff(t, tmp, f.path, f.deco, f.decoEdit)...)
		}
		cases = append(cases, c)
	}
	return cases
}
