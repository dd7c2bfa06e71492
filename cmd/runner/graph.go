package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/steps"
)

func cmdGraph(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out, flush := buffered(stdout) // a large plan is a long graph
	defer flush()
	stdout = out
	fs, _ := newFlags("graph", stderr)
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
		return planErrors(stderr, prog, err)
	}
	g := buildGraph(prog)
	if *format == "dot" {
		g.dot(stdout)
	} else {
		g.mermaid(stdout)
	}
	return exitOK
}

type gnode struct {
	id, text string
	children []gnode // a parallel group
}

type gedge struct {
	from, to, label string
	dashed          bool
	back            bool // a loop going back up: drawn, but not used to rank the layout
}

type graph struct {
	nodes []gnode
	edges []gedge
}

// nodeText is a step's box: its label and type, and what changes how it
// runs (a condition, retries, a tolerated failure).
func nodeText(n *engine.Node) string {
	text := n.Label + " (" + n.Type + ")"
	if n.Children != nil {
		text = n.Label + " (parallel)"
	}
	if n.Seq != nil {
		text = n.Label + " (sequence)"
		for i, c := range n.Seq {
			text += fmt.Sprintf("\n%d. %s (%s)", i+1, c.Label, c.Type)
		}
	}
	if n.ForEach != nil {
		text += "\n⇉ for_each " + n.ForEach.Src
		if n.MaxConcurrency > 0 {
			text += fmt.Sprintf(", %d at once", n.MaxConcurrency)
		}
	}
	if len(n.Needs) > 0 {
		text += "\n⇠ needs " + strings.Join(n.Needs, ", ")
	}
	if n.If != nil {
		text += "\nif " + n.If.Src
	}
	if n.Retry != nil {
		text += fmt.Sprintf("\n↻ retry ×%d", n.Retry.Max)
		if n.Retry.Until != nil {
			text += " until " + n.Retry.Until.Src
		}
	}
	if n.ContinueOnError {
		text += "\n⚠ failure tolerated"
	}
	return text
}

// buildGraph lays a plan out: steps top to bottom, groups as boxes whose
// children each get the edge in and the edge out (fan-out, fan-in), and
// branch cases as labelled edges to their targets; a case that jumps back
// up is a back edge.
func buildGraph(prog *engine.Program) *graph {
	g := &graph{}
	pos := map[string]int{}
	for i, n := range prog.Steps {
		pos[n.Label] = i
	}
	// ins and outs are where edges into and out of a step attach: a
	// group's children.
	// A call (type: plan) is a box holding the callee's steps in order:
	// edges come in at its first and leave from its last.
	callee := func(n *engine.Node, i int) string { return n.Label + "__" + n.Sub.Steps[i].Label }
	ins := func(n *engine.Node) []string {
		if n.Sub != nil && len(n.Sub.Steps) > 0 {
			return []string{callee(n, 0)}
		}
		return nil
	}
	ends := func(n *engine.Node) []string {
		if n.Sub != nil && len(n.Sub.Steps) > 0 {
			return []string{callee(n, len(n.Sub.Steps)-1)}
		}
		if n.Children == nil {
			return []string{n.Label}
		}
		var out []string
		for _, c := range n.Children {
			out = append(out, c.Label)
		}
		return out
	}
	link := func(from []string, to string, e gedge) {
		for _, f := range from {
			e.from, e.to = f, to
			g.edges = append(g.edges, e)
		}
	}
	// Terminals get upper-case ids: labels are lower case, and Mermaid
	// reads a node called `end` as the end of a subgraph.
	g.nodes = append(g.nodes, gnode{id: "START", text: "start"})
	prev := []string{"START"}
	usedEnd, usedFail := false, false
	var jumps []gedge
	for i, n := range prog.Steps {
		gn := gnode{id: n.Label, text: nodeText(n)}
		for _, c := range n.Children {
			gn.children = append(gn.children, gnode{id: c.Label, text: nodeText(c)})
		}
		if n.Sub != nil {
			gn.text += "\n▣ runs " + n.Call.Path
			for j, c := range n.Sub.Steps {
				text := nodeText(c)
				gn.children = append(gn.children, gnode{id: callee(n, j), text: n.Label + "/" + text})
				if j > 0 {
					g.edges = append(g.edges, gedge{from: callee(n, j-1), to: callee(n, j)})
				}
			}
		}
		g.nodes = append(g.nodes, gn)
		into := ends(n)
		if in := ins(n); in != nil {
			into = in
		}
		for _, to := range into {
			link(prev, to, gedge{})
		}
		prev = ends(n)
		if b, ok := n.Impl.(engine.Brancher); ok {
			hasDefault := false
			for _, br := range b.Branches() {
				label := br.When
				if label == "" {
					label, hasDefault = "otherwise", true
				}
				j, known := pos[br.To]
				back := known && j <= i
				for _, to := range targets(prog, br.To) {
					jumps = append(jumps, gedge{from: n.Label, to: to, label: label, dashed: true, back: back})
				}
				usedEnd = usedEnd || br.To == "end"
				usedFail = usedFail || br.To == "fail"
			}
			if hasDefault {
				prev = nil // no fall-through
			}
		}
		if i == len(prog.Steps)-1 && len(prev) > 0 {
			link(prev, "END", gedge{})
			usedEnd = true
		}
	}
	// Jumps last, back edges at the very end: the layout is ranked by the
	// plan's order.
	for _, back := range []bool{false, true} {
		for _, e := range jumps {
			if e.back == back {
				g.edges = append(g.edges, e)
			}
		}
	}
	if usedEnd {
		g.nodes = append(g.nodes, gnode{id: "END", text: "end"})
	}
	if usedFail {
		g.nodes = append(g.nodes, gnode{id: "FAIL", text: "fail"})
	}
	return g
}

// targets are the boxes a jump to label lands on: a group's children.
func targets(prog *engine.Program, label string) []string {
	if n := prog.Node(label); n != nil && n.Children != nil {
		var out []string
		for _, c := range n.Children {
			out = append(out, c.Label)
		}
		return out
	}
	return []string{terminal(label)}
}

func terminal(to string) string {
	if to == "end" || to == "fail" {
		return strings.ToUpper(to)
	}
	return to
}

func isTerminalNode(id string) bool { return id == "START" || id == "END" || id == "FAIL" }

func (g *graph) mermaid(w io.Writer) {
	fmt.Fprintln(w, "flowchart TD")
	q := func(s string) string { return `"` + strings.NewReplacer(`"`, "#quot;", "\n", "<br/>").Replace(s) + `"` }
	for _, n := range g.nodes {
		switch {
		case n.children != nil:
			fmt.Fprintf(w, "  subgraph %s[%s]\n", n.id, q(n.text))
			for _, c := range n.children {
				fmt.Fprintf(w, "    %s[%s]\n", c.id, q(c.text))
			}
			fmt.Fprintln(w, "  end")
		case isTerminalNode(n.id):
			fmt.Fprintf(w, "  %s((%s))\n", n.id, n.text)
		default:
			fmt.Fprintf(w, "  %s[%s]\n", n.id, q(n.text))
		}
	}
	for _, e := range g.edges {
		arrow := "-->"
		if e.dashed {
			arrow = "-.->"
		}
		if e.label != "" {
			fmt.Fprintf(w, "  %s %s|%s| %s\n", e.from, arrow, q(e.label), e.to)
		} else {
			fmt.Fprintf(w, "  %s %s %s\n", e.from, arrow, e.to)
		}
	}
}

func (g *graph) dot(w io.Writer) {
	q := func(s string) string {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
	}
	fmt.Fprintln(w, "digraph plan {\n  rankdir=TB;\n  node [shape=box];")
	for _, n := range g.nodes {
		switch {
		case n.children != nil:
			fmt.Fprintf(w, "  subgraph cluster_%s {\n    label=%s;\n", n.id, q(n.text))
			for _, c := range n.children {
				fmt.Fprintf(w, "    %s [label=%s];\n", c.id, q(c.text))
			}
			fmt.Fprintln(w, "  }")
		case isTerminalNode(n.id):
			fmt.Fprintf(w, "  %s [shape=circle, label=%s];\n", n.id, q(n.text))
		default:
			fmt.Fprintf(w, "  %s [label=%s];\n", n.id, q(n.text))
		}
	}
	for _, e := range g.edges {
		attrs := []string{}
		if e.label != "" {
			attrs = append(attrs, "label="+q(e.label))
		}
		if e.dashed {
			attrs = append(attrs, "style=dashed")
		}
		if e.back {
			attrs = append(attrs, "constraint=false")
		}
		fmt.Fprintf(w, "  %s -> %s", e.from, e.to)
		if len(attrs) > 0 {
			fmt.Fprintf(w, " [%s]", strings.Join(attrs, ", "))
		}
		fmt.Fprintln(w, ";")
	}
	fmt.Fprintln(w, "}")
}
