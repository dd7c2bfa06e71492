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
			if c := engine.CachedPrograms(prog); c > engine.ProgCacheSize+engine.ProgTrialSize {
				t.Errorf("%d programs cached, more than %d", c, engine.ProgCacheSize+engine.ProgTrialSize)
			}
		})
	}
}

// Programs of expressions a run uses once are not kept beyond a few,
// while a loop's body, larger than those few, is compiled at most twice
// whatever the number of its turns, by Compile, CompileChecked and
// CompileToRun.
func TestProgramsKeptAreTheOnesRunAgain(t *testing.T) {
	const body, turns = 3 * engine.ProgTrialSize, 10
	loop := func() string {
		var b strings.Builder
		b.WriteString("version: 1\nvars: {n: 1}\nlimits: {max_steps: 100000}\nsteps:\n")
		for i := range body {
			fmt.Fprintf(&b, "  - {label: s%d, type: echo, text: '${{ vars.n + %d }}'}\n", i, i)
		}
		fmt.Fprintf(&b, "  - {label: back, type: jump, when: 'steps.s0.visits < %d', to: s0}\n", turns)
		return b.String()
	}
	once := func() string {
		var b strings.Builder
		b.WriteString("version: 1\nvars: {n: 1}\nlimits: {max_steps: 100000}\nsteps:\n")
		for i := range 4 * engine.ProgCacheSize {
			fmt.Fprintf(&b, "  - {label: s%d, type: echo, text: '${{ vars.n + %d }}'}\n", i, i)
		}
		return b.String()
	}
	for _, compile := range []struct {
		name string
		f    func(string, []byte, *engine.Registry) (*engine.Program, error)
	}{{"Compile", engine.Compile}, {"CompileChecked", engine.CompileChecked}, {"CompileToRun", engine.CompileToRun}} {
		t.Run(compile.name, func(t *testing.T) {
			run := func(src string) (*engine.Program, *board.Board) {
				prog, err := compile.f("plan.yaml", []byte(src), registry())
				if err != nil {
					t.Fatal(err)
				}
				bb := board.New(board.Run{ID: "test"})
				if err := (&engine.Runner{Prog: prog, Board: bb, Log: zerolog.Nop()}).Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				return prog, bb
			}
			prog, bb := run(loop())
			if _, res := lastResult(t, bb, fmt.Sprintf("s%d", body-1)); res["text"] != fmt.Sprint(body) {
				t.Errorf("last step of the body: %q", res["text"])
			}
			// Each expression of the body (and the jump's) compiled at most
			// twice as the run went: once on trial, once to keep.
			if n := engine.RecompiledPrograms(prog); n > 2*(body+1) {
				t.Errorf("%d programs compiled in %d turns of a body of %d expressions", n, turns, body)
			}
			prog, bb = run(once())
			if _, res := lastResult(t, bb, fmt.Sprintf("s%d", 4*engine.ProgCacheSize-1)); res["text"] != fmt.Sprint(4*engine.ProgCacheSize) {
				t.Errorf("last step: %q", res["text"])
			}
			if c := engine.CachedPrograms(prog); c > engine.ProgTrialSize {
				t.Errorf("%d programs kept of expressions run once, more than %d", c, engine.ProgTrialSize)
			}

		})
	}
}
