package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/steps"
	"github.com/rs/zerolog"
)

// An offline replay runs no command wherever the command is: at the top,
// as a for_each item, inside a for_each block's item, in a called plan,
// in a called plan of a for_each item. Each command leaves a file; the
// files are removed after the run and none comes back in the replay,
// which matches. Before, the step type was looked up by the plan's own
// labels only, and the commands of block items and callees ran again.
func TestOfflineReplayRunsNoCommand(t *testing.T) {
	const callee = `version: 1
name: callee
steps:
  - {label: inner, type: command, run: "echo inner >> ran-inner-${{ vars.who }}; echo inner"}
vars:
  who: top
`
	cases := []struct{ name, steps string }{
		{"top", `  - {label: top, type: command, run: "echo top >> ran-top; echo top"}`},
		{"for_each item", `  - {label: each, type: command, for_each: '["a", "b"]', run: "echo x >> ran-${{ item }}; echo ${{ item }}"}`},
		{"for_each group", `  - label: each
    for_each: '["a", "b"]'
    parallel:
      - {label: say, type: command, run: "echo x >> ran-${{ item }}; echo ${{ item }}"}
      - {label: other, type: board, op: write, key: 'k-${{ item }}', value: x}`},
		{"for_each sequence", `  - label: outer
    parallel:
      - label: each
        for_each: '["a", "b"]'
        steps:
          - {label: say, type: command, run: "echo x >> ran-${{ item }}; echo ${{ item }}"}
          - {label: then, type: command, run: "echo y >> ran-then-${{ item }}; echo then"}
      - {label: beside, type: board, op: write, key: k, value: x}`},
		{"call", `  - {label: call, type: plan, plan: callee.yaml}`},
		{"call per item", `  - {label: call, type: plan, plan: callee.yaml, for_each: '["a", "b"]', vars: {who: '${{ item }}'}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			src := "version: 1\nname: offline\nsteps:\n" + tc.steps + "\n"
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
			b := board.New(board.Run{ID: "offline", PlanPath: path, PlanSource: src, PlanSHA256: prog.Plan.SHA256, Workdir: wd})
			if err := (&engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: wd}).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			ran := func() []string {
				m, _ := filepath.Glob(filepath.Join(wd, "ran-*"))
				return m
			}
			files := ran()
			if len(files) == 0 {
				t.Fatal("the run left no file: the test proves nothing")
			}
			for _, f := range files {
				os.Remove(f)
			}
			rep, err := replay.Run(context.Background(), b, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Matched() {
				t.Fatal(rep.Divergence.String())
			}
			if again := ran(); len(again) > 0 {
				t.Errorf("the offline replay ran commands again: %s", strings.Join(again, ", "))
			}
		})
	}
}
