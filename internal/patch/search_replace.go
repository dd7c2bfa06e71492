package patch

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// SEARCH/REPLACE blocks, as Aider asks models to write them:
//
//	path/to/file.go
//	```go
//	<<<<<<< SEARCH
//	lines to find, exactly as they are in the file
//	=======
//	lines to put in their place
//	>>>>>>> REPLACE
//	```
//
// The path may also stand just inside the fence ("diff-fenced"), and a
// block without a path of its own edits the file of the block before.
// Each block is a section of its own with one hunk whose lines are all
// "-" (SEARCH) and "+" (REPLACE): the whole SEARCH must be found, never
// part of it, and blocks for one file apply one after the other, each on
// the result of those before, as Aider applies them. An empty SEARCH
// creates a file. Whitespace is tolerated where the placer tolerates it,
// and a SEARCH found only with its indentation shifted has its REPLACE
// shifted the same way (see reindent); a SEARCH found twice is refused.

// The markers are compiled on first use: every start of runner would pay
// for them otherwise.
var (
	srSearch  = lazyRegexp(`^<{5,9} ?SEARCH\b.*$`)
	srDivider = lazyRegexp(`^={5,9}\s*$`)
	srReplace = lazyRegexp(`^>{5,9} ?REPLACE\b.*$`)
)

// lazyRegexp is a regular expression compiled when first used.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// parseSearchReplace reads every SEARCH/REPLACE block of lines not yet
// used, marking the lines it reads.
func parseSearchReplace(lines []string, used []bool) ([]*fileDiff, error) {
	// An answer whose last line is the start of a block's first line was
	// cut off just as the block began.
	for i := len(lines) - 1; i >= 0 && !used[i]; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if l[0] == '<' && strings.HasPrefix("<<<<<<< SEARCH", l) {
			err := refuse(BadDiff, "line %d: the answer ends in %q, the start of a SEARCH/REPLACE block: it was cut off there; nothing was changed. Send the blocks again, complete", i+1, l)
			err.Truncated = true
			return nil, err
		}
		break
	}
	var out []*fileDiff
	last := "" // the file of the block before
	num := 0
	for i := 0; i < len(lines); i++ {
		if used[i] || !srSearch().MatchString(strings.TrimRight(lines[i], " \t")) {
			continue
		}
		num++
		start := i
		file, at := "", -1
		for j := i - 1; j >= 0 && !used[j]; j-- {
			l := strings.TrimSpace(lines[j])
			if _, _, _, ok := fence(l); ok || l == "" {
				continue
			}
			if srReplace().MatchString(l) {
				break // the block before: this one has no path of its own
			}
			if p, ok := pathLine(l); ok {
				file, at = p, j
			}
			break
		}
		if file == "" {
			if last == "" {
				return nil, refuse(BadDiff, "line %d: SEARCH/REPLACE block %d names no file: put the file's path, alone on its line, just before \"<<<<<<< SEARCH\" (or before the ``` that opens the block)", i+1, num)
			}
			file = last
		}
		last = file
		var search, replace []string
		div, end := -1, -1
		for j := i + 1; j < len(lines); j++ {
			l := strings.TrimRight(lines[j], " \t")
			switch {
			case srSearch().MatchString(l):
				return nil, refuse(BadDiff, "line %d: SEARCH/REPLACE block %d for %s starts again before it ended: each \"<<<<<<< SEARCH\" needs a \"=======\" and a \">>>>>>> REPLACE\" after it", j+1, num, file)
			case srDivider().MatchString(l) && div < 0:
				div = j
			case srDivider().MatchString(l):
				return nil, refuse(BadDiff, "line %d: SEARCH/REPLACE block %d for %s has a second \"=======\" line (the first is line %d), so it cannot tell where SEARCH ends; split the block in two around that line", j+1, num, file, div+1)
			case srReplace().MatchString(l):
				if div < 0 {
					return nil, refuse(BadDiff, "line %d: SEARCH/REPLACE block %d for %s has no \"=======\" line between its SEARCH and REPLACE parts", j+1, num, file)
				}
				end = j
			case div < 0:
				search = append(search, lines[j])
			default:
				replace = append(replace, lines[j])
			}
			if end >= 0 {
				break
			}
		}
		if end < 0 {
			err := refuse(BadDiff, "line %d: SEARCH/REPLACE block %d for %s never ends (no \">>>>>>> REPLACE\" line): the answer was cut off in it; nothing was changed. Send the blocks again, complete", start+1, num, file)
			err.Truncated = true
			return nil, err
		}
		for j := start; j <= end; j++ {
			used[j] = true
		}
		if at >= 0 {
			used[at] = true
		}
		if len(search) > 0 && slices.Equal(search, replace) {
			return nil, refuse(BadDiff, "line %d: SEARCH/REPLACE block %d for %s changes nothing: its SEARCH and REPLACE parts are the same", start+1, num, file)
		}
		f := literal(start+1, file, FormatSearchReplace)
		h := &hunk{num: num, line: start + 1, header: "<<<<<<< SEARCH", format: FormatSearchReplace, reindent: true}
		if len(search) == 0 {
			f.created, f.oldName = true, devNull
		}
		for _, l := range search {
			h.add('-', l, false)
		}
		for _, l := range replace {
			h.add('+', l, false)
		}
		if len(h.ops) > 0 {
			f.hunks = []*hunk{h}
		} else {
			f.hunks = []*hunk{} // an empty new file
		}
		out = append(out, f)
		i = end
	}
	return out, nil
}
