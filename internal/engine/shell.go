package engine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A ${{ }} in a shell script (command `run:`, test `command:`) never has its
// value pasted into the script's text. Each one becomes a reference to an
// environment variable that holds the value (the approach of GitHub's
// hardening guide for Actions), written for where it stands, which the shell
// parser tells exactly: `"${RUNNER_EXPR_1}"` as a word, `${RUNNER_EXPR_1}`
// inside "…" or an unquoted heredoc, `'"${RUNNER_EXPR_1}"'` inside '…'. The
// shell expands a variable once and never reads its value as syntax, so no
// quoting rule can be wrong. Places where even that is unsafe (a quoted
// heredoc, which expands nothing; a name; text another shell runs, as with
// eval or sh -c) are refused when the plan is loaded; in arithmetic, which
// bash evaluates recursively (`a[$(cmd)]` runs cmd), the value must be a
// plain integer, checked at run time.

// shellPlan is a script rewritten with references in place of its ${{ }}s.
type shellPlan struct {
	script string
	slots  []shellSlot // one per expression part, in order
}

type shellSlot struct {
	name  string // environment variable holding the value
	arith bool   // the value must be a plain integer
}

// where a ${{ }} stands, as far as its reference's spelling goes
type shellQuote int

const (
	qBare         shellQuote = iota // part of an unquoted word
	qDouble                         // inside "…", or an unquoted heredoc body
	qSingle                         // inside '…'
	qDollarSingle                   // inside $'…'
	qComment                        // in a comment: nothing runs it
)

// shellEnvName names the variable of the i-th ${{ }} (from 0).
func shellEnvName(i int) string { return "RUNNER_EXPR_" + strconv.Itoa(i+1) }

// shellError is a place in a script that cannot take a value safely, at
// the offset of its ${{ in the template.
type shellError struct {
	part int // index into the template's parts
	msg  string
	at   int // bytes into the part where the problem is
}

// planShell finds where each ${{ }} of t stands in the script and builds
// the rewritten script. It fails for a script that does not parse (where
// a value would land cannot be told) and for places that cannot take a
// value safely.
func planShell(t *Template) (*shellPlan, []shellError) {
	// Stand a unique word in for each ${{ }}: letters and digits parse as
	// a word (or a name, or an arithmetic variable) wherever they land.
	var lits strings.Builder
	for _, p := range t.parts {
		lits.WriteString(p.lit)
	}
	prefix := "RUNNERPH"
	for strings.Contains(lits.String(), prefix) {
		prefix += "Q"
	}
	var b strings.Builder
	var exprParts []int
	for i, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.lit)
			continue
		}
		fmt.Fprintf(&b, "%s%dX", prefix, len(exprParts))
		exprParts = append(exprParts, i)
	}
	src := b.String()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
	if err != nil {
		f2, err2 := syntax.NewParser(syntax.Variant(syntax.LangPOSIX), syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
		if err2 != nil {
			msg := err.Error()
			var pe syntax.ParseError
			at := 0
			if errors.As(err, &pe) {
				msg = fmt.Sprintf("line %d: %s", pe.Pos.Line(), pe.Text)
				at = int(pe.Pos.Offset())
			}
			if len(exprParts) == 0 {
				// A script that cannot run is found at load, not after the
				// paid steps before it.
				return nil, []shellError{{0, "the script does not parse as shell (" + msg + ")", at}}
			}
			return nil, []shellError{{exprParts[0], "the script does not parse as shell (" + msg + "), so where its ${{ }} values would land cannot be told", 0}}
		}
		f = f2
	}
	if len(exprParts) == 0 {
		return &shellPlan{script: t.Src}, nil
	}
	w := &shellWalker{prefix: prefix, found: make([]*shellFound, len(exprParts))}
	w.declared(f)
	syntax.Walk(f, w.visit)

	sp := &shellPlan{slots: make([]shellSlot, len(exprParts))}
	var errs []shellError
	var out strings.Builder
	k := 0
	for i, p := range t.parts {
		if p.expr == nil {
			out.WriteString(p.lit)
			continue
		}
		fd := w.found[k]
		name := shellEnvName(k)
		sp.slots[k] = shellSlot{name: name}
		switch {
		case fd == nil:
			errs = append(errs, shellError{part: i, msg: "cannot tell where this ${{ }} stands in the script"})
		case fd.refuse != "":
			errs = append(errs, shellError{part: i, msg: fd.refuse})
		case fd.quote != qSingle && fd.quote != qComment && escaped(t.parts[:i]):
			errs = append(errs, shellError{part: i, msg: "a ${{ }} right after a backslash: the backslash would quote the value's reference, not the value"})
		default:
			sp.slots[k].arith = fd.arith
			q := fd.quote
			if q == qBare && fd.arith && fd.inArith {
				// dash reads no quotes in $(( )); the value is a checked integer
				q = qDouble
			}
			out.WriteString(reference(q, name))
		}
		k++
	}
	sp.script = out.String()
	return sp, errs
}

// escaped reports whether the literal text before a part ends in an odd
// number of backslashes.
func escaped(before []part) bool {
	n := 0
	for i := len(before) - 1; i >= 0; i-- {
		if before[i].expr != nil {
			break
		}
		s := before[i].lit
		j := len(s)
		for j > 0 && s[j-1] == '\\' {
			j--
		}
		n += len(s) - j
		if j > 0 {
			break
		}
	}
	return n%2 == 1
}

// reference is how the variable name is written where the value stood.
func reference(q shellQuote, name string) string {
	switch q {
	case qDouble, qComment:
		return "${" + name + "}"
	case qSingle:
		return `'"${` + name + `}"'`
	case qDollarSingle:
		return `'"${` + name + `}"$'`
	}
	return `"${` + name + `}"`
}

type shellFound struct {
	quote   shellQuote
	arith   bool
	inArith bool // the word is an operand of an arithmetic expression
	refuse  string
}

// shellWalker visits the parsed script keeping the path from the root, so
// the place of each stand-in word is known from its ancestors.
type shellWalker struct {
	prefix string
	stack  []syntax.Node
	found  []*shellFound
	funcs  map[string]syntax.Node // the script's functions: name → body
	ints   map[string]bool        // variables declared -i or -n
	intAll bool                   // a -i or -n declaration whose names cannot be told
}

func (w *shellWalker) visit(n syntax.Node) bool {
	if n == nil {
		w.stack = w.stack[:len(w.stack)-1]
		return true
	}
	w.stack = append(w.stack, n)
	var text string
	switch n := n.(type) {
	case *syntax.Lit:
		text = n.Value
	case *syntax.SglQuoted:
		text = n.Value
	case *syntax.Comment:
		text = n.Text
	default:
		return true
	}
	for _, k := range w.placeholders(text) {
		if k < len(w.found) && w.found[k] == nil {
			w.found[k] = w.classify()
		}
	}
	return true
}

// placeholders lists the stand-in numbers in text.
func (w *shellWalker) placeholders(text string) []int {
	var out []int
	for {
		i := strings.Index(text, w.prefix)
		if i < 0 {
			return out
		}
		text = text[i+len(w.prefix):]
		j := 0
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		if j > 0 && j < len(text) && text[j] == 'X' {
			if k, err := strconv.Atoi(text[:j]); err == nil {
				out = append(out, k)
			}
		}
		text = text[j:]
	}
}

// classify says where the node on top of the stack stands: how its
// reference is quoted, and whether the place is data (see shellplace.go).
func (w *shellWalker) classify() *shellFound {
	st := w.stack
	leaf := st[len(st)-1]
	if _, ok := leaf.(*syntax.Comment); ok {
		return &shellFound{quote: qComment}
	}
	fd := &shellFound{}
	// The quoting the reference is written in: the leaf and its parent.
	parent := st[len(st)-2]
	switch l := leaf.(type) {
	case *syntax.SglQuoted:
		fd.quote = qSingle
		if l.Dollar {
			fd.quote = qDollarSingle
		}
	case *syntax.Lit:
		switch p := parent.(type) {
		case *syntax.DblQuoted:
			fd.quote = qDouble
		case *syntax.Word:
			fd.quote = qBare
			switch st[len(st)-3].(type) {
			case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.BinaryArithm, *syntax.UnaryArithm,
				*syntax.ParenArithm, *syntax.LetClause, *syntax.CStyleLoop:
				fd.inArith = true
			}
			if r, ok := st[len(st)-3].(*syntax.Redirect); ok && (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) {
				if r.Word == p {
					return refused("a heredoc's delimiter cannot hold ${{ }}")
				}
				if r.Hdoc == p {
					if quotedDelimiter(r.Word) {
						return refused("a quoted heredoc (<<'EOF') expands nothing, so a ${{ }} there cannot be handed over safely; write the heredoc unquoted (<<EOF): the value is still taken literally")
					}
					fd.quote = qDouble
				}
			}
		case *syntax.ParamExp:
			return refused("a ${{ }} cannot be a variable's name")
		case *syntax.ExtGlob:
			return refused("a ${{ }} cannot stand inside an extended glob pattern")
		default:
			return refused("a ${{ }} cannot be a name here (" + nodeName(p) + ")")
		}
	default:
		return refused("cannot tell where this ${{ }} stands in the script")
	}
	// Every place from the leaf up to the script must be one known to be
	// data; a command substitution's output lands where it stands, so the
	// walk goes on through it.
	child := leaf
	for i := len(st) - 2; i >= 0; i-- {
		if msg := w.place(st, i, child, fd); msg != "" {
			return refused(msg)
		}
		child = st[i]
	}
	return fd
}

func refused(msg string) *shellFound { return &shellFound{refuse: msg} }

// quotedDelimiter reports whether a heredoc's delimiter word is quoted
// in any part, which turns expansion off in its body.
func quotedDelimiter(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.Contains(p.Value, `\`) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func nodeName(n syntax.Node) string {
	switch n.(type) {
	case *syntax.Assign:
		return "an assignment's variable"
	case *syntax.WordIter:
		return "a for loop's variable"
	case *syntax.FuncDecl:
		return "a function's name"
	case *syntax.Redirect:
		return "a redirection's file descriptor"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", n), "*syntax.")
}

// ShellCommand is a script ready for `sh -c`, with the environment that
// carries its ${{ }} values. Close removes any file a large value was
// handed over in.
type ShellCommand struct {
	Script string   // the script, with references in place of the ${{ }}s
	Env    []string // NAME=value for each ${{ }}, to add to the process's environment
	dir    string
}

// Close removes the files large values were written to.
func (c *ShellCommand) Close() error {
	if c == nil || c.dir == "" {
		return nil
	}
	return os.RemoveAll(c.dir)
}

// A value up to shellEnvValueMax bytes goes in the environment while the
// values together stay under shellEnvTotalMax; a larger one is written to
// a private temporary file that the script reads first. Linux refuses an
// exec whose single environment string passes 128 KiB (MAX_ARG_STRLEN),
// or whose arguments and environment together pass a quarter of the stack
// limit (often 2 MiB).
const (
	shellEnvValueMax = 32 << 10
	shellEnvTotalMax = 256 << 10
)

// renderShell evaluates every ${{ }} and hands the values over.
func (t *Template) renderShell(env map[string]any) (*ShellCommand, error) {
	if t.shell == nil {
		return nil, errors.New("internal: template was not compiled as a shell script")
	}
	c := &ShellCommand{Script: t.shell.script}
	var pre strings.Builder
	total, k := 0, 0
	for _, p := range t.parts {
		if p.expr == nil {
			continue
		}
		slot := t.shell.slots[k]
		k++
		v, err := p.expr.Eval(env)
		if err != nil {
			c.Close()
			return nil, err
		}
		s := Text(v)
		if strings.IndexByte(s, 0) >= 0 {
			c.Close()
			return nil, fmt.Errorf("${{ %s }}: the value holds a NUL byte, which no shell variable can hold", p.expr.Src)
		}
		if slot.arith && !plainInteger(s) {
			c.Close()
			return nil, fmt.Errorf("${{ %s }} stands in shell arithmetic, where only a plain integer is safe; the value is %s", p.expr.Src, quoteShort(s))
		}
		if len(s) <= shellEnvValueMax && total+len(s) <= shellEnvTotalMax {
			total += len(s)
			c.Env = append(c.Env, slot.name+"="+s)
			continue
		}
		if c.dir == "" {
			if c.dir, err = os.MkdirTemp("", "runner-values-"); err != nil {
				return nil, fmt.Errorf("a value too large for the environment: %w", err)
			}
		}
		file := c.dir + "/" + slot.name
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			c.Close()
			return nil, fmt.Errorf("a value too large for the environment: %w", err)
		}
		c.Env = append(c.Env, slot.name+"_FILE="+file)
		// $(cat) drops trailing newlines; the x keeps them.
		fmt.Fprintf(&pre, `%s=$(cat "$%s_FILE" && printf x) || exit 1; %s=${%s%%x}; `, slot.name, slot.name, slot.name, slot.name)
	}
	// On the script's first line, so the shell's line numbers stay right.
	c.Script = pre.String() + c.Script
	return c, nil
}

func plainInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || len(s) > 19 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func quoteShort(s string) string {
	if len(s) > 60 {
		return strconv.Quote(s[:60]) + "…"
	}
	return strconv.Quote(s)
}
