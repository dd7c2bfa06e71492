package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// A plan with more expressions than its cache of compiled programs
// holds runs them all, and a jump back to its first steps, whose
// programs the cache has dropped by then, runs them again compiled
// anew, by Compile and by CompileChecked (a resume); the cache stays
// bounded.
func TestProgramsDroppedAreCompiledAgain(t *testing.T) {
	n := engine.ProgCacheSize + 50
	var b strings.Builder
	b.WriteString("version: 1\nvars: {n: 1}\nlimits: {max_steps: 100000}\nsteps:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {label: s%d, type: echo, text: '${{ vars.n + %d }} ${{ steps.s0.visits }}'}\n", i, i)
	}
	b.WriteString("  - {label: back, type: jump, when: 'steps.s0.visits < 2', to: s0}\n")
	b.WriteString("  - {label: last, type: echo, text: '${{ steps.s0.visits }} ${{ steps.back.visits }}'}\n")
	for _, compile := range []struct {
		name string
		f    func(string, []byte, *engine.Registry) (*engine.Program, error)
	}{{"Compile", engine.Compile}, {"CompileChecked", engine.CompileChecked}} {
		t.Run(compile.name, func(t *testing.T) {
			prog, err := compile.f("plan.yaml", []byte(b.String()), registry())
			if err != nil {
				t.Fatal(err)
			}
			bb := board.New(board.Run{ID: "test"})
			if err := (&engine.Runner{Prog: prog, Board: bb, Log: zerolog.Nop()}).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"s0": "1 1", "s1": "2 2", fmt.Sprintf("s%d", n-1): fmt.Sprintf("%d 2", n), "last": "2 2"}
			for label, text := range want {
				if _, res := lastResult(t, bb, label); res["text"] != text {
					t.Errorf("%s: %q, want %q", label, res["text"], text)
				}
			}
			if c := engine.CachedPrograms(prog); c > engine.ProgCacheSize {
				t.Errorf("%d programs cached, more than %d", c, engine.ProgCacheSize)
			}
		})
	}
}
