package main

import (
	"fmt"
	"io"

	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/view/plandoc"
)

//go:generate go test -run TestGeneratedFilesAreCurrent -update

// cmdSchema prints the plan schema, generated from the step types'
// descriptions (plan.schema.json is the same text, committed for editors
// that fetch it by URL; a test keeps the two equal).
func cmdSchema(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, _ := newFlags("schema", stdout, stderr)
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	b, err := plandoc.Schema(steps.Registry())
	if err != nil {
		fmt.Fprintf(stderr, "runner schema: %v\n", err)
		return exitFailed
	}
	stdout.Write(b)
	return exitOK
}
