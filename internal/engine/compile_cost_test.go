package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/engine"
)

// bigPlan is a plan of n steps where every step has expressions: a
// template, a condition, a retry.until and a write key.
func bigPlan(n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nvars: {who: me, n: 3}\nlimits: {max_steps: %d}\nsteps:\n", 2*n)
	for i := range n {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "  - {label: s%d, type: echo, text: 'hi ${{ vars.who }} %d'}\n", i, i)
		case 1:
			fmt.Fprintf(&b, "  - {label: s%d, type: echo, text: '${{ steps.s%d.output }}', if: 'vars.n > 1', write: {key: 'k${{ steps.s%d.visits }}'}}\n", i, i-1, i-1)
		default:
			fmt.Fprintf(&b, "  - {label: s%d, type: jump, when: 'steps.s%d.ok && false', to: s0, retry: {max: 1, until: step.ok}}\n", i, i-1)
		}
	}
	return []byte(b.String())
}

// TestCompileCostPerStep fails when compiling a plan allocates more than a
// fixed budget per step, or when the cost per step grows with the plan's
// size: a path that is quadratic in the steps (such as describing the whole
// scope again for every expression) cannot come back unnoticed.
func TestCompileCostPerStep(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles plans of 3000 steps")
	}
	const budget = 400 // allocations per step; about 250 today
	perStep := map[int]float64{}
	for _, n := range []int{300, 3000} {
		src := bigPlan(n)
		allocs := testing.AllocsPerRun(2, func() {
			if _, err := engine.Compile("big.yaml", src, registry()); err != nil {
				t.Fatal(err)
			}
		})
		perStep[n] = allocs / float64(n)
		t.Logf("%d steps: %.0f allocations per step", n, perStep[n])
		if perStep[n] > budget {
			t.Errorf("%d steps: %.0f allocations per step, budget %d", n, perStep[n], budget)
		}
	}
	if perStep[3000] > 1.5*perStep[300] {
		t.Errorf("allocations per step grow with the plan: %.0f at 300 steps, %.0f at 3000", perStep[300], perStep[3000])
	}
}

// BenchmarkCompile compiles plans of 100, 1,000 and 10,000 steps, each
// step with expressions; ns/step should stay flat across sizes.
//
//	go test ./engine -run '^$' -bench Compile -benchmem
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		src := bigPlan(n)
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := engine.Compile("big.yaml", src, registry()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
}
