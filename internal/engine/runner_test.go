package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/rs/zerolog"
)

// run compiles src and runs it on an in-memory board.
func run(t *testing.T, src string) (*board.Board, error) {
	t.Helper()
	prog, err := engine.Compile("plan.yaml", []byte(src), registry())
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	b := board.New(board.Run{ID: "test"})
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: t.TempDir(),
		Sleep: func(context.Context, time.Duration) error { return nil }}
	return b, r.Run(context.Background())
}

func visits(b *board.Board) string {
	var out []string
	for _, s := range b.Steps() {
		out = append(out, s.Label+":"+s.Status)
	}
	return strings.Join(out, " ")
}

func TestRunOrderBranchLoopAndParallel(t *testing.T) {
	b, err := run(t, `
version: 1
vars: {rounds: 3}
steps:
  - label: start
    type: echo
    text: go
  - label: checks
    parallel:
      - {label: a, type: echo, text: "a${{ steps.start.output }}"}
      - {label: b, type: echo, text: b}
      - {label: c, type: echo, text: c}
  - label: work
    type: echo
    text: "round ${{ steps.work.visits + 1 }}"
  - label: again
    type: jump
    when: steps.work.visits < vars.rounds
    to: work
  - label: last
    type: echo
    text: "${{ steps.work.output }} / ${{ steps.a.output }}"
`)
	if err != nil {
		t.Fatal(err)
	}
	steps := b.Steps()
	got := visits(b)
	for _, want := range []string{"start:succeeded", "a:succeeded", "b:succeeded", "c:succeeded", "checks:succeeded",
		"work:succeeded again:succeeded work:succeeded again:succeeded work:succeeded again:succeeded last:succeeded"} {
		if !strings.Contains(got, want) {
			t.Errorf("visits %q lack %q", got, want)
		}
	}
	last := steps[len(steps)-1]
	if !strings.Contains(string(last.Result), `"output":"round 3 / ago"`) {
		t.Errorf("last result = %s", last.Result)
	}
	if w := steps[len(steps)-3]; w.Label != "work" || w.Visit != 3 {
		t.Errorf("third work visit recorded as %s#%d", w.Label, w.Visit)
	}
	if b.Run().Status != "succeeded" {
		t.Errorf("run status %q", b.Run().Status)
	}
}

func TestLimits(t *testing.T) {
	tests := []struct {
		name, src, wantErr string
	}{
		{"max_visits", `
version: 1
steps:
  - {label: spin, type: echo, text: x, max_visits: 4}
  - {label: back, type: jump, when: "true", to: spin}
`, `step spin: visited 5 times, past its max_visits of 4`},
		{"max_steps", `
version: 1
limits: {max_steps: 7}
steps:
  - {label: spin, type: echo, text: x, max_visits: 100}
  - {label: back, type: jump, when: "true", to: spin, max_visits: 100}
`, `limits.max_steps 7 reached`},
		{"failure", `
version: 1
steps:
  - {label: bad, type: echo, text: boom}
  - {label: never, type: echo, text: x}
`, `step bad: boom`},
		{"run timeout", `
version: 1
limits: {timeout: 50ms}
steps:
  - {label: slow, type: echo, text: x, sleep: 5s}
`, `limits.timeout reached (50ms)`},
		{"step timeout", `
version: 1
steps:
  - {label: slow, type: echo, text: x, sleep: 5s, timeout: 20ms}
`, `step slow: timed out after 20ms`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := run(t, tt.src)
			var re *engine.RunError
			if !errors.As(err, &re) || re.Status != "failed" {
				t.Fatalf("err = %v, want a failed run", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %q, want it to say %q", err, tt.wantErr)
			}
			if b.Run().Status != "failed" || !strings.Contains(b.Run().Error, tt.wantErr) {
				t.Errorf("run = %s %q", b.Run().Status, b.Run().Error)
			}
			for _, s := range b.Steps() {
				if s.Label == "never" {
					t.Errorf("a step after the failure ran")
				}
			}
		})
	}
}

func TestContinueOnErrorAndRetry(t *testing.T) {
	b, err := run(t, `
version: 1
steps:
  - {label: flaky, type: echo, text: x, fail_until: 3, retry: {max: 5, backoff: 1ms}}
  - {label: bad, type: echo, text: boom, continue_on_error: true}
  - label: until
    type: echo
    text: "${{ steps.until.visits }}"
    retry: {max: 4, backoff: 1ms, until: step.attempt >= 2}
  - {label: after, type: echo, text: "${{ steps.bad.failed }} ${{ steps.bad.error }} ${{ steps.flaky.attempt }}"}
`)
	if err != nil {
		t.Fatal(err)
	}
	steps := b.Steps()
	if steps[0].Attempts != 3 || len(steps[0].Delays) != 2 {
		t.Errorf("flaky: %d attempts, delays %v; want 3 attempts, 2 delays", steps[0].Attempts, steps[0].Delays)
	}
	if steps[2].Attempts != 2 {
		t.Errorf("until: %d attempts, want 2", steps[2].Attempts)
	}
	if got := string(steps[3].Result); !strings.Contains(got, `"output":"true boom 3"`) {
		t.Errorf("after = %s", got)
	}
}

func TestFailFastCancelsSiblings(t *testing.T) {
	start := time.Now()
	b, err := run(t, `
version: 1
steps:
  - label: group
    parallel:
      - {label: slow1, type: echo, text: x, sleep: 10s}
      - {label: slow2, type: echo, text: x, sleep: 10s}
      - {label: bad, type: echo, text: boom}
`)
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want the group to fail with boom", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("siblings were not canceled: took %s", d)
	}
	for _, s := range b.Steps() {
		// A sibling is canceled while it runs, or never starts if it had not yet.
		// Canceled is its own status: not failed by itself.
		if strings.HasPrefix(s.Label, "slow") && (s.Status != "canceled" || !strings.Contains(s.Error, "sibling")) {
			t.Errorf("%s: %s %q, want canceled because a sibling failed", s.Label, s.Status, s.Error)
		}
		if want := map[string]string{"bad": "failed", "group": "failed"}[s.Label]; want != "" && s.Status != want {
			t.Errorf("%s: %s, want %s", s.Label, s.Status, want)
		}
	}
}

func TestMaxConcurrency(t *testing.T) {
	maxRunning.Store(0)
	_, err := run(t, `
version: 1
steps:
  - label: group
    max_concurrency: 2
    parallel:
      - {label: s1, type: echo, text: x, sleep: 20ms}
      - {label: s2, type: echo, text: x, sleep: 20ms}
      - {label: s3, type: echo, text: x, sleep: 20ms}
      - {label: s4, type: echo, text: x, sleep: 20ms}
      - {label: s5, type: echo, text: x, sleep: 20ms}
`)
	if err != nil {
		t.Fatal(err)
	}
	if m := maxRunning.Load(); m != 2 {
		t.Errorf("at most %d ran at once, want 2", m)
	}
}

func TestInterrupt(t *testing.T) {
	prog, err := engine.Compile("plan.yaml", []byte(`
version: 1
steps:
  - {label: first, type: echo, text: x}
  - {label: slow, type: echo, text: x, sleep: 10s}
  - {label: never, type: echo, text: x}
`), registry())
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "test"})
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop()}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(engine.ErrInterrupted) })
	err = r.Run(ctx)
	var re *engine.RunError
	if !errors.As(err, &re) || re.Status != "interrupted" {
		t.Fatalf("err = %v, want interrupted", err)
	}
	if got := visits(b); got != "first:succeeded slow:canceled" {
		t.Errorf("steps = %q", got)
	}
	if b.Run().Status != "interrupted" {
		t.Errorf("run status %q", b.Run().Status)
	}
}

func TestValidationReportsEveryProblem(t *testing.T) {
	src := `version: 1
vars:
  n: 3
stepz: []
steps:
  - label: one
    type: echo
    txt: hello
  - label: two
    type: echo
    text: "${{ steps.one.outptu }}"
    timeout: 5
  - label: one
    type: jump
    when: steps.tset.passed
    to: nowhere
  - label: Bad-Label
    type: nope
  - label: test
    type: echo
`
	_, err := engine.Compile("plan.yaml", []byte(src), registry())
	var list plans.Errors
	if !errors.As(err, &list) {
		t.Fatalf("err = %v, want plans.Errors", err)
	}
	want := []string{
		`plan.yaml:4:1: unknown field "stepz" in the plan (did you mean "steps"?)`,
		`plan.yaml:8:5: unknown field "txt" in step "one" (type echo) (did you mean "text"?)`,
		`plan.yaml:11:26: in ${{ }}: unknown field outptu (did you mean "output"?)`,
		`plan.yaml:12:14: timeout: "5" is not a duration such as 30s, 5m or 1h30m (a unit is required: 5s)`,
		`plan.yaml:13:12: label "one" is already used by the step at line 6`,
		`plan.yaml:15:17: when: unknown field tset (did you mean "test"?)`,
		`plan.yaml:17:12: label "Bad-Label" must match [a-z][a-z0-9_]*`,
		`plan.yaml:18:11: unknown step type "nope"`,
	}
	got := list.Error()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing problem:\n  %s\ngot:\n%s", w, got)
		}
	}
}

// orderScript is a Script that only orders groups.
type orderScript struct{ order []string }

func (o orderScript) Result(string, int) (board.StepRecord, bool) { return board.StepRecord{}, false }
func (o orderScript) Order(string, int) ([]string, bool)          { return o.order, true }
func (o orderScript) Canceled(string, int) engine.Cancel          { return engine.NotCanceled }
func (o orderScript) Times(string, int) (time.Time, time.Time, bool) {
	return time.Time{}, time.Time{}, false
}
func (o orderScript) Clock(string, int, int) (time.Time, bool)      { return time.Time{}, false }
func (o orderScript) Read(string, int, int) (engine.ReadSeen, bool) { return engine.ReadSeen{}, false }
func (o orderScript) CutAfter(string, int) error                    { return nil }
func (o orderScript) Cut(string, int) error                         { return nil }
func (o orderScript) Ends(string, int) bool                         { return false }
func (o orderScript) EndsAfter(string, int) bool                    { return false }

// With a Script's Order (replay), a group's children run one at a time in that order.
func TestGroupInOrder(t *testing.T) {
	prog, err := engine.Compile("plan.yaml", []byte(`
version: 1
steps:
  - label: group
    parallel:
      - {label: a, type: echo, text: a, sleep: 30ms}
      - {label: b, type: echo, text: b}
      - {label: c, type: echo, text: c, sleep: 10ms}
`), registry())
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "test"})
	maxRunning.Store(0)
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(),
		Script: orderScript{[]string{"c", "a", "b"}}}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := visits(b); got != "c:succeeded a:succeeded b:succeeded group:succeeded" {
		t.Errorf("order %q", got)
	}
	if maxRunning.Load() != 1 {
		t.Errorf("%d children ran at once", maxRunning.Load())
	}
}

func TestIfAndWrite(t *testing.T) {
	b, err := run(t, `
version: 1
vars: {deploy: false}
steps:
  - {label: build, type: echo, text: artefact-1, write: {section: builds, key: "last_${{ 'build' }}", ttl: 1h}}
  - {label: ship, type: echo, text: shipped, if: vars.deploy}
  - {label: report, type: echo, text: "${{ steps.ship.skipped }} ${{ steps.ship.status }} ${{ board('last_build') }} ${{ len(entries('builds')) }}"}
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := visits(b); got != "build:succeeded ship:skipped report:succeeded" {
		t.Errorf("steps %q", got)
	}
	e, ok := b.Get("last_build")
	if !ok || e.Content != "artefact-1" || e.Section != "builds" || e.TTL == nil || *e.TTL != 3600 || e.Label != "build" {
		t.Errorf("write.key entry %+v", e)
	}
	steps := b.Steps()
	if !strings.Contains(string(steps[2].Result), `"output":"true skipped artefact-1 2"`) {
		t.Errorf("report %s", steps[2].Result)
	}
}
