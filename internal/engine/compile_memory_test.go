package engine_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"weak"

	"github.com/planrunner/runner/internal/engine"
	"gopkg.in/yaml.v3"
)

// markType remembers, weakly, the YAML of each step it decodes; probeType,
// decoded after them, counts how many of those trees are still reachable.
type markType struct{ seen *[]weak.Pointer[yaml.Node] }

func (markType) Name() string { return "mark" }
func (markType) Result() any  { return struct{}{} }
func (m markType) Decode(d *engine.Decoder) engine.Step {
	*m.seen = append(*m.seen, weak.Make(d.Step.Node))
	return &echoStep{text: d.Template("text")}
}

type probeType struct {
	seen  *[]weak.Pointer[yaml.Node]
	alive *int
}

func (probeType) Name() string { return "probe" }
func (probeType) Result() any  { return struct{}{} }
func (p probeType) Decode(d *engine.Decoder) engine.Step {
	runtime.GC()
	for _, w := range *p.seen {
		if w.Value() != nil {
			*p.alive++
		}
	}
	return &echoStep{}
}

// TestCompileLetsGoOfDecodedSteps fails when the YAML tree of a step that
// has been decoded stays reachable while the rest of the plan compiles:
// the whole tree and the whole compiled plan were then in memory at once,
// which set the peak of loading a large plan (validate, run, replay).
func TestCompileLetsGoOfDecodedSteps(t *testing.T) {
	var seen []weak.Pointer[yaml.Node]
	alive := 0
	reg := engine.NewRegistry()
	reg.Register(markType{&seen})
	reg.Register(probeType{&seen, &alive})
	var b strings.Builder
	b.WriteString("version: 1\nvars: {who: me}\nsteps:\n")
	const n = 200
	for i := range n {
		fmt.Fprintf(&b, "  - label: s%d\n    type: mark\n    text: 'hi ${{ vars.who }} %d'\n    write: {key: 'k%d'}\n", i, i, i)
	}
	b.WriteString("  - {label: probe, type: probe}\n")
	if _, err := engine.Compile("p.yaml", []byte(b.String()), reg); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("decoded %d mark steps, want %d", len(seen), n)
	}
	if alive > 0 {
		t.Errorf("%d of %d decoded steps' YAML still reachable while the plan compiles, want none", alive, n)
	}
}

// TestCompileBytesPerStep fails when compiling a plan allocates more bytes
// per step than a fixed budget, or more per step in a larger plan: what
// the collector and the page faults of loading a 100k-step plan cost
// follows these bytes.
func TestCompileBytesPerStep(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles plans of 3000 steps")
	}
	const budget = 14_000 // bytes per step: 15,000 before steps were looked up in place, 13,000 after
	perStep := map[int]float64{}
	for _, n := range []int{300, 3000} {
		src := bigPlan(n)
		reg := registry()
		if _, err := engine.Compile("big.yaml", src, reg); err != nil { // warm: the registry's and expr's caches
			t.Fatal(err)
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		const runs = 3
		for range runs {
			if _, err := engine.Compile("big.yaml", src, reg); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&m1)
		perStep[n] = float64(m1.TotalAlloc-m0.TotalAlloc) / runs / float64(n)
		t.Logf("%d steps: %.0f bytes per step", n, perStep[n])
	}
	for n, b := range perStep {
		if b > budget {
			t.Errorf("%d steps: %.0f bytes allocated per step, budget %d", n, b, budget)
		}
	}
	if perStep[3000] > 1.3*perStep[300] {
		t.Errorf("bytes per step grow with the plan: %.0f at 300 steps, %.0f at 3000", perStep[300], perStep[3000])
	}
}

// TestSameExpressionCompiledOnce fails when an expression written the
// same in many steps is type-checked and compiled again for each: a step
// whose text and if hold vars.n > 1 must cost little more than one whose
// text is plain, once the first has compiled it.
func TestSameExpressionCompiledOnce(t *testing.T) {
	const n = 2000
	bytesPerStep := func(fields string) float64 {
		var b strings.Builder
		b.WriteString("version: 1\nvars: {n: 3}\nlimits: {max_steps: 5000}\nsteps:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - {label: s%d, type: echo, %s}\n", i, fields)
		}
		src := []byte(b.String())
		reg := registry()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if _, err := engine.Compile("same.yaml", src, reg); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		return float64(m1.TotalAlloc-m0.TotalAlloc) / n
	}
	plain := bytesPerStep("text: 'a'")
	same := bytesPerStep("text: '${{ vars.n > 1 }}', if: 'vars.n > 1'")
	t.Logf("plain text: %.0f bytes per step; the same expression: %.0f", plain, same)
	if same-plain > 2000 {
		t.Errorf("a step with an expression other steps have already costs %.0f bytes more than one without, want at most 2000 (its YAML and its parts; compiling it costs about 5000): is it compiled again per step?", same-plain)
	}
}

// TestSameExpressionErrorsAtEachStep: sharing compiled expressions must
// not hide a mistake repeated in several steps; each is reported where
// it is written.
func TestSameExpressionErrorsAtEachStep(t *testing.T) {
	src := "version: 1\nvars: {n: 3}\nsteps:\n" +
		"  - {label: a, type: echo, text: '${{ vars.m > 1 }}', if: 'vars.n > 1'}\n" +
		"  - {label: b, type: echo, text: '${{ vars.m > 1 }}', if: 'vars.n > 1'}\n" +
		"  - {label: c, type: echo, text: '${{ vars.n > 1 }}', if: 'vars.m > 1'}\n"
	_, err := engine.Compile("p.yaml", []byte(src), registry())
	if err == nil {
		t.Fatal("compiled; want three problems")
	}
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if strings.Contains(l, "unknown field m") {
			lines = append(lines, l[:strings.Index(l, ": ")])
		}
	}
	want := []string{"p.yaml:4:44", "p.yaml:5:44", "p.yaml:6:65"}
	if strings.Join(lines, " ") != strings.Join(want, " ") {
		t.Errorf("problems at %v, want %v; all:\n%v", lines, want, err)
	}
}

// TestCompileCheckedKeepsNoTree fails when a plan compiled for a resume
// (CompileChecked) holds its steps' YAML: each step is decoded when it
// first runs, from its lines read again, so what stays per step is the
// step as parsed, its node and its expressions' sources, not its tree:
// 616 bytes a step here, 680 while each expression held its scope's
// part and room for the steps it names, 4,250 when it kept the tree,
// which then made most of a resume's peak.
func TestCompileCheckedKeepsNoTree(t *testing.T) {
	const n = 3000
	src := bigPlan(n)
	reg := registry()
	if _, err := engine.CompileChecked("big.yaml", src, reg); err != nil { // warm the caches
		t.Fatal(err)
	}
	before := liveHeap()
	prog, err := engine.CompileChecked("big.yaml", src, reg)
	if err != nil {
		t.Fatal(err)
	}
	perStep := float64(liveHeap()-before) / n
	runtime.KeepAlive(prog)
	t.Logf("%.0f bytes live per step", perStep)
	if perStep > 650 {
		t.Errorf("a compiled plan keeps %.0f bytes per step, want at most 650 (its steps' YAML let go)", perStep)
	}
	// And each step still decodes, from its lines, when it runs.
	if _, err := prog.Node("s1").DecodeForTest(); err != nil {
		t.Error(err)
	}
}

// liveHeap is the heap the collector keeps, collected now.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
