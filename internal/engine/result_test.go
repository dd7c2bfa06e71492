package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// A saved result read back and saved again is the same bytes, whether the
// step made its fields or failed before it could (no fields, perhaps
// timed out): a replay serving the recorded result must save what the
// recording saved.
func TestSavedResultRoundTrips(t *testing.T) {
	prog, err := engine.Compile("plan.yaml", []byte(`version: 1
name: rt
steps:
  - {label: s, type: echo, text: hi}
  - {label: after, type: echo, text: '${{ steps.s.timed_out }} ${{ steps.s.text == "" }}'}
`), registry())
	if err != nil {
		t.Fatal(err)
	}
	n := prog.Node("s")
	tests := []struct {
		name string
		res  engine.Result
	}{
		{"no fields", engine.Result{}},
		{"no fields, timed out", engine.Result{TimedOut: true}},
		{"no fields, an output", engine.Result{Output: "partial"}},
		{"fields", engine.Result{Output: "hi", Fields: EchoResult{Text: "hi", Attempt: 1}}},
		{"zero fields", engine.Result{Fields: EchoResult{}}},
		{"fields, timed out", engine.Result{Output: "hi", Fields: EchoResult{Text: "hi"}, TimedOut: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			saved, err := engine.EncodeResult(tc.res)
			if err != nil {
				t.Fatal(err)
			}
			back, err := engine.DecodeResult(n, saved)
			if err != nil {
				t.Fatal(err)
			}
			again, err := engine.EncodeResult(back)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(saved) {
				t.Errorf("saved %s, saved again as %s", saved, again)
			}
			if back.TimedOut != tc.res.TimedOut {
				t.Errorf("timed_out %v, read back as %v", tc.res.TimedOut, back.TimedOut)
			}
			// A record made elsewhere (a Temporal activity) and applied here
			// shows the next step the same timed_out and zero fields.
			r := &engine.Runner{Prog: prog, Board: board.New(board.Run{ID: "rt"}), Log: zerolog.Nop(), Workdir: t.TempDir()}
			r.Prepare()
			if err := r.Apply(board.StepRecord{Label: "s", Visit: 1, Status: engine.StatusFailed, Result: json.RawMessage(saved)}); err != nil {
				t.Fatal(err)
			}
			got, err := r.RunAttempt(context.Background(), prog.Node("after"), 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			want := "false"
			if tc.res.TimedOut {
				want = "true"
			}
			if f, ok := tc.res.Fields.(EchoResult); !ok || f.Text == "" {
				want += " true"
			} else {
				want += " false"
			}
			if got.Output != want {
				t.Errorf("the next step saw %q, want %q", got.Output, want)
			}
		})
	}
}
