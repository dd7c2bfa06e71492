package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every relative link in the README and the pages under docs/ names a file
// of the repository, and its #anchor a heading of that file: a moved or
// renamed page or heading fails here, not in a reader's browser.
func TestLinksResolve(t *testing.T) {
	all := pages(t)
	byPath := map[string]string{}
	for _, p := range all {
		byPath[filepath.Clean(p.path)] = p.text
	}
	for _, p := range all {
		targets, lineNos := links(p.text)
		for i, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			where := p.path + ":" + itoa(lineNos[i])
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Clean(p.path)
			if file != "" {
				path = filepath.Join(filepath.Dir(p.path), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: %s does not exist", where, target, path)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			text, ok := byPath[filepath.Clean(path)]
			if !ok {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Errorf("%s: link %q: %v", where, target, err)
					continue
				}
				text = string(b)
			}
			if !anchors(text)[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", where, target, path, anchor)
			}
		}
	}
}

// Nothing in the repository cites a document outside it: the contract
// lives in docs/spec.md, and comments, testdata and scripts point there.
func TestNothingCitesOutsideTheRepository(t *testing.T) {
	// Spelled in pieces, so this file is not itself a citation.
	const dir = "shared"
	outside := []string{"../" + dir + "/", dir + "/spec", dir + "/seeds", "SPEC" + ".md"}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch name := d.Name(); {
		case name == ".git" || name == ".runner" || name == "node_modules":
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a worktree's .git is a file
		case name == "links_test.go", d.IsDir(): // this file holds the list
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > 1<<20 || !info.Mode().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, l := range strings.Split(string(data), "\n") {
			for _, bad := range outside {
				if strings.Contains(l, bad) {
					t.Errorf("%s:%d: cites %q, which is outside the repository", path, i+1, bad)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
