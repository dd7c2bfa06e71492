package testrun

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

var (
	// "src/lib.rs - add (line 3)", "src/lib.rs - (line 1)", "src/lib.rs - add (line 3) - compile fail"
	cargoDocTest = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\S+\.rs) - .*?\(line (\d+)\)`) })
	// "thread 'main' (16756) panicked at src/lib.rs:6:1:" and the older forms
	cargoPanicAt = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^thread '.*?'(?: \(\d+\))? panicked at (?:'.*', )?(.+?):(\d+):(\d+):?$`)
	})
	rustDocLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(?:///|//!)\s?(.*)$`) })
)

// docTestPlace puts a failed doc-test at its source line. A doc-test that
// does not compile is placed by rustc's "--> file:line:col", which is right
// already. A panic in the doc-test's own code is reported at a line of
// the program rustdoc made of it (the example behind a few lines of its
// own: #![allow(unused)], extern crate, fn main), under the source file's
// name: that line is mapped back into the example, at the fence's line
// from the test's name. A panic in the library keeps its place.
func docTestPlace(dir, name string, f *Failure, sec *lines) {
	m := cargoDocTest().FindStringSubmatch(name)
	if m == nil {
		return
	}
	file, fence := m[1], atoi(m[2])
	var all []string
	if sec != nil {
		all = sec.all()
	}
	if f.File == "" {
		// does not compile: rustc's own place and error
		for i, l := range all {
			if d := cargoDiag().FindStringSubmatch(l); d != nil && d[1] == "error" && !cargoNotCompile().MatchString(d[3]) {
				for _, next := range all[i+1:] {
					if a := cargoArrow().FindStringSubmatch(next); a != nil {
						f.File, f.Line = a[1], atoi(a[2])
						f.Message = clip(strings.TrimSpace(l), maxLineLen)
						return
					}
				}
			}
		}
		f.File, f.Line = file, fence
		return
	}
	if f.File != file {
		return
	}
	var line, col int
	for _, l := range all {
		if pm := cargoPanicAt().FindStringSubmatch(l); pm != nil && pm[1] == file {
			line, col = atoi(pm[2]), atoi(pm[3])
			break
		}
	}
	if line == 0 {
		return
	}
	src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(file)))
	if err != nil {
		return // a member of a workspace: the name is relative to it
	}
	text := strings.Split(string(src), "\n")
	// A real place in the source is code, not a doc comment, with an
	// expression starting at the column.
	real := line <= len(text) && startsAt(text[line-1], col) && !rustDocLine().MatchString(text[line-1])
	example := docExample(text, fence)
	// The lines rustdoc puts before the example: #![allow(unused)], and
	// for an example naming the crate without extern crate two more, and
	// fn main() { unless it has its own. Neighbouring counts are tried
	// too (other rustdoc versions), the one whose line has code at the
	// column winning.
	joined := strings.Join(example, "\n")
	k := 1
	if crate := crateName(dir); !strings.Contains(joined, "extern crate") &&
		(crate != "" && regexp.MustCompile(`\b`+regexp.QuoteMeta(crate)+`\b`).MatchString(joined) || crate == "" && strings.Contains(joined, "::")) {
		k += 2
	}
	if !strings.Contains(joined, "fn main") {
		k++
	}
	for _, d := range []int{0, -1, 1, -2, 2, -3, 3} {
		j := line - (k + d) // 1-based line in the example
		if j < 1 || j > len(example) || !startsAt(example[j-1], col) {
			continue
		}
		// Both places possible: the one that can panic.
		if real && (!panicky(example[j-1]) || panicky(text[line-1])) {
			return
		}
		f.Line = fence + j
		return
	}
}

// startsAt says whether an expression can start at 1-based column col of
// l: a character there, only blanks before it.
func startsAt(l string, col int) bool {
	return col > 0 && len(l) >= col && l[col-1] != ' ' && l[col-1] != '\t' && strings.TrimSpace(l[:col-1]) == ""
}

// panicky says whether a line of Rust has something that panics.
func panicky(l string) bool {
	for _, s := range []string{"assert", "panic!", "unwrap", "expect(", "unreachable!", "todo!", "unimplemented!"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// docExample returns the lines of the doc comment's code block whose
// opening fence is at line fence (1-based), as rustdoc compiles them:
// the comment marker gone, a hidden line's "# " too.
func docExample(text []string, fence int) []string {
	var out []string
	for i := fence; i < len(text); i++ { // text[fence] is the line after the fence
		m := rustDocLine().FindStringSubmatch(text[i])
		if m == nil || strings.HasPrefix(strings.TrimSpace(m[1]), "```") {
			break
		}
		l := m[1]
		if l == "#" {
			l = ""
		} else if rest, ok := strings.CutPrefix(l, "# "); ok {
			l = rest
		}
		out = append(out, l)
	}
	return out
}

// crateName reads the library's name from dir's Cargo.toml: [lib]'s name,
// else [package]'s, with - as _.
func crateName(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "Cargo.toml"))
	if err != nil {
		return ""
	}
	section, names := "", map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") {
			section = strings.Trim(l, "[] ")
			continue
		}
		if k, v, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == "name" && names[section] == "" {
			names[section] = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return strings.ReplaceAll(firstNonEmpty(names["lib"], names["package"]), "-", "_")
}
