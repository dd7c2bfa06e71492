package shellsafe

import (
	"strings"
	"testing"
)

// segments cuts src at each ${{ … }} into the segments Prepare reads, as
// the engine does; a value's Text is its expression.
func segments(src string) []Segment {
	var segs []Segment
	for {
		i := strings.Index(src, "${{")
		if i < 0 {
			if src != "" {
				segs = append(segs, Segment{Text: src})
			}
			return segs
		}
		if i > 0 {
			segs = append(segs, Segment{Text: src[:i]})
		}
		j := strings.Index(src[i:], "}}")
		segs = append(segs, Segment{Text: strings.TrimSpace(src[i+3 : i+j]), Value: true})
		src = src[i+j+2:]
	}
}

// prepare prepares src, failing the test when it is refused.
func prepare(t *testing.T, src string) *Script {
	t.Helper()
	s, errs := Prepare(segments(src))
	if len(errs) > 0 {
		t.Fatalf("%q: %v", src, errs)
	}
	return s
}

// render hands v over as every value of s.
func render(s *Script, v string) (*Command, error) {
	return s.Command(func(int) (string, error) { return v, nil })
}

// refusedAt prepares run, where @@ stands for ${{ vars.v }}, and returns
// the messages reported at its first value ("" when it is accepted).
func refusedAt(t *testing.T, run string) string {
	t.Helper()
	segs := segments(strings.ReplaceAll(run, "@@", "${{ vars.v }}"))
	first := -1
	for i, s := range segs {
		if s.Value {
			first = i
			break
		}
	}
	_, errs := Prepare(segs)
	var msgs []string
	for _, e := range errs {
		if e.Segment == first {
			msgs = append(msgs, e.Msg)
		}
	}
	return strings.Join(msgs, "; ")
}
