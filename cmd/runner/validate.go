package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/steps"
)

func cmdValidate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, _ := newFlags("validate", stdout, stderr)
	cost := fs.Bool("cost", false, "also print each plan's worst-case cost, and what its runs saved here cost")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) == 0 {
		return usageErr(stderr, fs, "want one or more plan files")
	}
	out, flushOut := buffered(stdout)
	defer flushOut()
	errOut, flushErr := buffered(stderr) // a large plan can have thousands of problems
	defer flushErr()
	stdout, stderr = out, errOut
	code := exitOK
	reg := steps.Registry()
	for _, path := range pos {
		prog, err := engine.Load(path, reg)
		if err != nil {
			code = planErrors(stderr, "runner validate", prog, err)
			continue
		}
		fmt.Fprintf(stdout, "%s: ok (%d steps)\n", path, len(prog.Plan.AllSteps()))
		if *cost {
			vars := map[string]any{}
			for _, v := range prog.Plan.Vars {
				vars[v.Name] = v.Default
			}
			worstCost(stdout, prog.Plan, vars, ".")
		}
	}
	return code
}

// planErrors prints a plan's problems, each as file:line:col: message with
// the line quoted beneath it, and returns exit code 2. cmd ("runner run")
// names the command for an error that is not a plan's problem.
func planErrors(w io.Writer, cmd string, prog *engine.Program, err error) int {
	var list plans.Errors
	if !errors.As(err, &list) {
		fmt.Fprintf(w, "%s: %v\n", cmd, err)
		return exitUsage
	}
	// A problem in a called plan quotes that file's line.
	files := map[string][]string{}
	if prog != nil && prog.Plan != nil {
		for path, src := range prog.Sources() {
			files[path] = strings.Split(src, "\n")
		}
	}
	for _, e := range list {
		fmt.Fprintln(w, e.Error())
		lines := files[e.File]
		if e.Line >= 1 && e.Line <= len(lines) {
			src := strings.ReplaceAll(lines[e.Line-1], "\t", " ")
			fmt.Fprintf(w, "  %4d | %s\n       | %s^\n", e.Line, src, strings.Repeat(" ", max(e.Col-1, 0)))
		}
	}
	fmt.Fprintf(w, "%d problem(s)\n", len(list))
	return exitUsage
}
