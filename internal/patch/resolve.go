package patch

import (
	"fmt"
	"io/fs"
	"strings"
)

// resolve picks the path in the directory that f applies to: its names
// with the strip level given, or the level under which the file exists (a/x
// or x). A new file follows the level found for the diff's other files
// named the same way (with or without a/ b/), or else the a/ b/ convention.
func (p *planner) resolve(f *fileDiff) (string, error) {
	for _, n := range []string{f.oldName, f.newName} {
		if n == devNull {
			continue
		}
		if err := checkName(n); err != nil {
			return "", err
		}
	}
	if f.literal {
		// The other formats name files as they are; the path is
		// looked at (and refused if unsafe) when its target is made.
		return p.stripped(f.newName, 0, f)
	}
	levels := []int{p.opt.Strip}
	if p.opt.Strip == DetectStrip {
		levels = []int{0, 1}
		if conventional(f) {
			levels = []int{1, 0}
		}
	}

	conv := conventional(f)
	if f.created {
		level := levels[0]
		if d, ok := p.detected[conv]; ok && p.opt.Strip == DetectStrip {
			level = d
		}
		return p.stripped(f.newName, level, f)
	}

	var tried []string
	var unsafe error
	for _, level := range levels {
		var found []string
		for _, n := range names(f) {
			s, ok := strip(n, level)
			if !ok {
				continue
			}
			if err := checkTarget(s); err != nil {
				return "", err
			}
			tried = append(tried, s)
			if _, ok := p.state[s]; ok {
				found = append(found, s)
				continue
			}
			fi, err := p.lstat(s)
			if _, refused := IsRefused(err); refused {
				unsafe = err
				continue
			}
			if err != nil {
				return "", fmt.Errorf("patch: %w", err)
			}
			if fi != nil {
				found = append(found, s)
			}
		}
		if len(found) > 0 {
			if _, ok := p.detected[conv]; !ok {
				p.detected[conv] = level
			}
			if len(found) > 1 && found[0] != found[1] {
				p.notes = append(p.notes, fmt.Sprintf("the diff names %s and %s; changed %s", found[0], found[1], found[1]))
			}
			return found[len(found)-1], nil
		}
	}
	if unsafe != nil {
		return "", unsafe
	}
	if len(tried) == 0 {
		return "", refuse(BadDiff, "line %d: cannot strip %d leading directories from %q", f.line, levels[0], f.oldName)
	}
	// Nothing exists: the planner reports it (or finds the file already
	// deleted, or a new file written without /dev/null).
	name := f.newName
	if f.deleted {
		name = f.oldName
	}
	return p.stripped(name, levels[0], f)
}

func (p *planner) stripped(name string, level int, f *fileDiff) (string, error) {
	s, ok := strip(name, level)
	if !ok {
		s, ok = strip(name, 0)
	}
	if !ok {
		return "", refuse(BadDiff, "line %d: cannot strip %d leading directories from %q", f.line, level, name)
	}
	return s, checkTarget(s)
}

// names are the file's names to look for, the old one first; when both
// exist the new one is used (as in "diff -u x.orig x").
func names(f *fileDiff) []string {
	var out []string
	for _, n := range []string{f.oldName, f.newName} {
		if n != devNull && (len(out) == 0 || out[0] != n) {
			out = append(out, n)
		}
	}
	return out
}

// conventional reports whether the names carry git's a/ and b/ prefixes.
func conventional(f *fileDiff) bool {
	a := f.oldName == devNull || strings.HasPrefix(f.oldName, "a/")
	b := f.newName == devNull || strings.HasPrefix(f.newName, "b/")
	return a && b
}

type lstatResult struct {
	fi      fs.FileInfo
	missing string
}

// lstat is tree.lstat, remembering what it found for each path: planning
// asks about a path while resolving names and again when reading it.
func (p *planner) lstat(path string) (fs.FileInfo, error) {
	r, err := p.lstatFull(path)
	return r.fi, err
}

func (p *planner) lstatFull(path string) (lstatResult, error) {
	if r, ok := p.stats[path]; ok {
		return r, nil
	}
	fi, missing, err := p.tree.lstat(path)
	if err != nil {
		return lstatResult{}, err
	}
	r := lstatResult{fi, missing}
	p.stats[path] = r
	return r, nil
}
