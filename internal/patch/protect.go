package patch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A diff may not write into the repository's own data (.git) or into our
// backups (.runner), at any depth: a planted sub/.git/config can name an
// fsmonitor hook that the next `git status` runs. The names below are the
// ones git's verify_path refuses (read-cache.c, path.c, utf8.c), written
// again here for both directories, because a file system may read a
// component that does not spell ".git" as ".git":
//
//   - any case (.GIT): case-insensitive file systems (NTFS, APFS, HFS+);
//   - trailing dots and spaces (".git. ", ".git "): Windows drops them;
//   - an NTFS stream suffix (".git::$INDEX_ALLOCATION", ".git:x");
//   - the 8.3 short name ("GIT~1", "RUNNER~1" to "~4", any digit here);
//   - HFS+ ignorable code points anywhere (".g\u200cit"): HFS+ drops them;
//   - characters that fold to an ASCII letter of the name under Unicode
//     case rules (the dotless ı upper-cases to I, the Kelvin sign K lowers
//     to k): stricter than git, which compares ASCII only.
//
// Components "." and ".." never reach here (checkName, strip).

// protectedDirs are the directory names a diff may not touch, lower case,
// without their leading dot.
var protectedDirs = [...]string{"git", "runner"}

// protectedComponent reports which protected name c stands for, or "".
func protectedComponent(c string) string {
	for _, name := range protectedDirs {
		if isNTFSAlias(c, name) || isHFSAlias(c, name) {
			return "." + name
		}
	}
	return ""
}

// isNTFSAlias: "." + name in any case, or its short name (the name cut to
// six characters, "~" and a digit), followed only by dots and spaces, up to
// the end or a ":" (an NTFS stream).
func isNTFSAlias(c, name string) bool {
	var rest string
	switch {
	case len(c) > len(name) && c[0] == '.' && foldPrefix(c[1:], name):
		rest = c[1+len(name):]
	default:
		short := name
		if len(short) > 6 {
			short = short[:6]
		}
		if len(c) < len(short)+2 || !foldPrefix(c, short) || c[len(short)] != '~' || !isDigit(c[len(short)+1]) {
			return false
		}
		rest = c[len(short)+2:]
	}
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case ':':
			return true
		case '.', ' ':
		default:
			return false
		}
	}
	return true
}

// foldPrefix reports whether s starts with the lower-case ASCII needle,
// in any ASCII case.
func foldPrefix(s, needle string) bool {
	if len(s) < len(needle) {
		return false
	}
	for i := 0; i < len(needle); i++ {
		if s[i]|0x20 != needle[i] {
			return false
		}
	}
	return true
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// isHFSAlias: "." + name once HFS+ has dropped its ignorable code points and
// folded case, with trailing dots and spaces dropped as Windows does.
// Invalid UTF-8 is not a name HFS+ accepts as such, so it is no alias.
func isHFSAlias(c, name string) bool {
	if !utf8.ValidString(c) {
		return false
	}
	want := "." + name
	i := 0
	for _, r := range c {
		if hfsIgnorable(r) {
			continue
		}
		if i == len(want) {
			if r != '.' && r != ' ' {
				return false
			}
			continue
		}
		if !foldsTo(r, rune(want[i])) {
			return false
		}
		i++
	}
	return i == len(want)
}

// foldsTo reports whether r is the ASCII letter or dot want under Unicode
// case folding (simple folding, upper and lower case mappings).
func foldsTo(r, want rune) bool {
	if r == want {
		return true
	}
	if want == '.' {
		return false
	}
	if unicode.ToLower(r) == want || unicode.ToLower(unicode.ToUpper(r)) == want {
		return true
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == want {
			return true
		}
	}
	return false
}

// hfsIgnorable: the code points HFS+ leaves out of a name when comparing
// (the list in git's utf8.c next_hfs_char).
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}

// checkComponents refuses a stripped path any of whose components stands
// for a protected directory (or file of that name).
func checkComponents(p string) error {
	for c := range strings.SplitSeq(p, "/") {
		if name := protectedComponent(c); name != "" {
			if c == name {
				return refuse(Unsafe, "%s: the diff may not change files under %s/ (at any depth)", p, name)
			}
			return refuse(Unsafe, "%s: %q may be read as %s by some file systems (case, trailing dots or spaces, NTFS short names or streams, ignorable Unicode); the diff may not change files under %s/", p, c, name, name)
		}
	}
	return nil
}
