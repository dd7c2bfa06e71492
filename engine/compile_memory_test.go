package engine_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"weak"

	"github.com/planrunner/runner/engine"
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
