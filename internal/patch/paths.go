package patch

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
)

// checkName refuses a file name from the diff that could reach outside the
// directory, before any strip level is applied: stripping only removes
// leading components, so a name that is clean here stays clean.
func checkName(name string) error {
	switch {
	case name == "":
		return refuse(Unsafe, "empty file name in the diff")
	case strings.ContainsAny(name, "\x00\n\r"):
		return refuse(Unsafe, "file name %q holds a NUL or line break", name)
	case strings.Contains(name, `\`):
		return refuse(Unsafe, "file name %q holds a backslash; use / between directories", name)
	case path.IsAbs(name) || (len(name) >= 2 && name[1] == ':' && isLetter(name[0])):
		return refuse(Unsafe, "file name %q is absolute; the diff may only name files inside the directory", name)
	}
	if len(name) > maxPathBytes {
		return refuse(Unsafe, "file name %q is %d bytes long, over the limit of %d (PATH_MAX)", clipLine(name, 80), len(name), maxPathBytes)
	}
	depth := 0
	for c := range strings.SplitSeq(name, "/") {
		if c == ".." {
			return refuse(Unsafe, "file name %q goes up a directory (\"..\"); the diff may only name files inside the directory", clipLine(name, 200))
		}
		if len(c) > maxNameBytes {
			return refuse(Unsafe, "file name %q has a component of %d bytes, over the limit of %d (NAME_MAX)", clipLine(name, 80), len(c), maxNameBytes)
		}
		if c != "" && c != "." {
			depth++
		}
	}
	if depth-1 > maxDepth+1 { // one more for a/ or b/; checkTarget holds the stripped path to maxDepth
		return refuse(Unsafe, "file name %q is %d directories deep, over the limit of %d", clipLine(name, 80), depth-1, maxDepth)
	}
	return nil
}

// Limits on the names a diff may use. Linux refuses a path over PATH_MAX
// (4096 bytes with its NUL) and a name over NAME_MAX (255 bytes), so no
// file past them can be in a repository; depth has no such limit, but a
// tree deeper than 128 directories is hard to find, and each level is a
// directory to check, make and perhaps remove again (3,000 levels kept an
// apply busy for minutes).
const (
	maxPathBytes = 4096
	maxNameBytes = 255
	maxDepth     = 128 // directories above the file
)

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// strip removes n leading components from a checked name. ok is false when
// nothing would be left.
func strip(name string, n int) (string, bool) {
	if plainPath(name) {
		// No empty or "." component: the result is what follows the
		// n-th slash, a slice of name. Splitting and joining cost three
		// allocations per name, and every file's names are stripped at
		// one level or two. (Slices of the diff's text are copied
		// where they are kept: see planner.target.)
		for range n {
			i := strings.IndexByte(name, '/')
			if i < 0 {
				return "", false
			}
			name = name[i+1:]
		}
		return name, true
	}
	parts := strings.FieldsFunc(name, func(r rune) bool { return r == '/' })
	var keep []string
	for _, p := range parts {
		if p != "." {
			keep = append(keep, p)
		}
	}
	if n >= len(keep) {
		return "", false
	}
	return strings.Join(keep[n:], "/"), true
}

// plainPath reports whether name has no empty component (no leading,
// trailing or double slash) and no "." one.
func plainPath(name string) bool {
	if name == "" || name[0] == '/' || name[len(name)-1] == '/' || strings.Contains(name, "//") {
		return false
	}
	return name != "." && !strings.HasPrefix(name, "./") && !strings.HasSuffix(name, "/.") && !strings.Contains(name, "/./")
}

// checkTarget refuses stripped paths the diff must not touch: the
// repository's own data and our backups.
func checkTarget(p string) error {
	if n := strings.Count(p, "/"); n > maxDepth {
		return refuse(Unsafe, "file name %q is %d directories deep, over the limit of %d", clipLine(p, 80), n, maxDepth)
	}
	return checkComponents(p)
}

// lstatWalk looks at p from the top Root, component by component,
// without following any link: every directory on the way must be a real
// one, and p itself, if it exists, a directory (dir) or a regular file. A
// missing p gives (nil, nil); missing is its first missing parent ("" when
// all exist). tree does the same with one call per file; this is for what
// runs once (backups, rollback) and for tree past its open directories.
func lstatWalk(root *os.Root, p string, dir bool) (fi fs.FileInfo, missing string, err error) {
	parts := strings.Split(p, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fi, err := root.Lstat(sub)
		if errors.Is(err, fs.ErrNotExist) {
			if i < len(parts)-1 {
				return nil, sub, nil
			}
			return nil, "", nil
		}
		if err != nil {
			return nil, "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, "", refuse(Unsafe, "%s: %s is a symbolic link; the diff may not write through links", p, sub)
		}
		if i < len(parts)-1 || dir {
			if !fi.IsDir() {
				return nil, "", refuse(Unsafe, "%s: %s is not a directory", p, sub)
			}
			if i < len(parts)-1 {
				continue
			}
			return fi, "", nil
		}
		if !fi.Mode().IsRegular() {
			return nil, "", refuse(Unsafe, "%s is not a regular file", p)
		}
		return fi, "", nil
	}
	return nil, "", nil
}

// parentsToMake lists the directories to create for p, outermost first,
// starting at missing.
func parentsToMake(p, missing string) []string {
	if missing == "" {
		return nil
	}
	var out []string
	for d := path.Dir(p); d != "." && len(d) >= len(missing); d = path.Dir(d) {
		out = append([]string{d}, out...)
	}
	return out
}
