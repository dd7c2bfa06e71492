//go:build ignore

// genresume writes the plans of the resume figures of docs/benchmarks.md:
// N-1 board steps (writes, reads, branches with expressions) and a last
// command step that fails until a file "marker" exists in the workdir.
// Run it, touch marker, resume it.
//
//	go run internal/runs/testdata/genresume.go N FILE
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: big\nvars: {who: me, n: 3}\nlimits: {max_steps: %d}\nsteps:\n", n+10)
	for i := range n - 1 {
		switch {
		case i%3 == 0:
			fmt.Fprintf(&b, "  - {label: s%d, type: board, op: write, key: 'k%d', value: 'hi ${{ vars.who }} %d'}\n", i, i, i)
		case i%3 == 1:
			fmt.Fprintf(&b, "  - {label: s%d, type: board, op: read, key: 'k${{ steps.s%d.visits * 0 + %d }}'}\n", i, i-1, i-1)
		default:
			fmt.Fprintf(&b, "  - label: s%d\n    type: branch\n    cases:\n      - {when: 'steps.s%d.ok && vars.n > 100', goto: fail}\n    default: s%d\n", i, i-1, i+1)
		}
	}
	fmt.Fprintf(&b, "  - {label: s%d, type: command, run: 'test -f marker'}\n", n-1)
	if err := os.WriteFile(os.Args[2], []byte(b.String()), 0o644); err != nil {
		panic(err)
	}
}
