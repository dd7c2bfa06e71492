package replay_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/runs"
)

// A run resumed several times replays to a match, and at each resume
// the replay takes over the recorded board without a normal form (three
// JSON encodings) of any entry the replay wrote as recorded: before, each
// resume built one of every entry of the board, (resumes × entries).
func TestReplayOfResumesBuildsNoNormalForms(t *testing.T) {
	dir := t.TempDir()
	var plan strings.Builder
	plan.WriteString("version: 1\nname: resumed\nsteps:\n")
	for i := range 3 {
		for j := range 20 {
			fmt.Fprintf(&plan, "  - {label: w%d_%d, type: board, op: write, key: 'k%d_%d', value: {n: %d, s: 'x'}}\n", i, j, i, j, j)
		}
		fmt.Fprintf(&plan, "  - {label: gate%d, type: command, run: 'test -f marker%d'}\n", i, i)
	}
	path := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(path, []byte(plan.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bb := filepath.Join(dir, "bb.json")
	res, err := runs.Start(context.Background(), runs.Options{Plan: path, Workdir: dir, Board: bb}, runs.Env{})
	if err != nil {
		t.Fatal(err)
	}
	res.Board.Close()
	for i := range 3 {
		if res.Err == nil {
			t.Fatalf("the run got past gate%d without its marker", i)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("marker%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if res, err = runs.Resume(context.Background(), bb, runs.ResumeOptions{}, runs.Env{Warnings: io.Discard}); err != nil {
			t.Fatal(err)
		}
		res.Board.Close()
	}
	if res.Err != nil {
		t.Fatalf("the last resume: %v", res.Err)
	}
	rec, err := board.Load(bb)
	if err != nil {
		t.Fatal(err)
	}
	before := replay.TakeOverNormalForms.Load()
	rep, err := replay.Run(context.Background(), rec, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Matched() {
		t.Fatal(rep.Divergence.String())
	}
	if n := replay.TakeOverNormalForms.Load() - before; n != 0 {
		t.Errorf("taking over the board at 3 resumes built %d normal forms; want none", n)
	}
}
