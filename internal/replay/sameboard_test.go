package replay

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"github.com/rs/zerolog"
)

// A replay of a run saved to its file and loaded again checks the two
// boards without building a normal form of any entry: the loaded board
// holds float64s where the live one holds ints, and the quick comparison
// took them for a difference, so every replay built three JSON encodings
// of every entry of both boards and sorted them (a fifth of a replay,
// growing n log n). Values of every JSON type, a for_each, a parallel
// group, a branch loop and a called plan.
func TestReplayChecksBoardsWithoutNormalForms(t *testing.T) {
	cases := []struct{ name, steps string }{
		{"values of every type", `  - {label: s, type: board, op: write, key: s, value: "text ${{ vars.n }}"}
  - {label: n, type: board, op: write, key: n, value: 42}
  - {label: f, type: board, op: write, key: f, value: 2.5}
  - {label: neg, type: board, op: write, key: neg, value: -7}
  - {label: b, type: board, op: write, key: b, value: true}
  - {label: "null", type: board, op: write, key: z, value: null}
  - {label: o, type: board, op: write, key: o, value: {a: 1, b: [1, "x", {c: 2.0}], d: {}}}
  - {label: l, type: board, op: write, key: l, value: [1, 2, 3]}
  - {label: again, type: board, op: write, key: n, value: 43, ttl: 1h}
  - {label: r, type: board, op: read, key: o}
  - {label: del, type: board, op: delete, key: s}`},
		{"for_each", `  - {label: each, type: board, op: write, key: 'k${{ item }}', value: '${{ item }}', for_each: '[1, 2, 3]'}`},
		{"parallel group", `  - label: g
    parallel:
      - {label: a, type: board, op: write, key: a, value: 1}
      - {label: b, type: board, op: write, key: b, value: {x: 2}}
      - {label: c, type: command, run: "echo c"}`},
		{"branch loop", `  - {label: w, type: board, op: write, key: w, value: '${{ steps.w.visits }}', max_visits: 5}
  - label: loop
    type: branch
    max_visits: 5
    cases:
      - {when: steps.w.visits < 4, goto: w}`},
		{"call", `  - {label: call, type: plan, plan: callee.yaml}`},
	}
	const callee = "version: 1\nname: callee\nsteps:\n  - {label: in, type: board, op: write, key: in, value: {n: 1}}\n"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			src := "version: 1\nname: normal\nvars: {n: 3}\nsteps:\n" + tc.steps + "\n"
			path := filepath.Join(wd, "plan.yaml")
			for name, text := range map[string]string{path: src, filepath.Join(wd, "callee.yaml"): callee} {
				if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			prog, err := engine.Compile(path, []byte(src), steps.Registry())
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(wd, "bb.json")
			live, err := board.Create(file, board.Run{ID: "normal", PlanPath: path, PlanSource: src, PlanSHA256: prog.Plan.SHA256,
				Workdir: wd, StartedAt: time.Now()}, board.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := (&engine.Runner{Prog: prog, Board: live, Log: zerolog.Nop(), Workdir: wd}).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := live.Close(); err != nil {
				t.Fatal(err)
			}
			rec, err := board.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(context.Background(), rec, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Matched() {
				t.Fatal(rep.Divergence.String())
			}
			same, built := sameBoard(rec.All(), rep.Board.All())
			if !same || built != 0 {
				t.Errorf("the board check built %d normal forms (same: %v); want none for a replay that matched in order", built, same)
			}
		})
	}
}

// When entries differ in place (another order), only those get normal
// forms, and the verdict is the sorted normal forms' verdict.
func TestSameBoardNormalizesOnlyWhatDiffers(t *testing.T) {
	entries := func(n int) []board.Entry {
		var es []board.Entry
		for i := range n {
			es = append(es, board.Entry{Section: "kv", Key: string(rune('a' + i)), Version: 1, Content: float64(i),
				Meta: map[string]any{"visit": 1.0}})
		}
		return es
	}
	tests := []struct {
		name      string
		change    func([]board.Entry) []board.Entry
		same      bool
		wantBuilt int
	}{
		{"ints for float64s", func(e []board.Entry) []board.Entry {
			for i := range e {
				e[i].Content, e[i].Meta = i, map[string]any{"visit": 1}
			}
			return e
		}, true, 0},
		{"two swapped of twenty", func(e []board.Entry) []board.Entry { e[3], e[11] = e[11], e[3]; return e }, true, 4},
		{"noise in meta of one", func(e []board.Entry) []board.Entry {
			e[5].Meta = map[string]any{"visit": 1, "duration_ms": 9}
			return e
		}, true, 2},
		{"one value differs", func(e []board.Entry) []board.Entry { e[7].Content = "seven"; return e }, false, 2},
		{"-0 for 0", func(e []board.Entry) []board.Entry { e[0].Content = math.Copysign(0, -1); return e }, false, 2},
		{"a number for its text", func(e []board.Entry) []board.Entry { e[2].Content = "2"; return e }, false, 2},
		{"nil meta for an empty one", func(e []board.Entry) []board.Entry { e[4].Meta = nil; return e }, false, 2},
		{"one entry more", func(e []board.Entry) []board.Entry { return append(e, e[0]) }, false, 0},
		{"one entry fewer", func(e []board.Entry) []board.Entry { return e[:len(e)-1] }, false, 0},
		{"none", func(e []board.Entry) []board.Entry { return nil }, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := entries(20), tc.change(entries(20))
			same, built := sameBoard(slices.Values(a), slices.Values(b))
			if same != tc.same || built != tc.wantBuilt {
				t.Errorf("same %v, %d normal forms built; want %v, %d", same, built, tc.same, tc.wantBuilt)
			}
			// What the normal forms alone say.
			na, nb := normalEntries(slices.Values(a)), normalEntries(slices.Values(b))
			if slow := equalStrings(na, nb); slow != same {
				t.Errorf("the normal forms say same=%v, the quick check %v", slow, same)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
