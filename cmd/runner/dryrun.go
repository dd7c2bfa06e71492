package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/planrunner/runner/engine"
)

// dryRun prints what a run would do, in order, and runs nothing.
func dryRun(w io.Writer, prog *engine.Program, vars map[string]any) {
	bw, flush := buffered(w) // a line or more per step
	defer flush()
	w = bw
	p := prog.Plan
	title := p.Name
	if title == "" {
		title = p.Path
	}
	fmt.Fprintf(w, "plan %s: %d steps (dry run: nothing runs)\n", title, len(p.AllSteps()))
	if len(vars) > 0 {
		names := make([]string, 0, len(vars))
		for k := range vars {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(w, "  var %s = %s\n", k, engine.Text(vars[k]))
		}
	}
	var walk func(nodes []*engine.Node, depth int)
	walk = func(nodes []*engine.Node, depth int) {
		for i, n := range nodes {
			pad := strings.Repeat("  ", depth)
			kind := n.Type
			if n.Children != nil {
				kind = fmt.Sprintf("parallel, %d steps", len(n.Children))
				if n.MaxConcurrency > 0 {
					kind += fmt.Sprintf(", at most %d at once", n.MaxConcurrency)
				}
			}
			fmt.Fprintf(w, "%s%d. %s (%s)", pad, i+1, n.Label, kind)
			if n.If != nil {
				fmt.Fprintf(w, " if %s", n.If.Src)
			}
			if n.Timeout > 0 {
				fmt.Fprintf(w, " timeout %s", n.Timeout)
			}
			if n.Retry != nil {
				fmt.Fprintf(w, " retry %d", n.Retry.Max)
			}
			if n.ContinueOnError {
				fmt.Fprint(w, " continue_on_error")
			}
			fmt.Fprintln(w)
			if d, ok := n.Impl.(interface{ Describe() string }); ok {
				for _, line := range strings.Split(d.Describe(), "\n") {
					fmt.Fprintf(w, "%s     %s\n", pad, line)
				}
			}
			walk(n.Children, depth+1)
		}
	}
	walk(prog.Steps, 0)
}
