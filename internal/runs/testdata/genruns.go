//go:build ignore

// genruns saves N small finished runs under DIR/.runner/runs (package
// manyruns), for the run list figures of docs/benchmarks.md.
//
//	go run internal/runs/testdata/genruns.go N DIR
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/planrunner/runner/internal/testutil/manyruns"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run internal/runs/testdata/genruns.go N DIR")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[1])
	if err == nil {
		err = manyruns.Write(os.Args[2], n)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
