package runs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/planrunner/runner/internal/runs"
)

// A Go program runs a plan as `runner run plan.yaml --var who=embedder`
// does, and reads how each step went from the run's board.
func ExampleStart() {
	dir, err := os.MkdirTemp("", "runs-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
name: hello
vars:
  who: world
steps:
  - label: greet
    type: command
    run: echo "hello, ${{ vars.who }}"
  - label: shout
    type: command
    run: echo "${{ steps.greet.output }}" | tr a-z A-Z
`), 0o644)

	res, err := runs.Start(context.Background(), runs.Options{
		Plan:    plan,
		Vars:    map[string]string{"who": "embedder"},
		Workdir: dir, // the board goes to dir/.runner/runs/<run id>/blackboard.json
	}, runs.Env{})
	if err != nil {
		panic(err) // the run could not start: a bad plan, a missing key...
	}
	fmt.Println("run", res.Status())
	for _, s := range res.Board.Steps() {
		var r struct{ Output string }
		json.Unmarshal(s.Result, &r)
		fmt.Printf("%s %s: %s\n", s.Label, s.Status, r.Output)
	}
	// Output:
	// run succeeded
	// greet succeeded: hello, embedder
	// shout succeeded: HELLO, EMBEDDER
}
