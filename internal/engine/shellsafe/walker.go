package shellsafe

import (
	"fmt"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// finding is where a value stands: how its reference is quoted, whether
// it lands in arithmetic, or why it cannot stand there.
type finding struct {
	quote   quoting
	arith   bool
	inArith bool // the word is an operand of an arithmetic expression
	refuse  string
}

// walker visits the parsed script keeping the path from the root, so
// the place of each stand-in word is known from its ancestors.
type walker struct {
	prefix string
	stack  []syntax.Node
	found  []*finding
	funcs  map[string]syntax.Node // the script's functions: name → body
	ints   map[string]bool        // variables declared -i or -n
	intAll bool                   // a -i or -n declaration whose names cannot be told
}

func (w *walker) visit(n syntax.Node) bool {
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
func (w *walker) placeholders(text string) []int {
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
// reference is quoted, and whether the place is data (see places.go).
func (w *walker) classify() *finding {
	st := w.stack
	leaf := st[len(st)-1]
	if _, ok := leaf.(*syntax.Comment); ok {
		return &finding{quote: qComment}
	}
	fd, msg := leafQuoting(st)
	if msg != "" {
		return refused(msg)
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

// leafQuoting is the quoting the reference is written in, told by the
// leaf holding the stand-in and its parent; or why none is safe.
func leafQuoting(st []syntax.Node) (*finding, string) {
	switch l := st[len(st)-1].(type) {
	case *syntax.SglQuoted:
		if l.Dollar {
			return &finding{quote: qDollarSingle}, ""
		}
		return &finding{quote: qSingle}, ""
	case *syntax.Lit:
		return litQuoting(st)
	}
	return nil, "cannot tell where this ${{ }} stands in the script"
}

// litQuoting is leafQuoting for literal text: its parent says whether it
// is quoted, or a name.
func litQuoting(st []syntax.Node) (*finding, string) {
	switch p := st[len(st)-2].(type) {
	case *syntax.DblQuoted:
		return &finding{quote: qDouble}, ""
	case *syntax.Word:
		return wordQuoting(p, st[len(st)-3])
	case *syntax.ParamExp:
		return nil, "a ${{ }} cannot be a variable's name"
	case *syntax.ExtGlob:
		return nil, "a ${{ }} cannot stand inside an extended glob pattern"
	default:
		return nil, "a ${{ }} cannot be a name here (" + nodeName(p) + ")"
	}
}

// wordQuoting is litQuoting for an unquoted word, whose parent may make
// it an arithmetic operand or a heredoc.
func wordQuoting(wd *syntax.Word, above syntax.Node) (*finding, string) {
	fd := &finding{quote: qBare}
	switch above.(type) {
	case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.BinaryArithm, *syntax.UnaryArithm,
		*syntax.ParenArithm, *syntax.LetClause, *syntax.CStyleLoop:
		fd.inArith = true
	}
	r, ok := above.(*syntax.Redirect)
	if !ok || (r.Op != syntax.Hdoc && r.Op != syntax.DashHdoc) {
		return fd, ""
	}
	switch {
	case r.Word == wd:
		return nil, "a heredoc's delimiter cannot hold ${{ }}"
	case r.Hdoc == wd && quotedDelimiter(r.Word):
		return nil, "a quoted heredoc (<<'EOF') expands nothing, so a ${{ }} there cannot be handed over safely; write the heredoc unquoted (<<EOF): the value is still taken literally"
	case r.Hdoc == wd:
		fd.quote = qDouble
	}
	return fd, ""
}

func refused(msg string) *finding { return &finding{refuse: msg} }

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
