package testrun

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Reading "file:line" out of a runner's text when a file's name may hold
// anything a file system allows: ':', "::", spaces, ',', parentheses,
// quotes, non-ASCII letters, a leading '-'.
//
// A line like "a:12:b_test.go:3: msg" reads two ways: file "a" at line 12,
// or file "a:12:b_test.go" at line 3. Every reader settles it the same way
// (docs/spec.md says so too):
//
//  1. the candidates are the prefixes followed by ":digits" (and, where the
//     runner's files have a known extension, ending in it);
//  2. when the reader can see the run's directory, the longest candidate
//     that names an existing file wins;
//  3. else the rightmost candidate that is followed by the message wins: one
//     whose name holds no ": ", the separator runners print before a message.

// place is one reading of a "file:line…" text.
type place struct {
	file string
	line int
	rest string // what follows the line number: ":5: msg", " +0x28", ""
}

// places lists the readings of s, shortest file first: every prefix that
// ends in one of exts (any, when none is given) and is followed by
// ":digits" and then a non-digit or the end.
func places(s string, exts ...string) []place {
	var out []place
	for i := 0; i < len(s); i++ {
		if s[i] != ':' || i == 0 {
			continue
		}
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i+1 || j-i > 10 {
			continue
		}
		file := s[:i]
		if len(exts) > 0 && !hasExt(file, exts) {
			continue
		}
		out = append(out, place{file: file, line: atoi(s[i+1 : j]), rest: s[j:]})
	}
	return out
}

func hasExt(file string, exts []string) bool {
	for _, e := range exts {
		if strings.HasSuffix(file, e) && len(file) > len(e) {
			return true
		}
	}
	return false
}

// pickPlace applies the rule above to the candidates. exists, when not
// nil, says whether a candidate names a file of the run.
func pickPlace(cands []place, exists func(string) bool) (place, bool) {
	if len(cands) == 0 {
		return place{}, false
	}
	if exists != nil {
		for i := len(cands) - 1; i >= 0; i-- {
			if exists(cands[i].file) {
				return cands[i], true
			}
		}
	}
	for i := len(cands) - 1; i >= 0; i-- {
		if !strings.Contains(cands[i].file, ": ") {
			return cands[i], true
		}
	}
	return place{}, false
}

// existsIn returns an exists for pickPlace that reads a relative name
// from dir.
func existsIn(dir string) func(string) bool {
	return func(name string) bool {
		if name = fileURLPath(name); !filepath.IsAbs(name) {
			if dir == "" {
				return false
			}
			name = filepath.Join(dir, name)
		}
		fi, err := os.Stat(name)
		return err == nil && !fi.IsDir()
	}
}

// fileURLPath turns a file:// URL (node prints them for ES modules, with
// the path percent-encoded) into a path; other text is returned as it is.
func fileURLPath(s string) string {
	rest, ok := strings.CutPrefix(s, "file://")
	if !ok {
		return s
	}
	if p, err := url.PathUnescape(rest); err == nil {
		return p
	}
	return rest
}
