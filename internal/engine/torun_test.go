package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"weak"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// heldType is echo, remembering weakly every step it decodes.
type heldType struct {
	mu   *sync.Mutex
	seen *[]weak.Pointer[echoStep]
}

func (heldType) Name() string { return "held" }
func (heldType) Result() any  { return EchoResult{} }
func (h heldType) Decode(d *engine.Decoder) engine.Step {
	s := echoType{}.Decode(d).(*echoStep)
	h.mu.Lock()
	*h.seen = append(*h.seen, weak.Make(s))
	h.mu.Unlock()
	return s
}

// alive counts the decoded steps still reachable.
func (h heldType) aliveHeap() int {
	runtime.GC()
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, w := range *h.seen {
		if w.Value() != nil {
			n++
		}
	}
	return n
}

// heldPlan is n held steps, each reading the one before, and a jump back
// to the first while it has run fewer than visits times.
func heldPlan(n, visits int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nvars: {who: me}\nlimits: {max_steps: %d}\nsteps:\n", 2*n*visits+10)
	b.WriteString("  - {label: s0, type: held, text: 'first ${{ vars.who }} ${{ steps.s0.visits }}'}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - {label: s%d, type: held, text: '%d ${{ steps.s%d.output }}'}\n", i, i, i-1)
	}
	fmt.Fprintf(&b, "  - {label: back, type: jump, when: 'steps.s0.visits < %d', to: s0}\n", visits)
	return []byte(b.String())
}

func heldRegistry() (*engine.Registry, heldType) {
	h := heldType{mu: new(sync.Mutex), seen: new([]weak.Pointer[echoStep])}
	r := registry()
	r.Register(h)
	return r, h
}

// runProgram runs prog to its end on a board of its own.
func runProgram(t *testing.T, prog *engine.Program) *board.Board {
	t.Helper()
	b := board.New(board.Run{ID: "test"})
	if err := (&engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop()}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCompileToRunLetsGoOfDecodedSteps fails when a plan compiled for its
// run keeps its steps' decoded fields: a top-level step past the first
// few (FirstsKept) lets go of the decode it was checked with and is
// decoded again when it runs, one of the first few keeps it for its
// first run, and the program keeps the last few hundred decodes after
// that. Compile keeps them all (what a graph of the plan reads).
func TestCompileToRunLetsGoOfDecodedSteps(t *testing.T) {
	const n, first = 1000, 100
	engine.SetFirstsKept(t, first)
	src := heldPlan(n, 1)
	for _, c := range []struct {
		name    string
		compile func(string, []byte, *engine.Registry) (*engine.Program, error)
		max     int
		// before: the decodes kept before the run; decodes: made in all
		before, decodes int
	}{
		{"Compile", engine.Compile, n, n, n},
		{"CompileToRun", engine.CompileToRun, engine.ImplCacheSize, first, 2*n - first},
	} {
		reg, h := heldRegistry()
		prog, err := c.compile("p.yaml", src, reg)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.aliveHeap(); got != c.before {
			t.Errorf("%s: %d of %d steps' decodes kept before the run, want %d", c.name, got, n, c.before)
		}
		runProgram(t, prog)
		got := h.aliveHeap()
		runtime.KeepAlive(prog)
		t.Logf("%s: %d of %d decoded steps kept after the run; %d decodes", c.name, got, n, len(*h.seen))
		if got > c.max {
			t.Errorf("%s keeps %d decoded steps after its run, want at most %d", c.name, got, c.max)
		}
		if c.max == n && got != n {
			t.Errorf("%s keeps %d decoded steps, want all %d", c.name, got, n)
		}
		if len(*h.seen) != c.decodes {
			t.Errorf("%s: %d decodes for %d steps run once, want %d: checked, then decoded when it runs unless kept", c.name, len(*h.seen), n, c.decodes)
		}
	}
}

// TestCompileToRunRunsAsCompile: a run of a plan compiled for its run
// gives what one of the plan compiled whole gives, its steps decoded
// again when they run, in a loop that visits each step more than once
// after the program has let go of its decode. It holds no more decoded
// steps than its cache at the end.
func TestCompileToRunRunsAsCompile(t *testing.T) {
	const n, visits, first = 600, 3, 100
	engine.SetFirstsKept(t, first)
	src := heldPlan(n, visits)
	run := func(compile func(string, []byte, *engine.Registry) (*engine.Program, error)) (records []string, alive, decodes int) {
		reg, h := heldRegistry()
		prog, err := compile("p.yaml", src, reg)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range runProgram(t, prog).Steps() {
			records = append(records, fmt.Sprintf("%s#%d %s %s", s.Label, s.Visit, s.Status, s.Result))
		}
		alive = h.aliveHeap()
		runtime.KeepAlive(prog)
		return records, alive, len(*h.seen)
	}
	want, _, _ := run(engine.Compile)
	got, alive, decodes := run(engine.CompileToRun)
	if len(want) != visits*(n+1) {
		t.Fatalf("Compile's run recorded %d steps, want %d", len(want), visits*(n+1))
	}
	if len(got) != len(want) {
		t.Fatalf("CompileToRun's run recorded %d steps, Compile's %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d: CompileToRun's run gave\n%s\nCompile's\n%s", i, got[i], want[i])
		}
	}
	// Checked once, then decoded at each visit (the first steps' first
	// one excepted) but the last steps' of a visit.
	if min := n + visits*n - first - engine.ImplCacheSize; decodes < min {
		t.Errorf("%d decodes of %d steps visited %d times each; want at least %d (each decoded again when it runs)", decodes, n, visits, min)
	}
	if alive > engine.ImplCacheSize {
		t.Errorf("after the run, %d decoded steps are kept, want at most %d", alive, engine.ImplCacheSize)
	}
}

// TestCompileToRunReportsWhatCompileDoes: checking a plan step by step
// finds every problem Compile finds, at the same places, in a step far
// past the ones whose decode is kept as in the first.
func TestCompileToRunReportsWhatCompileDoes(t *testing.T) {
	many := string(heldPlan(400, 1))
	for _, c := range []struct{ name, src string }{
		{"misspelt name", many + "  - {label: bad, type: held, text: '${{ vars.whom }}'}\n"},
		{"misspelt step", many + "  - {label: bad, type: held, text: '${{ steps.s9999.output }}'}\n"},
		{"unknown field", many + "  - {label: bad, type: held, text: 'x', txet: 'y'}\n"},
		{"unknown type", many + "  - {label: bad, type: hled, text: 'x'}\n"},
		{"label twice", many + "  - {label: s7, type: held, text: 'x'}\n"},
		{"bad if", many + "  - {label: bad, type: held, text: 'x', if: 'vars.who +'}\n"},
		{"first step", strings.Replace(many, "'first ${{ vars.who }}", "'first ${{ vars.wh }}", 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg, _ := heldRegistry()
			_, want := engine.Compile("p.yaml", []byte(c.src), reg)
			if want == nil {
				t.Fatal("Compile found no problem")
			}
			reg, _ = heldRegistry()
			_, got := engine.CompileToRun("p.yaml", []byte(c.src), reg)
			if got == nil || got.Error() != want.Error() {
				t.Errorf("CompileToRun: %v\nCompile: %v", got, want)
			}
		})
	}
}

// TestCompileToRunLiveBytesPerStep fails when a plan compiled for its run
// keeps more for each step than a budget once its steps have run: what
// stays for each of a 100k-step plan's steps to the end of its run is the
// step as parsed, its node and its expressions, not its decoded fields
// nor its YAML. The cost is the difference between two plans' sizes, so
// the bounded caches (compiled expressions, decoded steps) count once.
func TestCompileToRunLiveBytesPerStep(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles plans of 6000 steps")
	}
	reg := registry()
	held := func(compile func(string, []byte, *engine.Registry) (*engine.Program, error), n int) uint64 {
		src := bigPlan(n)
		if _, err := compile("big.yaml", src, reg); err != nil { // warm the caches
			t.Fatal(err)
		}
		before := liveHeap()
		prog, err := compile("big.yaml", src, reg)
		if err != nil {
			t.Fatal(err)
		}
		runProgram(t, prog)
		after := liveHeap()
		runtime.KeepAlive(prog)
		return after - before
	}
	const small, large = 2000, 6000
	perStep := func(compile func(string, []byte, *engine.Registry) (*engine.Program, error)) float64 {
		return (float64(held(compile, large)) - float64(held(compile, small))) / (large - small)
	}
	whole, toRun := perStep(engine.Compile), perStep(engine.CompileToRun)
	t.Logf("bytes live per step: %.0f compiled whole, %.0f compiled to run", whole, toRun)
	const budget = 680 // 624 measured; 655 while a step kept room for the decode it was checked with; 687 while an expression held its scope's part and room for the steps it names; 722 while a node kept room for what steps in a for_each have and its decode state its step and type again; 790 while the plan's scope described every label; 831 while scopes kept the types.Map their description was made from; 859 while the plan kept an index of its labels beside the nodes; 950 when every step carried room for the fields of groups, for_each and calls; 3,560 when each retry.until held a scope of its own
	if toRun > budget {
		t.Errorf("a plan compiled to run keeps %.0f bytes per step, want at most %d", toRun, budget)
	}
}
