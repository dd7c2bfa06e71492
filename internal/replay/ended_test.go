package replay_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/steps"
	"github.com/rs/zerolog"
)

// A replay that ends where the recording went on names the first visit
// it never got to, however many visits it did replay.
func TestReplayEndedWhileTheRecordingGoesOn(t *testing.T) {
	step := func(l string) string {
		return "  - {label: " + l + ", type: board, op: write, key: " + l + ", value: x}\n"
	}
	recorded := "version: 1\nsteps:\n" + step("a") + step("b") + step("c")
	var many strings.Builder
	many.WriteString("version: 1\nsteps:\n")
	for i := range 150 {
		many.WriteString(step(fmt.Sprint("s", i)))
	}
	for _, tc := range []struct{ name, recorded, replayed, want string }{
		{"the last step dropped", recorded, "version: 1\nsteps:\n" + step("a") + step("b"), "c"},
		{"the first alone", recorded, "version: 1\nsteps:\n" + step("a"), "b"},
		{"past two words of visits", many.String(), "version: 1\nsteps:\n" + strings.Join(strings.SplitAfter(many.String(), "\n")[2:2+130], ""), "s130"},
		{"all of them replayed", recorded, recorded, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			path := filepath.Join(wd, "plan.yaml")
			prog, err := engine.Compile(path, []byte(tc.recorded), steps.Registry())
			if err != nil {
				t.Fatal(err)
			}
			b := board.New(board.Run{ID: "r", PlanPath: path, PlanSource: tc.recorded, PlanSHA256: prog.Plan.SHA256, Workdir: wd})
			if err := (&engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: wd}).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			changed, err := engine.Compile(path, []byte(tc.replayed), steps.Registry())
			if err != nil {
				t.Fatal(err)
			}
			rep, err := replay.Run(context.Background(), b, replay.Options{Plan: changed})
			if err != nil {
				t.Fatal(err)
			}
			switch d := rep.Divergence; {
			case tc.want == "" && d != nil:
				t.Fatalf("diverged: %s", d)
			case tc.want == "":
			case d == nil:
				t.Fatalf("matched; want the recording's %s#1 never replayed", tc.want)
			case d.Label != tc.want || d.Visit != 1 || !strings.Contains(d.Message, "the recording goes on"):
				t.Fatalf("diverged at %s#%d: %s; want the recording's %s#1 never replayed", d.Label, d.Visit, d.Message, tc.want)
			}
		})
	}
}
