package replay_test

import (
	"context"
	"fmt"
	"os"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/steps"
)

// A program that embeds runner records a run, then replays it offline
// against a changed plan: the replay stops at the first model request
// that changed, with the step, the path that led there and a diff.
func Example() {
	const plan = `version: 1
name: greet
agents:
  bot: {provider: script, responses: ["Hello!", "Bye!"]}
steps:
  - {label: greet, type: llm, agent: bot, prompt: "Say hello"}
  - {label: list, type: command, run: "echo three files"}
  - {label: leave, type: llm, agent: bot, prompt: "Say bye to ${{ steps.list.output }}"}
`
	prog, err := engine.Compile("plan.yaml", []byte(plan), steps.Registry())
	if err != nil {
		panic(err)
	}
	dir, _ := os.MkdirTemp("", "replay-example")
	defer os.RemoveAll(dir)
	b := board.New(board.Run{ID: "run-1", PlanPath: "plan.yaml", PlanSource: plan, Workdir: dir})
	if err := (&engine.Runner{Prog: prog, Board: b, Workdir: dir}).Run(context.Background()); err != nil {
		panic(err)
	}

	// The same plan: every answer and the command's output come from the
	// recording; nothing runs, nothing is called.
	rep, err := replay.Run(context.Background(), b, replay.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println("unchanged plan matched:", rep.Matched(), "answers from the recording:", rep.Answers)

	// A changed prompt in the last step.
	changed, _ := engine.Compile("plan.yaml", []byte(plan[:len(plan)-len("${{ steps.list.output }}\"}\n")]+"everyone\"}\n"), steps.Registry())
	rep, err = replay.Run(context.Background(), b, replay.Options{Plan: changed})
	if err != nil {
		panic(err)
	}
	d := rep.Divergence
	fmt.Println(d.Kind, d.Label, d.Visit, d.Path)
	fmt.Print(d.Diff)
	// Output:
	// unchanged plan matched: true answers from the recording: 2
	// request leave 1 [greet#1 list#1 leave#1]
	// --- recorded request
	// +++ replayed request
	// @@ -1,2 +1,2 @@
	//  [user]
	// -Say bye to three files
	// +Say bye to everyone
}
