package plans

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/planrunner/runner/internal/testutil/planfuzz"
)

// leanCases are plans whose steps ParseLean must read as Parse does,
// each with whether its first step must be let go of (read from a block
// list by the fast reader) or kept.
var leanCases = []struct {
	name  string
	src   string
	letGo bool
}{
	{"block and flow steps", "version: 1\nsteps:\n  - label: a\n    type: command\n    run: |\n      echo one\n\n      echo two\n    if: 'vars.n > 1'\n  # between\n  - {label: b, type: echo, text: hi, write: {key: 'k${{ 1 }}'}}\n\n  - label: c\n    type: echo\n    retry: {max: 2, until: 'step.ok'}\n    for_each: '[1, 2]'\n    text: x\nvars: {n: 3}\n", true},
	{"group with needs and a sequence", "version: 1\nsteps:\n  - label: g\n    parallel:\n      - {label: x, type: echo, text: a}\n      - label: y\n        needs: [x]\n        type: echo\n        text: b\n      - label: z\n        steps:\n          - {label: z1, type: echo, text: c}\n          - {label: z2, type: echo, text: d}\n  - {label: after, type: echo, text: e}\n", true},
	{"dash alone on its line", "version: 1\nsteps:\n  -\n    label: a\n    type: echo\n    text: hi\n  - label: b\n    type: echo\n    text: there\n", true},
	{"indentless list, keys after", "version: 1\nsteps:\n- {label: a, type: echo, text: hi}\n- label: b\n  type: echo\n  text: ho\noutputs:\n  x: '${{ steps.a.output }}'\n", true},
	{"byte order mark", "\ufeffversion: 1\nsteps:\n  - {label: a, type: echo, text: hi}\n  - {label: b, type: echo, text: ho}\n", true},
	{"CRLF", "version: 1\r\nsteps:\r\n  - label: a\r\n    type: echo\r\n    text: hi\r\n  - {label: b, type: echo, text: ho}\r\n", true},
	{"wide characters", "version: 1\nsteps:\n  - {label: a, type: echo, text: 'héllo ✓', if: 'vars.é'}\n  - label: b\n    type: echo\n    text: \"日本 ${{ vars.x }}\"\n", true},
	{"document end", "version: 1\nsteps:\n  - {label: a, type: echo, text: hi}\n  - label: b\n    type: echo\n    text: |+\n      kept\n\n...\n# after\n", true},
	{"problems: a scalar, a duplicate, no type", "version: 1\nsteps:\n  - oops\n  - {label: a, type: echo, text: hi}\n  - {label: a, type: echo, text: again}\n  - {label: b}\n  - {label: c, type: echo, text: x, bogus: 1}\n", true},
	{"a call keeps its YAML", "version: 1\nsteps:\n  - {label: c, type: plan, plan: missing.yaml}\n  - {label: a, type: echo, text: hi}\n", false},
	{"anchors: all to yaml.v3", "version: 1\nsteps:\n  - &s {label: a, type: echo, text: hi}\n  - {label: b, type: echo, text: ho}\nx: *s\n", false},
	{"given up late, after the steps", "version: 1\nsteps:\n  - {label: a, type: echo, text: hi}\n  - {label: a, type: echo, text: dup}\noutputs: {x: !!str y}\nz: &q 1\n", false},
	{"flow list of steps", "version: 1\nsteps: [{label: a, type: echo, text: hi}]\n", false},
}

// TestParseLeanReadsWhatParseReads fails when a plan read by ParseLean,
// its steps' YAML read again from its text, differs from the plan Parse
// reads: a step, a field, a node's position or value, or a problem.
func TestParseLeanReadsWhatParseReads(t *testing.T) {
	type source struct {
		src   string
		letGo int // -1: the first step must keep its YAML, 1: let go, 0: either
	}
	srcs := map[string]source{}
	for _, c := range leanCases {
		w := -1
		if c.letGo {
			w = 1
		}
		srcs[c.name] = source{c.src, w}
	}
	for path, src := range repoYAML(t) {
		srcs[path] = source{string(src), 0}
	}
	for i := range 40 {
		src := planfuzz.Plan(rand.New(rand.NewPCG(uint64(i), 11)), 5+i%20, planfuzz.Options{Cross: i%2 == 0})
		srcs[fmt.Sprintf("planfuzz %d", i)] = source{src, 0}
	}
	srcs["genresume"] = source{string(genresume(t, 60)), 1}
	srcs["larger than a part hashed"] = source{string(genresume(t, 3000)), 1}
	srcs["not UTF-8"] = source{"version: 1\nsteps:\n  - {label: a, type: echo, text: \"\xff\"}\n", 0}
	srcs["two documents"] = source{"version: 1\nsteps:\n  - {label: a, type: echo, text: hi}\n---\nversion: 2\n", 0}
	srcs["two documents, the second broken"] = source{"version: 1\nsteps:\n  - {label: a, type: echo, text: hi}\n---\n: [\n", 0}
	lean := 0
	for name, c := range srcs {
		want, werr := Parse("p.yaml", []byte(c.src))
		got, gerr := ParseLean("p.yaml", []byte(c.src))
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%s: ParseLean reports\n%v\nParse reports\n%v", name, gerr, werr)
			continue
		}
		// ParseLeanText reads a saved run's plan from its text as
		// ParseLean reads the same bytes.
		txt, terr := ParseLeanText("p.yaml", c.src)
		if fmt.Sprint(terr) != fmt.Sprint(gerr) || (txt == nil) != (got == nil) {
			t.Errorf("%s: ParseLeanText reports\n%v\nParseLean reports\n%v", name, terr, gerr)
		} else if sum := sha256.Sum256([]byte(c.src)); txt != nil && (txt.SHA256 != hex.EncodeToString(sum[:]) || txt.SHA256 != got.SHA256 || txt.Source != got.Source || len(txt.AllSteps()) != len(got.AllSteps())) {
			t.Errorf("%s: ParseLeanText read sha256 %s, %d steps; ParseLean %s, %d", name, txt.SHA256, len(txt.AllSteps()), got.SHA256, len(got.AllSteps()))
		}
		if want == nil || got == nil || len(got.Steps) == 0 {
			continue
		}
		if first := got.Steps[0].LetGo(); c.letGo == 1 && !first || c.letGo == -1 && first {
			t.Errorf("%s: first step lets go of its YAML: %v, want %v", name, first, c.letGo == 1)
		}
		// Any step, at any depth, read again alone is the step as Parse
		// reads it (a report reads one input step's prompt so).
		wantAll := want.AllSteps()
		for i, s := range got.AllSteps() {
			top := s
			for top.Parent != nil {
				top = top.Parent
			}
			if !top.LetGo() || i >= len(wantAll) {
				continue
			}
			f, err := got.Reparse(s)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if d := sameStep(f, wantAll[i]); d != "" {
				t.Errorf("%s: step %s read again alone: %s", name, s.Label, d)
			}
		}
		for _, s := range got.Steps {
			if s.LetGo() {
				lean++
				if s.Node != nil {
					t.Errorf("%s: step %s let go of its YAML but holds its node", name, s.Label)
				}
				if err := got.RestoreNodes(s); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		}
		ws, gs := want.AllSteps(), got.AllSteps()
		if len(gs) != len(ws) {
			t.Errorf("%s: %d steps, want %d", name, len(gs), len(ws))
			continue
		}
		for i := range ws {
			if d := sameStep(gs[i], ws[i]); d != "" {
				t.Errorf("%s: step %d (%s): %s", name, i, ws[i].Label, d)
			}
		}
	}
	if lean == 0 {
		t.Error("no step was let go of")
	}
}

// sameStep names the first difference of got from want, "" if none.
func sameStep(got, want *Step) string {
	switch {
	case got.Label != want.Label || got.Type != want.Type:
		return fmt.Sprintf("%s of type %s", got.Label, got.Type)
	case got.Index != want.Index || got.Line != want.Line:
		return fmt.Sprintf("index %d line %d, want %d, %d", got.Index, got.Line, want.Index, want.Line)
	case (got.Parent == nil) != (want.Parent == nil) || got.Parent != nil && got.Parent.Label != want.Parent.Label:
		return "another parent"
	case len(got.Parallel) != len(want.Parallel) || len(got.Steps) != len(want.Steps):
		return "other steps inside"
	}
	nodes := func(s *Step) []*yaml.Node {
		out := []*yaml.Node{s.Node, s.TypeNode, s.NeedsNode}
		if s.If != nil {
			out = append(out, s.If.Node)
		}
		if s.ForEach != nil {
			out = append(out, s.ForEach.Node)
		}
		if s.Retry != nil {
			out = append(out, s.Retry.Node)
			if s.Retry.Until != nil {
				out = append(out, s.Retry.Until.Node)
			}
		}
		if s.Write != nil {
			out = append(out, s.Write.KeyNode)
		}
		return out
	}
	g, w := nodes(got), nodes(want)
	if len(g) != len(w) {
		return "other fields"
	}
	for i := range w {
		if d := sameTree(g[i], w[i]); d != "" {
			return d
		}
	}
	return ""
}

// TestReparseLeavesTheStep: a step read again, from several goroutines at
// once (steps first run together), is the step as read, and the plan's
// own step is not changed (go test -race).
func TestReparseLeavesTheStep(t *testing.T) {
	src := string(genresume(t, 30))
	want, err := Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseLean("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i, s := range got.Steps {
				f, err := got.Reparse(s)
				if err != nil {
					t.Error(err)
					return
				}
				if d := sameStep(f, want.Steps[i]); d != "" {
					t.Errorf("step %s read again: %s", s.Label, d)
				}
				if s.Node != nil {
					t.Errorf("step %s: Reparse gave the plan's step its node", s.Label)
				}
			}
		})
	}
	wg.Wait()
	kept := *want.Steps[0]
	kept.text = textSpan{}
	if _, err := want.Reparse(&kept); err == nil || !strings.Contains(err.Error(), "not let go of") {
		t.Errorf("Reparse of a step that kept its YAML: %v, want an error saying so", err)
	}
}
