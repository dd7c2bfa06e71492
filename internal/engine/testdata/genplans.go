//go:build ignore

// genplans writes the plans the loading and run benchmarks of docs/benchmarks.md use:
// DIR/validate-N.yaml (commands, board steps and branches, each with a
// ${{ }}) and DIR/run-N.yaml (board steps and branches with expressions,
// no processes), for N = 100, 1,000 and 10,000.
//
//	go run internal/engine/testdata/genplans.go DIR
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	dir := os.Args[1]
	for _, n := range []int{100, 1000, 10000} {
		write(filepath.Join(dir, fmt.Sprintf("validate-%d.yaml", n)), validatePlan(n))
		write(filepath.Join(dir, fmt.Sprintf("run-%d.yaml", n)), runPlan(n))
	}
}

func write(path, s string) {
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		panic(err)
	}
}

func validatePlan(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: big\nvars: {who: me, n: 3}\nlimits: {max_steps: %d}\nsteps:\n", 2*n+10)
	for i := range n {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "  - {label: s%d, type: command, run: 'echo ${{ vars.who }} %d'}\n", i, i)
		case 1:
			fmt.Fprintf(&b, "  - {label: s%d, type: board, op: write, key: k%d, value: '${{ steps.s%d.output }}'}\n", i, i, i-1)
		case 2:
			fmt.Fprintf(&b, "  - {label: s%d, type: board, op: read, key: 'k${{ steps.s%d.visits }}'}\n", i, i-1)
		default:
			next := "s0"
			if i+1 < n {
				next = fmt.Sprintf("s%d", i+1)
			}
			fmt.Fprintf(&b, "  - label: s%d\n    type: branch\n    cases:\n      - {when: 'steps.s%d.ok && vars.n > 1', goto: %s}\n    default: fail\n", i, i-1, next)
		}
	}
	return b.String()
}

func runPlan(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: big\nvars: {who: me, n: 3}\nlimits: {max_steps: %d}\nsteps:\n", n+10)
	for i := range n {
		switch {
		case i%3 == 0:
			fmt.Fprintf(&b, "  - {label: s%d, type: board, op: write, key: 'k%d', value: 'hi ${{ vars.who }} %d'}\n", i, i, i)
		case i%3 == 1:
			fmt.Fprintf(&b, "  - {label: s%d, type: board, op: read, key: 'k${{ steps.s%d.visits * 0 + %d }}'}\n", i, i-1, i-1)
		case i+1 < n:
			fmt.Fprintf(&b, "  - label: s%d\n    type: branch\n    cases:\n      - {when: 'steps.s%d.ok && vars.n > 100', goto: fail}\n    default: s%d\n", i, i-1, i+1)
		default:
			fmt.Fprintf(&b, "  - label: s%d\n    type: branch\n    cases:\n      - {when: 'steps.s%d.ok', goto: end}\n    default: fail\n", i, i-1)
		}
	}
	return b.String()
}
