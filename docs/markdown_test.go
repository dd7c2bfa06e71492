package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// page is one Markdown file of the documentation.
type page struct {
	path string // relative to the docs directory, e.g. "../README.md"
	text string
}

// block is a fenced code block.
type block struct {
	lang string
	body string
	line int // the line of the opening fence
}

// pages are README.md at the root and every page under docs/.
func pages(t *testing.T) []page {
	t.Helper()
	names, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	names = append([]string{"../README.md"}, names...)
	var out []page
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page{n, string(b)})
	}
	return out
}

// fence reports whether line opens or closes a code fence: up to three
// spaces, then three backticks.
func fence(line string) (lang string, ok bool) {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 || !strings.HasPrefix(trimmed, "```") {
		return "", false
	}
	return strings.TrimSpace(strings.TrimLeft(trimmed, "`")), true
}

// split returns a page's fenced blocks and its prose lines (with the
// blocks blanked, so line numbers stay right).
func split(text string) (blocks []block, prose []string) {
	lines := strings.Split(text, "\n")
	var cur *block
	var body []string
	for i, l := range lines {
		if lang, ok := fence(l); ok {
			if cur == nil {
				cur = &block{lang: lang, line: i + 1}
				body = nil
			} else {
				cur.body = strings.Join(body, "\n")
				blocks = append(blocks, *cur)
				cur = nil
			}
			prose = append(prose, "")
			continue
		}
		if cur != nil {
			body = append(body, l)
			prose = append(prose, "")
			continue
		}
		prose = append(prose, l)
	}
	return blocks, prose
}

var (
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	mdLink   = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	heading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	notSlug  = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// links returns the targets of a page's Markdown links outside code,
// with their line numbers.
func links(text string) (targets []string, lineNos []int) {
	_, prose := split(text)
	for i, l := range prose {
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
			lineNos = append(lineNos, i+1)
		}
	}
	return targets, lineNos
}

// anchors returns the heading anchors of a page, as GitHub makes them:
// lower case, punctuation dropped, spaces to hyphens, repeats numbered.
func anchors(text string) map[string]bool {
	_, prose := split(text)
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		slug := strings.ToLower(m[1])
		slug = notSlug.ReplaceAllString(slug, "")
		slug = strings.ReplaceAll(slug, " ", "-")
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
