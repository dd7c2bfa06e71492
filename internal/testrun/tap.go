package testrun

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

var tapFramework = &framework{
	name: "tap",
	command: func(string) (string, string) {
		// node's own runner prints TAP on request; other producers (prove,
		// tape, bats --tap) need the plan to give a command.
		if !hasBinary("node") {
			return "", "framework tap needs a command that prints TAP (or node for the default `node --test`)"
		}
		return "node --test --test-reporter=tap", ""
	},
	prepare: func(cmd, _ string, env []string) (string, []string) { return cmd, env },
	parser: func(dir, _ string) parser {
		abs, err := filepath.Abs(dir)
		if err != nil {
			abs = dir
		}
		return &tapParser{dir: abs}
	},
}

var (
	tapPoint   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)(ok|not ok)\b\s*(\d+)?\s*(?:-\s*)?(.*)$`) })
	tapPlan    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*1\.\.(\d+)`) })
	tapSubtest = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)# Subtest: ?(.*)$`) })
	tapBail    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*Bail out!\s*(.*)$`) })
	// a directive: "# SKIP reason", "# TODO", case as the spec allows
	tapDirective = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(?:^|\s)#\s*(skip\S*|todo)\b\s*(.*)$`) })
)

type tapParser struct {
	dir     string
	rep     report
	names   []tapName  // enclosing subtests
	levels  []tapLevel // indentations of open nesting levels, outermost first
	cur     *tapResult // the last test point, while its YAML block may follow
	yaml    []string
	inYAML  bool
	yamlInd int
}

type tapName struct {
	indent int
	name   string
}

// tapLevel is one level of subtest nesting, by its indentation.
type tapLevel struct {
	indent int
	failed bool // a test point at this level (or under it) failed
}

type tapResult struct {
	indent    int
	ok        bool
	id, desc  string
	directive string
	parent    bool
	kidFailed bool
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }

func (p *tapParser) stdout(l string) {
	if p.inYAML {
		if strings.TrimSpace(l) == "..." && indentOf(l) <= p.yamlInd {
			p.inYAML = false
			p.end()
			return
		}
		if len(p.yaml) < keptLines {
			p.yaml = append(p.yaml, l)
		}
		return
	}
	if p.cur != nil && strings.TrimSpace(l) == "---" && indentOf(l) > p.cur.indent {
		p.inYAML, p.yamlInd = true, indentOf(l)
		return
	}
	t := strings.TrimLeft(l, " \t")
	if !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "Bail out!") && !strings.HasPrefix(t, "1..") &&
		!strings.HasPrefix(t, "ok") && !strings.HasPrefix(t, "not ok") {
		return // a producer's own output between test points
	}
	if m := tapSubtest().FindStringSubmatch(l); m != nil {
		p.end()
		p.names = append(p.names, tapName{len(m[1]), m[2]})
		return
	}
	if m := tapBail().FindStringSubmatch(l); m != nil {
		p.end()
		p.rep.structured = true
		p.rep.counts.Errors++
		p.rep.fail(Failure{ID: "Bail out!", Kind: KindError, Message: clip(firstNonEmpty(m[1], "the producer gave up"), maxLineLen)})
		return
	}
	if m := tapPlan().FindStringSubmatch(l); m != nil {
		p.end()
		p.rep.structured = true
		return
	}
	if m := tapPoint().FindStringSubmatch(l); m != nil {
		p.end()
		p.point(len(m[1]), m[2] == "ok", m[4])
	}
}

func (p *tapParser) stderr(string) {}

// point starts a test point; it is counted once its YAML block, if any, is
// read. A point whose subtests came before it is their parent.
func (p *tapParser) point(indent int, ok bool, desc string) {
	p.rep.structured = true
	r := &tapResult{indent: indent, ok: ok}
	// Deeper levels still open were this point's subtests.
	for n := len(p.levels); n > 0 && p.levels[n-1].indent > indent; n = len(p.levels) {
		r.parent = true
		r.kidFailed = r.kidFailed || p.levels[n-1].failed
		p.levels = p.levels[:n-1]
	}
	if n := len(p.levels); n == 0 || p.levels[n-1].indent < indent {
		p.levels = append(p.levels, tapLevel{indent: indent})
	}
	if m := tapDirective().FindStringSubmatchIndex(desc); m != nil {
		r.directive = strings.ToLower(desc[m[2] : m[2]+4])
		desc = desc[:m[0]]
	}
	r.desc = strings.TrimSpace(strings.ReplaceAll(desc, `\#`, "#"))
	for len(p.names) > 0 && p.names[len(p.names)-1].indent >= indent {
		p.names = p.names[:len(p.names)-1]
	}
	var path []string
	for _, n := range p.names {
		path = append(path, n.name)
	}
	r.id = strings.Join(append(path, r.desc), " > ")
	p.cur = r
}

// end counts the current test point.
func (p *tapParser) end() {
	r := p.cur
	if r == nil {
		return
	}
	p.cur = nil
	block := p.yaml
	p.yaml = nil
	if !r.ok && r.directive != "todo" && len(p.levels) > 0 {
		p.levels[len(p.levels)-1].failed = true
	}
	if r.parent && (r.ok || r.kidFailed) {
		return // its subtests are counted
	}
	c := &p.rep.counts
	c.Total++
	switch {
	case r.directive == "skip" || r.directive == "todo" && !r.ok:
		c.Skipped++
	case r.ok:
		c.Passed++
	default:
		c.Failed++
		p.rep.fail(p.failure(r, block))
	}
}

func (p *tapParser) failure(r *tapResult, block []string) (f Failure) {
	f = Failure{ID: relText(p.dir, r.id), Kind: KindFail, Message: r.desc}
	ind := -1
	for _, l := range block {
		if strings.TrimSpace(l) != "" && (ind < 0 || indentOf(l) < ind) {
			ind = indentOf(l)
		}
	}
	var text []string
	for _, l := range block {
		if len(l) >= ind && ind > 0 {
			l = l[ind:]
		}
		text = append(text, l)
	}
	defer func() { f.Message, f.Excerpt = relText(p.dir, f.Message), relText(p.dir, f.Excerpt) }()
	var doc map[string]any
	if yaml.Unmarshal([]byte(strings.Join(text, "\n")), &doc) == nil {
		if msg := firstLine(fmt.Sprint(firstOf(doc, "message", "error"))); msg != "" && msg != "<nil>" {
			f.Message = msg
		}
		f.File, f.Line = p.where(doc)
		if doc["failureType"] == "testTimeoutFailure" || strings.Contains(strings.ToLower(f.Message), "timed out") {
			f.Kind = KindTimeout
		}
	}
	f.Excerpt = excerpt(text, func(l string) bool {
		t := strings.TrimSpace(l)
		return strings.HasPrefix(t, "duration_ms:") || strings.Contains(t, "node:internal") || strings.Contains(t, "(node:") ||
			strings.Contains(t, "node_modules")
	})
	if f.Message == "" {
		f.Message = "not ok"
	}
	return f
}

// where finds the place of a failure in a TAP YAML block: the first stack
// frame in the project (the assertion), else `at:`, `location:`, or
// `file:` and `line:`.
func (p *tapParser) where(doc map[string]any) (string, int) {
	if s, ok := doc["stack"].(string); ok {
		for _, l := range strings.Split(s, "\n") {
			if file, line, ok := jsFrame(strings.TrimSpace(l), existsIn(p.dir), false); ok && p.inside(file) {
				return p.rel(file), line
			}
		}
	}
	for _, key := range []string{"at", "location"} {
		switch v := doc[key].(type) {
		case string:
			// at: "Test.<anonymous> (/p/test.js:10:5)"; location: '/p/test.js:10:5'
			if file, line, ok := jsFrame(strings.TrimSpace(v), existsIn(p.dir), true); ok {
				return p.rel(file), line
			}
		case map[string]any:
			if file, ok := v["file"].(string); ok {
				return p.rel(file), toInt(v["line"])
			}
		}
	}
	if file, ok := doc["file"].(string); ok {
		return p.rel(file), toInt(doc["line"])
	}
	return "", 0
}

func (p *tapParser) inside(file string) bool {
	return !strings.Contains(file, "node_modules") && !strings.HasPrefix(file, "node:") &&
		(!filepath.IsAbs(file) || strings.HasPrefix(file, p.dir+string(filepath.Separator)))
}

func (p *tapParser) rel(file string) string {
	file = strings.TrimPrefix(file, "file://")
	if filepath.IsAbs(file) {
		if r, err := filepath.Rel(p.dir, file); err == nil && !strings.HasPrefix(r, "..") {
			return filepath.ToSlash(r)
		}
	}
	return file
}

func (p *tapParser) finish(int, bool) *report {
	p.inYAML = false
	p.end()
	return &p.rep
}

func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return v
		}
	}
	return ""
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func toInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	case string:
		return atoi(n)
	}
	return 0
}
