package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/planrunner/runner/internal/engine/shellsafe"
	"gopkg.in/yaml.v3"
)

// Template is a string with ${{ expr }} parts, compiled: a step's
// prompt, its env values, a shell script (see shellscript.go).
type Template struct {
	Src   string
	parts []part
	shell *shellsafe.Script // set for shell scripts (ShellTemplate)
	// field is the plan field it came from ("prompt", "env.X"): a step's
	// rendered inputs are saved under it, for the run report.
	field string
}

type part struct {
	lit  string
	expr *Expr // nil for a literal
	off  int   // byte offset of the part in Src
}

// refs are the steps the template's expressions name.
func (t *Template) refs() stepRefs {
	var out stepRefs
	n := 0
	for _, p := range t.parts {
		if p.expr == nil {
			continue
		}
		r := p.expr.stepRefs()
		if r.all {
			return r
		}
		if n++; n == 1 {
			out.labels = r.labels
		} else {
			out.labels = append(out.labels[:len(out.labels):len(out.labels)], r.labels...)
		}
	}
	return out
}

// exprError is a compile error at an offset of the template's text.
type exprError struct {
	offset int // byte offset in the scalar's value where the problem is
	msg    string
}

// compileTemplate splits src into literals and ${{ }} expressions and
// compiles each one.
func compileTemplate(src string, scope *Scope) (*Template, []exprError) {
	t := &Template{Src: src}
	var errs []exprError
	rest, base := src, 0
	for {
		i := strings.Index(rest, "${{")
		if i < 0 {
			if rest != "" {
				t.parts = append(t.parts, part{lit: rest, off: base})
			}
			return t, errs
		}
		if i > 0 {
			t.parts = append(t.parts, part{lit: rest[:i], off: base})
		}
		j := strings.Index(rest[i+3:], "}}")
		if j < 0 {
			errs = append(errs, exprError{base + i, "${{ is not closed with }}"})
			return t, errs
		}
		code := rest[i+3 : i+3+j]
		e, err := compileExpr(strings.TrimSpace(code), scope, false)
		if strings.TrimSpace(code) == "" {
			errs = append(errs, exprError{base + i, "empty ${{ }}"})
		} else if err != nil {
			lead := len(code) - len(strings.TrimLeft(code, " \t\n"))
			errs = append(errs, exprError{base + i + 3 + lead + exprErrorColumn(err), "in ${{ }}: " + exprMessage(code, err, scope)})
		} else {
			t.parts = append(t.parts, part{expr: e, off: base + i})
		}
		base += i + 3 + j + 2
		rest = rest[i+3+j+2:]
	}
}

// Literal is the template's text when it holds no ${{ }}: what it
// renders to is known when the plan loads.
func (t *Template) Literal() (string, bool) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr != nil {
			return "", false
		}
		b.WriteString(p.lit)
	}
	return b.String(), true
}

// Render evaluates every part and joins them as text.
func (t *Template) Render(env map[string]any) (string, error) {
	return t.render(env)
}

func (t *Template) render(env map[string]any) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.lit)
			continue
		}
		v, err := p.expr.Eval(env)
		if err != nil {
			return "", err
		}
		b.WriteString(Text(v))
	}
	return b.String(), nil
}

// valueType is the type Value gives: the expression's for one whole
// ${{ }}, text otherwise (nil: unknown).
func (t *Template) valueType() reflect.Type {
	if len(t.parts) == 1 && t.parts[0].expr != nil {
		if t.parts[0].expr.load() != nil {
			return nil
		}
		return t.parts[0].expr.typ
	}
	return reflect.TypeOf("")
}

// Value is Render, except that a template that is one ${{ }} and nothing
// else gives the expression's value itself.
func (t *Template) Value(env map[string]any) (any, error) {
	if len(t.parts) == 1 && t.parts[0].expr != nil {
		return t.parts[0].expr.Eval(env)
	}
	return t.Render(env)
}

// Text formats a value for insertion into text: strings as they are, nil as
// nothing, lists and mappings as JSON.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case fmt.Stringer:
		return x.String()
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

// ShellQuote quotes s as one POSIX shell word.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=@%+,", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// scalarPos finds where byte offset off of a scalar's value stands in the
// file. Plain and quoted one-line scalars map exactly; for block scalars the
// line is exact and the column is found from the source text.
func scalarPos(src string, n *yaml.Node, off int) (line, col int) {
	v := n.Value
	if off > len(v) {
		off = len(v)
	}
	switch n.Style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		lineIdx := strings.Count(v[:off], "\n")
		lineStart := strings.LastIndex(v[:off], "\n") + 1
		line = n.Line + 1 + lineIdx
		col = 1 + off - lineStart
		if l := sourceLine(src, line); l != "" {
			lineEnd := strings.IndexByte(v[lineStart:], '\n')
			text := v[lineStart:]
			if lineEnd >= 0 {
				text = text[:lineEnd]
			}
			if k := strings.Index(l, text); k >= 0 {
				col = k + 1 + off - lineStart
			}
		}
		return line, col
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if !strings.Contains(v[:off], "\n") {
			return n.Line, n.Column + 1 + off
		}
	default:
		if !strings.Contains(v[:off], "\n") {
			return n.Line, n.Column + off
		}
	}
	return n.Line, n.Column
}

func sourceLine(src string, line int) string {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	return lines[line-1]
}
