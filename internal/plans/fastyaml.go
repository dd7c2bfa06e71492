package plans

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// fastYAML reads the YAML plans are written in (block mappings and
// sequences, one-line flow collections, plain, quoted and block scalars,
// comments) into the tree yaml.v3 would build, several times faster: the
// parse was 37% of a 100k-step resume. Any other source, or anything it is
// not sure of, it leaves to yaml.v3 (ok false), so that every error
// message and every rarer feature stays yaml.v3's. It accepts a source
// only when it holds one document and ends with a line break. A source
// it gives up on late (an anchor near the end of a large plan) is read
// twice: the rarer features cost what they did plus this reader's pass.
//
// Comments are not kept (HeadComment, LineComment and FootComment stay
// empty): nothing outside tests reads them, and no plan node is encoded
// back to YAML.
//
// Scalar values are substrings of one copy of the source; the nodes of
// one collection's scalars share an allocation, but each collection node
// is allocated alone, so a step's tree can be freed once it is compiled
// while the rest of the plan is still being read.
func fastYAML(src string) (doc *yaml.Node, ok bool) { return fastYAMLWith(src, 0, nil) }

// fastYAMLWith is fastYAML for a source whose first line is line0+1 of
// its file (a step read again from its plan's text), handing the items
// of the root mapping's "steps" block list to steps as they are read
// when steps is not nil.
func fastYAMLWith(src string, line0 int, steps *fySteps) (doc *yaml.Node, ok bool) {
	if !fastYAMLChars(src) {
		return nil, false
	}
	s := strings.TrimPrefix(src, "\ufeff")
	p := &fyParser{s: s, line0: line0, steps: steps, bom: len(src) - len(s)}
	defer func() {
		if r := recover(); r != nil {
			if _, mine := r.(fyNotMine); !mine {
				panic(r)
			}
			doc, ok = nil, false
		}
	}()
	return p.document(), true
}

// fyNotMine is raised (and recovered in fastYAML) where the reader meets
// something it leaves to yaml.v3: it unwinds the descent from any depth
// without an error checked after every call. Any other panic is a bug
// and goes on.
type fyNotMine struct{}

func notMine() { panic(fyNotMine{}) }

// fastYAMLChars is whether src holds only characters yaml.v3 reads as it
// reads text, with lines ending in "\n" or "\r\n" (a BOM only first, no
// NEL or Unicode line separators, which YAML takes for line breaks).
func fastYAMLChars(src string) bool {
	if len(src) == 0 || src[len(src)-1] != '\n' {
		return false
	}
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\r':
				if i+1 >= len(src) || src[i+1] != '\n' {
					return false
				}
			case c < 0x20 && c != '\n' && c != '\t', c == 0x7f:
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(src[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return false
		case r < 0xa0, r == 0x2028, r == 0x2029, r >= 0xd800 && r < 0xe000, r == 0xfffe, r == 0xffff:
			return false
		case r == 0xfeff && i != 0:
			return false
		}
		i += size
	}
	return true
}

type fyParser struct {
	s string
	// The current line: its number (from 1), where it starts and ends
	// (before "\r\n" or "\n") and where the next one starts.
	line, ls, le, next int
	ind                int  // the current line's indentation in spaces
	ascii              bool // whether the current line is all ASCII (columns are bytes)
	// The children of the collections being read: a collection's own
	// node, or nil for a scalar, which is held in vals until its
	// collection's scalars are allocated together.
	ptrs  []*yaml.Node
	vals  []yaml.Node
	depth int
	endAt int // where a "..." line ends the document, if one does
	line0 int // the line before the source's first in its file
	bom   int // the bytes of a byte order mark before s in the source
	// steps, when set, takes the root mapping's "steps" list item by item
	// (stepsNext: the block being read is that list).
	steps     *fySteps
	stepsNext bool
}

// fySteps takes a plan's steps as they are read, so that a large plan's
// whole tree is never in memory at once: item gets each item of the root
// mapping's "steps" block list, with where its lines are in the source
// (from the start of its dash's line to the start of the next item's,
// or the list's end), and the item is left out of the tree; list is then
// that list's node, its content empty.
type fySteps struct {
	item func(n *yaml.Node, off, end, line int)
	list *yaml.Node
}

// nest counts a level of collections: yaml.v3 refuses deep nesting
// (and a deep recursion here would cost stack), so leave deep ones to it.
func (p *fyParser) nest() {
	if p.depth++; p.depth > 100 {
		notMine()
	}
}

func (p *fyParser) unnest() { p.depth-- }

// fyMark is where a collection's children start in ptrs and vals.
type fyMark struct{ p, v int }

func (p *fyParser) mark() fyMark { return fyMark{len(p.ptrs), len(p.vals)} }

func (p *fyParser) scalar(n yaml.Node) {
	p.vals = append(p.vals, n)
	p.ptrs = append(p.ptrs, nil)
}

func (p *fyParser) coll(n *yaml.Node) { p.ptrs = append(p.ptrs, n) }

// setLine makes the line starting at off the current one.
func (p *fyParser) setLine(off int) {
	p.line++
	p.ls = off
	e := strings.IndexByte(p.s[off:], '\n')
	if e < 0 {
		e = len(p.s) - off
		p.next = len(p.s)
	} else {
		p.next = off + e + 1
	}
	p.le = off + e
	if p.le > off && p.s[p.le-1] == '\r' {
		p.le--
	}
	p.ascii = true
	for i := off; i < p.le; i++ {
		if p.s[i] >= utf8.RuneSelf {
			p.ascii = false
			break
		}
	}
	i := off
	for i < p.le && p.s[i] == ' ' {
		i++
	}
	p.ind = i - off
}

// advance moves to the next line; false at the end of the source.
func (p *fyParser) advance() bool {
	if p.next >= len(p.s) {
		p.ls, p.le, p.ind = len(p.s), len(p.s), 0
		return false
	}
	p.setLine(p.next)
	return true
}

// content moves to the first line from the current one that holds more
// than spaces and a comment; false at the end of the source.
func (p *fyParser) content() bool {
	for p.ls < len(p.s) {
		i := p.ls + p.ind
		if i < p.le {
			switch p.s[i] {
			case '\t':
				notMine()
			case '#':
			default:
				if p.ind == 0 && p.docMarker() {
					if p.s[p.ls] == '-' {
						notMine() // a second document
					}
					// "...": the document ends here; document reads on
					// from endAt, the rest of the parse sees the end.
					p.endAt = p.ls
					p.ls, p.le, p.ind, p.next = len(p.s), len(p.s), 0, len(p.s)
					return false
				}
				return true
			}
		}
		if !p.advance() {
			return false
		}
	}
	return false
}

// docMarker is whether the current line starts with "---" or "..." as a
// document marker.
func (p *fyParser) docMarker() bool {
	t := p.s[p.ls:p.le]
	if len(t) < 3 || (t[:3] != "---" && t[:3] != "...") {
		return false
	}
	return len(t) == 3 || t[3] == ' ' || t[3] == '\t'
}

func (p *fyParser) col(i int) int {
	if p.ascii {
		return i - p.ls + 1
	}
	return utf8.RuneCountInString(p.s[p.ls:i]) + 1
}

func (p *fyParser) document() *yaml.Node {
	p.line = p.line0
	p.setLine(0)
	doc := &yaml.Node{Kind: yaml.DocumentNode}
	for p.ls < len(p.s) {
		i := p.ls + p.ind
		if i < p.le && p.s[i] != '#' {
			break
		}
		if i < p.le && p.s[i] == '\t' {
			notMine()
		}
		if !p.advance() {
			notMine() // no document: yaml.v3 says io.EOF
		}
	}
	if p.ind == 0 && p.docMarker() {
		if p.s[p.ls:p.ls+3] != "---" {
			notMine()
		}
		doc.Line, doc.Column = p.line, 1
		p.rest(p.ls + 3)
		p.advance()
	}
	if p.ls >= len(p.s) || !p.content() {
		notMine()
	}
	if p.ind == 0 && p.s[p.ls] == '%' {
		notMine()
	}
	if doc.Line == 0 {
		doc.Line, doc.Column = p.line, p.ind+1
	}
	root := p.block(-1, false)
	if root == nil {
		notMine()
	}
	doc.Content = []*yaml.Node{root}
	// After the document, only comments, or "..." and comments.
	if p.endAt > 0 {
		p.setLine(p.endAt)
	}
	for p.ls < len(p.s) {
		i := p.ls + p.ind
		if i < p.le && p.s[i] != '#' {
			t := p.s[p.ls:p.le]
			if p.ind != 0 || !strings.HasPrefix(t, "...") || !(len(t) == 3 || t[3] == ' ') {
				notMine()
			}
			p.rest(p.ls + 3)
		}
		if i < p.le && p.s[i] == '\t' {
			notMine()
		}
		if !p.advance() {
			break
		}
	}
	return doc
}

// rest checks that the current line holds only spaces and maybe a
// comment from i on.
func (p *fyParser) rest(i int) {
	j := i
	for j < p.le && p.s[j] == ' ' {
		j++
	}
	if j == p.le {
		return
	}
	if p.s[j] == '#' && j > p.ls && p.s[j-1] == ' ' {
		return
	}
	notMine()
}

// block reads the block collection that starts on the current (content)
// line, indented more than parent (or as much, for a sequence that is a
// mapping's value).
func (p *fyParser) block(parent int, indentless bool) *yaml.Node {
	p.nest()
	defer p.unnest()
	steps := p.stepsNext
	p.stepsNext = false
	i := p.ls + p.ind
	if p.dash(i) {
		return p.sequence(p.ind, indentless && p.ind == parent, steps)
	}
	if p.ind <= parent {
		notMine()
	}
	return p.mapping(i)
}

// dash is whether a block sequence entry starts at i.
func (p *fyParser) dash(i int) bool {
	return p.s[i] == '-' && (i+1 == p.le || p.s[i+1] == ' ')
}

// sequence reads a block sequence whose dashes are at column c; steps:
// it is the plan's steps list, handed to p.steps item by item.
func (p *fyParser) sequence(c int, indentless, steps bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: p.line, Column: c + 1}
	if steps {
		p.steps.list = n
	}
	base := p.mark()
	for {
		i := p.ls + c
		if p.ind != c || !p.dash(i) {
			break
		}
		dashLine, dashCol, start := p.line, p.col(i), p.ls
		j := i + 1
		for j < p.le && p.s[j] == ' ' {
			j++
		}
		if j == p.le || p.s[j] == '#' {
			if !p.advance() || !p.content() || p.ind <= c {
				p.scalar(yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: dashLine, Column: dashCol + 1})
			} else {
				p.coll(p.block(c, false))
			}
		} else {
			p.inline(j, c, true)
		}
		if steps {
			p.handOn(start, dashLine)
		}
		if p.ls >= len(p.s) {
			break
		}
		if p.ind > c {
			notMine()
		}
		if p.ind < c {
			break
		}
		if !p.dash(p.ls + c) {
			if indentless {
				break
			}
			notMine()
		}
	}
	n.Content = p.collect(base)
	return n
}

// handOn gives the steps list's item just read, which started on line
// at start, to p.steps, leaving it out of the tree.
func (p *fyParser) handOn(start, line int) {
	end := p.ls
	if end >= len(p.s) && p.endAt > 0 {
		end = p.endAt
	}
	last := len(p.ptrs) - 1
	item := p.ptrs[last]
	p.ptrs[last] = nil
	p.ptrs = p.ptrs[:last]
	if item == nil { // a scalar: not a step, which the caller says
		v := p.vals[len(p.vals)-1]
		p.vals[len(p.vals)-1] = yaml.Node{}
		p.vals = p.vals[:len(p.vals)-1]
		item = &v
	}
	p.steps.item(item, p.bom+start, p.bom+end, line)
}

// mapping reads a block mapping whose first key starts at i.
func (p *fyParser) mapping(i int) *yaml.Node {
	c := i - p.ls
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: p.line, Column: p.col(i)}
	base := p.mark()
	for {
		k, v := p.key(p.ls + c)
		p.scalar(k)
		if v < 0 {
			notMine()
		}
		j := v
		for j < p.le && p.s[j] == ' ' {
			j++
		}
		if j == p.le || p.s[j] == '#' {
			colonLine, colonCol := p.line, p.col(v)
			if !p.advance() || !p.content() || p.ind < c || (p.ind == c && !p.dash(p.ls+c)) {
				p.scalar(yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: colonLine, Column: colonCol})
			} else {
				// The root mapping's steps: handed on item by item.
				p.stepsNext = p.steps != nil && p.depth == 1 && k.Value == "steps" && p.steps.list == nil
				p.coll(p.block(c, true))
			}
		} else {
			p.inline(j, c, false) // key requires a space after the ':'
		}
		if p.ls >= len(p.s) || p.ind < c {
			break
		}
		if p.ind > c || p.dash(p.ls+c) {
			notMine()
		}
	}
	n.Content = p.collect(base)
	return n
}

// collect turns the children from base on into a collection's content,
// its scalars in one allocation.
func (p *fyParser) collect(base fyMark) []*yaml.Node {
	ptrs, vals := p.ptrs[base.p:], p.vals[base.v:]
	slab := make([]yaml.Node, len(vals))
	copy(slab, vals)
	out := make([]*yaml.Node, len(ptrs))
	s := 0
	for i, n := range ptrs {
		if n == nil {
			n = &slab[s]
			s++
		}
		out[i] = n
	}
	clear(ptrs)
	clear(vals)
	p.ptrs, p.vals = p.ptrs[:base.p], p.vals[:base.v]
	return out
}

// key reads a block mapping key at i; v is where its value starts (after
// the ':'), -1 if no ':' follows it.
func (p *fyParser) key(i int) (k yaml.Node, v int) {
	var end int
	switch p.s[i] {
	case '\'', '"':
		k, end = p.quoted(i)
		for end < p.le && p.s[end] == ' ' {
			end++
		}
	default:
		k, end = p.plain(i, false)
	}
	if end-i > 1000 { // yaml.v3 takes no longer simple key
		notMine()
	}
	if end < p.le && p.s[end] == ':' && (end+1 == p.le || p.s[end+1] == ' ') {
		return k, end + 1
	}
	return k, -1
}

// inline reads the node that starts at i on the current line after "- "
// (inSeq) or after "key: ", in a collection at column c, appends it to
// the children, and moves to the next content line.
func (p *fyParser) inline(i, c int, inSeq bool) {
	switch p.s[i] {
	case '[', '{':
		n, end := p.flow(i)
		p.rest(end)
		p.coll(n)
		p.advance()
		p.content()
		return
	case '|', '>':
		n := p.blockScalar(i, c)
		p.scalar(n)
		return
	case '\'', '"':
		n, end := p.quoted(i)
		j := end
		for j < p.le && p.s[j] == ' ' {
			j++
		}
		if j < p.le && p.s[j] == ':' {
			if !inSeq {
				notMine()
			}
			p.coll(p.mapping(i))
			return
		}
		p.rest(end)
		p.scalar(n)
	default:
		n, end := p.plain(i, false)
		if end < p.le && p.s[end] == ':' {
			if !inSeq {
				notMine()
			}
			p.coll(p.mapping(i))
			return
		}
		p.rest(end)
		p.scalar(n)
	}
	p.advance()
	p.content()
}

// plain reads a plain scalar at i on the current line; end is where it
// stops (its value is trimmed of the spaces before end).
func (p *fyParser) plain(i int, flow bool) (yaml.Node, int) {
	c := p.s[i]
	switch c {
	case '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ' ':
		notMine()
	case '-':
		if i+1 == p.le || p.s[i+1] == ' ' || (flow && strings.IndexByte(",[]{}", p.s[i+1]) >= 0) {
			notMine()
		}
	}
	j, last := i, i
	for j < p.le {
		c := p.s[j]
		switch {
		case c == ' ':
			j++
			continue
		case c == '\t':
			notMine()
		case c == ':':
			if j+1 == p.le || p.s[j+1] == ' ' {
				return p.plainNode(i, last), j
			}
			if flow && strings.IndexByte(",[]{}", p.s[j+1]) >= 0 {
				notMine()
			}
		case c == '#':
			if p.s[j-1] == ' ' {
				if flow {
					notMine()
				}
				return p.plainNode(i, last), j
			}
		case flow && (c == ',' || c == '[' || c == ']' || c == '{' || c == '}'):
			return p.plainNode(i, last), j
		case flow && c == '?':
			notMine()
		}
		j++
		last = j
	}
	return p.plainNode(i, last), j
}

func (p *fyParser) plainNode(i, end int) yaml.Node {
	v := p.s[i:end]
	return yaml.Node{Kind: yaml.ScalarNode, Tag: plainTag(v), Value: v, Line: p.line, Column: p.col(i)}
}

// plainTag is the tag yaml.v3 resolves a plain scalar to, for the values
// whose resolution is plain to see; for the rest (floats, timestamps,
// numbers in other bases, merge keys) the source goes to yaml.v3.
func plainTag(v string) string {
	switch v {
	case "", "~", "null", "Null", "NULL":
		return "!!null"
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return "!!bool"
	case "<<":
		notMine()
	}
	c := v[0]
	switch {
	case (c == '-' || c == '+') && (len(v) == 1 || (v[1] != '.' && (v[1] < '0' || v[1] > '9'))):
		return "!!str" // no number yaml.v3 reads starts so
	case c == '.':
		notMine()
	case c == '-' || c == '+' || (c >= '0' && c <= '9'):
		d := v
		if c == '-' || c == '+' {
			d = v[1:]
		}
		if len(v) > 4 && v[4] == '-' && strings.Trim(v[:4], "0123456789") == "" {
			notMine() // maybe a timestamp
		}
		if strings.Trim(d, "0123456789") == "" {
			if d == "" || len(d) > 18 || (d[0] == '0' && len(d) > 1) {
				notMine() // octal, or beyond int64, or "09" (a float to yaml.v3)
			}
			return "!!int"
		}
		if decimalFloat(d) {
			return "!!float" // a model's temperature, a cost limit
		}
		if strings.Trim(d, "0123456789abcdefABCDEFxXoO._+-") == "" {
			notMine() // maybe a number in another base, or a float
		}
		// A character no number has (as "10s"): yaml.v3's every parse
		// of a number fails.
		return "!!str"
	}
	return "!!str"
}

// decimalFloat is whether d is digits, a point and digits, short enough
// that yaml.v3's ParseFloat cannot fail on it: yaml.v3 resolves such a
// value (0.2, 1.50, 01.5) to !!float. Exponents and the rest go to
// yaml.v3.
func decimalFloat(d string) bool {
	dot := strings.IndexByte(d, '.')
	if dot <= 0 || dot == len(d)-1 || len(d) > 18 {
		return false
	}
	return strings.Trim(d[:dot], "0123456789") == "" && strings.Trim(d[dot+1:], "0123456789") == ""
}

// quoted reads a quoted scalar at i that ends on the current line; end is
// just after its closing quote.
func (p *fyParser) quoted(i int) (yaml.Node, int) {
	q := p.s[i]
	n := yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Line: p.line, Column: p.col(i)}
	if q == '\'' {
		n.Style = yaml.SingleQuotedStyle
		var b *strings.Builder
		from := i + 1
		for j := i + 1; j < p.le; j++ {
			if p.s[j] != '\'' {
				continue
			}
			if j+1 < p.le && p.s[j+1] == '\'' {
				if b == nil {
					b = &strings.Builder{}
				}
				b.WriteString(p.s[from : j+1])
				j++
				from = j + 1
				continue
			}
			if b == nil {
				n.Value = p.s[i+1 : j]
			} else {
				b.WriteString(p.s[from:j])
				n.Value = b.String()
			}
			return n, j + 1
		}
		notMine()
	}
	n.Style = yaml.DoubleQuotedStyle
	var b []byte
	from := i + 1
	for j := i + 1; j < p.le; j++ {
		switch p.s[j] {
		case '"':
			if b == nil {
				n.Value = p.s[i+1 : j]
			} else {
				n.Value = string(append(b, p.s[from:j]...))
			}
			return n, j + 1
		case '\\':
			if j+1 >= p.le {
				notMine()
			}
			b = append(b, p.s[from:j]...)
			e := p.s[j+1]
			w := 0
			switch e {
			case '\\', '"':
				b = append(b, e)
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			case 'r':
				b = append(b, '\r')
			case '0':
				b = append(b, 0)
			case 'a':
				b = append(b, 7)
			case 'b':
				b = append(b, 8)
			case 'e':
				b = append(b, 0x1b)
			case 'f':
				b = append(b, 0xc)
			case 'v':
				b = append(b, 0xb)
			case ' ':
				b = append(b, ' ')
			case 'x':
				w = 2
			case 'u':
				w = 4
			case 'U':
				w = 8
			default:
				notMine()
			}
			if w > 0 {
				if j+2+w > p.le {
					notMine()
				}
				r, err := strconv.ParseUint(p.s[j+2:j+2+w], 16, 32)
				if err != nil || strings.ContainsAny(p.s[j+2:j+2+w], "+-_") || (r >= 0xd800 && r <= 0xdfff) || r > 0x10ffff {
					notMine()
				}
				b = utf8.AppendRune(b, rune(r))
			}
			j += 1 + w
			from = j + 1
		}
	}
	notMine()
	return n, 0
}

// flow reads a flow collection at i that closes on the current line; end
// is just after it.
func (p *fyParser) flow(i int) (*yaml.Node, int) {
	p.nest()
	defer p.unnest()
	open := p.s[i]
	n := &yaml.Node{Style: yaml.FlowStyle, Line: p.line, Column: p.col(i)}
	closer := byte(']')
	if open == '{' {
		n.Kind, n.Tag, closer = yaml.MappingNode, "!!map", '}'
	} else {
		n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
	}
	base := p.mark()
	j := p.space(i + 1)
	for {
		if j >= p.le {
			notMine()
		}
		if p.s[j] == closer {
			break
		}
		if open == '{' && (p.s[j] == '[' || p.s[j] == '{') {
			notMine() // a complex key
		}
		end := p.flowNode(j)
		if open == '{' {
			if end-j > 1000 { // yaml.v3 takes no longer simple key
				notMine()
			}
			if end >= p.le || p.s[end] != ':' || end+1 >= p.le || p.s[end+1] != ' ' {
				notMine()
			}
			j = p.space(end + 1)
			if j >= p.le || p.s[j] == ',' || p.s[j] == '}' {
				notMine()
			}
			end = p.flowNode(j)
		} else if end < p.le && p.s[end] == ':' {
			notMine()
		}
		if end >= p.le {
			notMine()
		}
		if p.s[end] == ',' {
			j = p.space(end + 1)
			continue
		}
		if p.s[end] != closer {
			notMine()
		}
		j = end
		break
	}
	n.Content = p.collect(base)
	return n, j + 1
}

func (p *fyParser) space(j int) int {
	for j < p.le && p.s[j] == ' ' {
		j++
	}
	return j
}

// flowNode reads a node inside a flow collection at i, appends it to the
// children and returns where the spaces after it end.
func (p *fyParser) flowNode(i int) int {
	var end int
	switch p.s[i] {
	case '[', '{':
		var n *yaml.Node
		n, end = p.flow(i)
		p.coll(n)
	case '\'', '"':
		var n yaml.Node
		n, end = p.quoted(i)
		p.scalar(n)
	default:
		var n yaml.Node
		n, end = p.plain(i, true)
		p.scalar(n)
	}
	end = p.space(end)
	if end < p.le && p.s[end] == '#' {
		notMine()
	}
	return end
}

// blockScalar reads a literal or folded scalar whose indicator is at i,
// in a collection whose indentation is parent, and moves to the next
// content line after it.
func (p *fyParser) blockScalar(i, parent int) yaml.Node {
	n := yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Line: p.line, Column: p.col(i)}
	literal := p.s[i] == '|'
	if literal {
		n.Style = yaml.LiteralStyle
	} else {
		n.Style = yaml.FoldedStyle
	}
	chomp := 0
	j := i + 1
	if j < p.le && (p.s[j] == '-' || p.s[j] == '+') {
		chomp = 1
		if p.s[j] == '-' {
			chomp = -1
		}
		j++
	}
	if j < p.le && p.s[j] != ' ' {
		notMine() // an indentation indicator, or something yaml.v3 should name
	}
	p.rest(j)
	// The lines: the indentation is the first non-empty line's.
	var lines []string
	indent := -1
	maxBlank := 0
	for p.advance() {
		t := p.s[p.ls:p.le]
		k := p.ind
		if k < len(t) && t[k] == '\t' && (indent < 0 || k < indent) {
			notMine()
		}
		if indent < 0 {
			if k == len(t) {
				maxBlank = max(maxBlank, k)
				lines = append(lines, "")
				continue
			}
			if k <= parent || k < maxBlank {
				notMine()
			}
			indent = k
		}
		if k < indent && k < len(t) {
			break
		}
		if len(t) <= indent {
			lines = append(lines, "")
		} else {
			lines = append(lines, t[indent:])
		}
	}
	if indent < 0 {
		notMine()
	}
	// Trailing empty lines are the breaks chomping keeps or drops.
	last := len(lines)
	for last > 0 && lines[last-1] == "" {
		last--
	}
	var b strings.Builder
	started, leadingBlank, empties := false, false, 0
	for _, l := range lines[:last] {
		if l == "" {
			empties++
			continue
		}
		blank := l[0] == ' ' || l[0] == '\t'
		if started {
			// yaml.v3 folds the break before a line into a space when
			// neither line starts with a blank and no empty line is
			// between; empty lines are kept as breaks.
			if literal || leadingBlank || blank {
				b.WriteByte('\n')
			} else if empties == 0 {
				b.WriteByte(' ')
			}
		}
		for range empties {
			b.WriteByte('\n')
		}
		empties = 0
		started, leadingBlank = true, blank
		b.WriteString(l)
	}
	if last > 0 && chomp != -1 {
		b.WriteByte('\n')
	}
	if chomp == 1 {
		for range len(lines) - last {
			b.WriteByte('\n')
		}
	}
	n.Value = b.String()
	if p.ls < len(p.s) {
		p.content()
	}
	return n
}
