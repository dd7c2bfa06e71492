package main

import (
	"io"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/view/plangraph"
)

func cmdGraph(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out, flush := buffered(stdout) // a large plan is a long graph
	defer flush()
	stdout = out
	fs, _ := newFlags("graph", stdout, stderr)
	format := fs.String("format", "mermaid", "mermaid or dot")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one plan file")
	}
	if *format != "mermaid" && *format != "dot" {
		return usageErr(stderr, fs, "--format %q: want mermaid or dot", *format)
	}
	prog, err := engine.Load(pos[0], steps.Registry())
	if err != nil {
		return planErrors(stderr, "runner graph", prog, err)
	}
	g := plangraph.Build(prog)
	if *format == "dot" {
		g.DOT(stdout)
	} else {
		g.Mermaid(stdout)
	}
	return exitOK
}
