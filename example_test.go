package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/planrunner/runner"
)

// tempPlan writes a plan into a new temporary directory and returns the
// directory and the plan's path.
func tempPlan(src string) (dir, plan string) {
	dir, err := os.MkdirTemp("", "runner-example-")
	if err != nil {
		panic(err)
	}
	plan = filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(src), 0o644); err != nil {
		panic(err)
	}
	return dir, plan
}

// A plan is checked whole when it loads: every problem comes back at
// once, each at its line and column.
func ExampleLoad() {
	dir, plan := tempPlan(`version: 1
name: build
steps:
  - label: vet
    type: command
    run: go vet ./...
  - label: report
    type: command
    run: echo "${{ steps.vet.outptu }}"
  - label: notify
    type: command
    rn: echo done
`)
	defer os.RemoveAll(dir)

	_, err := runner.Load(plan, nil)
	var problems runner.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Printf("line %d col %d: %s\n", p.Line, p.Col, p.Message)
		}
	}

	os.WriteFile(plan, []byte(`version: 1
name: build
steps:
  - label: vet
    type: command
    run: go vet ./...
`), 0o644)
	p, err := runner.Load(plan, nil)
	fmt.Println(p.Name(), p.Steps(), err)
	// Output:
	// line 9 col 30: in ${{ }}: unknown field outptu (did you mean "output"?)
	// line 12 col 5: unknown field "rn" in step "notify" (type command) (did you mean "run"?)
	// build [vet] <nil>
}

// A run goes to its end; its blackboard says how it went and holds the
// keys its steps wrote.
func ExampleRun() {
	dir, plan := tempPlan(`version: 1
name: hello
vars:
  who: world
steps:
  - label: greet
    type: command
    run: echo "hello, ${{ vars.who }}"
  - label: save
    type: board
    op: write
    key: greeting
    value: ${{ steps.greet.output }}
`)
	defer os.RemoveAll(dir)

	bb, err := runner.Run(context.Background(), plan, runner.Options{
		Workdir: dir, // the blackboard goes to dir/.runner/runs/<run id>/blackboard.json
		Vars:    map[string]string{"who": "embedder"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	greeting, _ := bb.Get("greeting")
	fmt.Println(bb.Status(), greeting)
	// Output:
	// succeeded hello, embedder
}

// shout is a step type of the program's own: `type: shout` upper-cases
// its text and gives its length as a result field.
type shout struct{}

type shoutResult struct {
	Length int `json:"length"`
}

type shoutStep struct{ text *runner.Template }

func (shout) Name() string { return "shout" }
func (shout) Result() any  { return shoutResult{} }

func (shout) Decode(d *runner.Decoder) runner.Step {
	d.Required("text")
	return shoutStep{text: d.Template("text")}
}

func (s shoutStep) Run(ctx context.Context, sc *runner.StepContext) (runner.Result, error) {
	text, err := sc.Eval(s.text)
	if err != nil {
		return runner.Result{}, err
	}
	up := strings.ToUpper(text) + "!"
	return runner.Result{Output: up, Fields: shoutResult{Length: len(up)}}, nil
}

// A program's own step type is registered beside the built-in ones; its
// result fields are checked in expressions like theirs.
func ExampleRegistry() {
	dir, plan := tempPlan(`version: 1
name: loud
steps:
  - label: hello
    type: shout
    text: hello, ${{ vars.who }}
  - label: echo
    type: command
    run: echo "${{ steps.hello.output }} (${{ steps.hello.length }} characters)"
vars:
  who: world
`)
	defer os.RemoveAll(dir)

	types := runner.NewRegistry()
	types.Register(shout{})
	bb, err := runner.Run(context.Background(), plan, runner.Options{Workdir: dir, Types: types})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range bb.Steps() {
		fmt.Printf("%s (%s) %s: %v\n", s.Label, s.Type, s.Status, s.Output)
	}
	// Output:
	// hello (shout) succeeded: HELLO, WORLD!
	// echo (command) succeeded: HELLO, WORLD! (13 characters)
}

// offlinePlan asks a scripted agent (canned answers: no network, no API
// key) and echoes its answer.
const offlinePlan = `version: 1
name: triage
agents:
  triager:
    provider: script
    responses:
      triage: ["severity: high"]
steps:
  - label: triage
    type: llm
    agent: triager
    prompt: How bad is "Save twice makes two invoices"?
  - label: file
    type: command
    run: echo "filed with ${{ steps.triage.output }}"
`

// A saved run is read back from its blackboard.json: its status, the
// steps it ran, what was written on its board.
func ExampleOpen() {
	dir, plan := tempPlan(offlinePlan)
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "blackboard.json")
	if _, err := runner.Run(context.Background(), plan, runner.Options{Workdir: dir, Out: out}); err != nil {
		fmt.Println(err)
		return
	}

	bb, err := runner.Open(out)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("run", bb.Status())
	for _, s := range bb.Steps() {
		fmt.Printf("%s#%d %s: %v\n", s.Label, s.Visit, s.Status, s.Output)
	}
	for _, e := range bb.Entries() {
		fmt.Printf("entry %d: %s by %s in step %s\n", e.Seq, e.Section, e.Author, e.Label)
	}
	// Output:
	// run succeeded
	// triage#1 succeeded: severity: high
	// file#1 succeeded: filed with severity: high
	// entry 1: llm by triager in step triage
	// entry 2: llm by triager in step triage
	// entry 3: steps by runner in step triage
	// entry 4: steps by runner in step file
}

// A saved run replays offline: the model's answers and the commands'
// results come from the recording. The unchanged plan matches it; a
// changed plan shows where it first goes another way.
func ExampleReplay() {
	dir, plan := tempPlan(offlinePlan)
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "blackboard.json")
	if _, err := runner.Run(context.Background(), plan, runner.Options{Workdir: dir, Out: out}); err != nil {
		fmt.Println(err)
		return
	}

	bb, err := runner.Replay(context.Background(), out, runner.ReplayOptions{})
	fmt.Println("unchanged:", bb.Status(), err)

	os.WriteFile(plan, []byte(strings.Replace(offlinePlan, "How bad", "How serious", 1)), 0o644)
	_, err = runner.Replay(context.Background(), out, runner.ReplayOptions{Plan: plan})
	var d *runner.Divergence
	if errors.As(err, &d) {
		fmt.Printf("changed: diverged at %s#%d\n", d.Label, d.Visit)
		fmt.Print(d.String())
	}
	// Output:
	// unchanged: succeeded <nil>
	// changed: diverged at triage#1
	// replay diverged at step triage (visit 1), model call 1: the request differs from the recorded one
	//   path: triage#1
	// --- recorded request
	// +++ replayed request
	// @@ -1,2 +1,2 @@
	//  [user]
	// -How bad is "Save twice makes two invoices"?
	// +How serious is "Save twice makes two invoices"?
}
