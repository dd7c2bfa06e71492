// Package plangraph lays a compiled plan out as a graph: its steps top
// to bottom, parallel groups as boxes, branch cases as labelled edges.
// `runner graph` prints it as Mermaid or DOT; `runner serve` draws it with
// each step's status.
package plangraph

import (
	"fmt"
	"io"
	"strings"

	"github.com/planrunner/runner/engine"
)

type Node struct {
	ID, Text string
	Children []Node // a parallel group
}

type Edge struct {
	From, To, Label string
	Dashed          bool
	Back            bool // a loop going back up: drawn, but not used to rank the layout
}

type Graph struct {
	Nodes []Node
	Edges []Edge
}

// NodeText is a step's box: its label and type, and what changes how it
// runs (a condition, retries, a tolerated failure).
func NodeText(n *engine.Node) string {
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

// Build lays a plan out: steps top to bottom, groups as boxes whose
// children each get the edge in and the edge out (fan-out, fan-in), and
// branch cases as labelled edges to their targets; a case that jumps back
// up is a back edge.
func Build(prog *engine.Program) *Graph {
	g := &Graph{}
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
	link := func(from []string, to string, e Edge) {
		for _, f := range from {
			e.From, e.To = f, to
			g.Edges = append(g.Edges, e)
		}
	}
	// Terminals get upper-case ids: labels are lower case, and Mermaid
	// reads a node called `end` as the end of a subgraph.
	g.Nodes = append(g.Nodes, Node{ID: "START", Text: "start"})
	prev := []string{"START"}
	usedEnd, usedFail := false, false
	var jumps []Edge
	for i, n := range prog.Steps {
		gn := Node{ID: n.Label, Text: NodeText(n)}
		for _, c := range n.Children {
			gn.Children = append(gn.Children, Node{ID: c.Label, Text: NodeText(c)})
		}
		if n.Sub != nil {
			gn.Text += "\n▣ runs " + n.Call.Path
			for j, c := range n.Sub.Steps {
				gn.Children = append(gn.Children, Node{ID: callee(n, j), Text: n.Label + "/" + NodeText(c)})
				if j > 0 {
					g.Edges = append(g.Edges, Edge{From: callee(n, j-1), To: callee(n, j)})
				}
			}
		}
		g.Nodes = append(g.Nodes, gn)
		into := ends(n)
		if in := ins(n); in != nil {
			into = in
		}
		for _, to := range into {
			link(prev, to, Edge{})
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
					jumps = append(jumps, Edge{From: n.Label, To: to, Label: label, Dashed: true, Back: back})
				}
				usedEnd = usedEnd || br.To == "end"
				usedFail = usedFail || br.To == "fail"
			}
			if hasDefault {
				prev = nil // no fall-through
			}
		}
		if i == len(prog.Steps)-1 && len(prev) > 0 {
			link(prev, "END", Edge{})
			usedEnd = true
		}
	}
	// Jumps last, back edges at the very end: the layout is ranked by the
	// plan's order.
	for _, back := range []bool{false, true} {
		for _, e := range jumps {
			if e.Back == back {
				g.Edges = append(g.Edges, e)
			}
		}
	}
	if usedEnd {
		g.Nodes = append(g.Nodes, Node{ID: "END", Text: "end"})
	}
	if usedFail {
		g.Nodes = append(g.Nodes, Node{ID: "FAIL", Text: "fail"})
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

func IsTerminal(id string) bool { return id == "START" || id == "END" || id == "FAIL" }

func (g *Graph) Mermaid(w io.Writer) {
	fmt.Fprintln(w, "flowchart TD")
	q := func(s string) string { return `"` + strings.NewReplacer(`"`, "#quot;", "\n", "<br/>").Replace(s) + `"` }
	for _, n := range g.Nodes {
		switch {
		case n.Children != nil:
			fmt.Fprintf(w, "  subgraph %s[%s]\n", n.ID, q(n.Text))
			for _, c := range n.Children {
				fmt.Fprintf(w, "    %s[%s]\n", c.ID, q(c.Text))
			}
			fmt.Fprintln(w, "  end")
		case IsTerminal(n.ID):
			fmt.Fprintf(w, "  %s((%s))\n", n.ID, n.Text)
		default:
			fmt.Fprintf(w, "  %s[%s]\n", n.ID, q(n.Text))
		}
	}
	for _, e := range g.Edges {
		arrow := "-->"
		if e.Dashed {
			arrow = "-.->"
		}
		if e.Label != "" {
			fmt.Fprintf(w, "  %s %s|%s| %s\n", e.From, arrow, q(e.Label), e.To)
		} else {
			fmt.Fprintf(w, "  %s %s %s\n", e.From, arrow, e.To)
		}
	}
}

func (g *Graph) DOT(w io.Writer) {
	q := func(s string) string {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
	}
	fmt.Fprintln(w, "digraph plan {\n  rankdir=TB;\n  node [shape=box];")
	for _, n := range g.Nodes {
		switch {
		case n.Children != nil:
			fmt.Fprintf(w, "  subgraph cluster_%s {\n    label=%s;\n", n.ID, q(n.Text))
			for _, c := range n.Children {
				fmt.Fprintf(w, "    %s [label=%s];\n", c.ID, q(c.Text))
			}
			fmt.Fprintln(w, "  }")
		case IsTerminal(n.ID):
			fmt.Fprintf(w, "  %s [shape=circle, label=%s];\n", n.ID, q(n.Text))
		default:
			fmt.Fprintf(w, "  %s [label=%s];\n", n.ID, q(n.Text))
		}
	}
	for _, e := range g.Edges {
		attrs := []string{}
		if e.Label != "" {
			attrs = append(attrs, "label="+q(e.Label))
		}
		if e.Dashed {
			attrs = append(attrs, "style=dashed")
		}
		if e.Back {
			attrs = append(attrs, "constraint=false")
		}
		fmt.Fprintf(w, "  %s -> %s", e.From, e.To)
		if len(attrs) > 0 {
			fmt.Fprintf(w, " [%s]", strings.Join(attrs, ", "))
		}
		fmt.Fprintln(w, ";")
	}
	fmt.Fprintln(w, "}")
}
