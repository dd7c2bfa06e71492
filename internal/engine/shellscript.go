package engine

import (
	"errors"

	"github.com/planrunner/runner/internal/engine/shellsafe"
)

// ShellCommand is a shell script ready for `sh -c` with the environment
// that carries its ${{ }} values (see package shellsafe).
type ShellCommand = shellsafe.Command

// shellSegments cuts the template into the literal text and value places
// package shellsafe reads.
func (t *Template) shellSegments() []shellsafe.Segment {
	segs := make([]shellsafe.Segment, len(t.parts))
	for i, p := range t.parts {
		if p.expr != nil {
			segs[i] = shellsafe.Segment{Text: p.expr.Src, Value: true}
		} else {
			segs[i] = shellsafe.Segment{Text: p.lit}
		}
	}
	return segs
}

// renderShell evaluates every ${{ }} and hands the values over.
func (t *Template) renderShell(env map[string]any) (*ShellCommand, error) {
	if t.shell == nil {
		return nil, errors.New("internal: template was not compiled as a shell script")
	}
	exprs := make([]*Expr, 0, len(t.parts))
	for _, p := range t.parts {
		if p.expr != nil {
			exprs = append(exprs, p.expr)
		}
	}
	return t.shell.Command(func(i int) (string, error) {
		v, err := exprs[i].Eval(env)
		if err != nil {
			return "", err
		}
		return Text(v), nil
	})
}
