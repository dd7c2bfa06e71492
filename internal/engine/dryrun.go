package engine

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// DryRun writes what a run of prog would do, in order, and runs nothing:
// the steps with their common options, and under each the lines its type
// gives (Describer). vars are the plan's variables as the run would see
// them. What a type shows is its own business, so a new type needs no
// change here.
func DryRun(w io.Writer, prog *Program, vars map[string]any) error {
	bw := bufio.NewWriterSize(w, 64<<10) // a line or more per step
	p := prog.Plan
	title := p.Name
	if title == "" {
		title = p.Path
	}
	fmt.Fprintf(bw, "plan %s: %d steps (dry run: nothing runs)\n", title, len(p.AllSteps()))
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(bw, "  var %s = %s\n", k, Text(vars[k]))
	}
	dryRunSteps(bw, prog.Steps, 0)
	return bw.Flush()
}

func dryRunSteps(w io.Writer, nodes []*Node, depth int) {
	pad := strings.Repeat("  ", depth)
	for i, n := range nodes {
		kind := n.Type
		if n.Children != nil {
			kind = fmt.Sprintf("parallel, %d steps", len(n.Children))
			if n.MaxConcurrency > 0 && n.ForEach == nil { // with for_each, it limits the items
				kind += fmt.Sprintf(", at most %d at once", n.MaxConcurrency)
			}
		}
		if n.Seq != nil {
			kind = fmt.Sprintf("sequence, %d steps in order", len(n.Seq))
		}
		if n.ForEach != nil {
			kind += ", for_each " + n.ForEach.Src
			if n.MaxConcurrency > 0 {
				kind += fmt.Sprintf(", at most %d at once", n.MaxConcurrency)
			}
		}
		fmt.Fprintf(w, "%s%d. %s (%s)", pad, i+1, n.Label, kind)
		if len(n.Needs) > 0 {
			fmt.Fprintf(w, " needs %s", strings.Join(n.Needs, ", "))
		}
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
		if impl, _ := n.impl(); impl != nil {
			if d, ok := impl.(Describer); ok {
				if text := d.Describe(); text != "" {
					for _, line := range strings.Split(text, "\n") {
						fmt.Fprintf(w, "%s     %s\n", pad, line)
					}
				}
			}
		}
		if n.Sub != nil {
			// A call: the vars it passes, then the callee's steps, as the
			// run labels them (CALL/LABEL).
			for _, v := range n.callVars {
				val := Text(v.lit)
				if v.tmpl != nil {
					val = v.tmpl.Src
				}
				fmt.Fprintf(w, "%s     var %s = %s\n", pad, v.name, val)
			}
			for _, o := range n.Sub.outputs {
				fmt.Fprintf(w, "%s     output %s = %s\n", pad, o.name, o.expr.Src)
			}
			label := n.Label
			if n.ForEach != nil {
				label += "[i]"
			}
			dryRunSteps(w, underAll(n.Sub.Steps, label), depth+1)
		}
		if n.ForEach != nil && n.isBlock() {
			// Each item runs the block: its steps as the run labels them.
			dryRunSteps(w, inItemAll(n.Children, n.Label+"[i]"), depth+1)
			dryRunSteps(w, inItemAll(n.Seq, n.Label+"[i]"), depth+1)
			continue
		}
		dryRunSteps(w, n.Children, depth+1)
		dryRunSteps(w, n.Seq, depth+1)
	}
}
