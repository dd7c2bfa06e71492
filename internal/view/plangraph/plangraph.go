// Package plangraph lays a compiled plan out as a graph: its steps top
// to bottom, parallel groups as boxes, branch cases as labelled edges.
// `runner graph` prints it as Mermaid or DOT; `runner serve` draws it with
// each step's status.
package plangraph

import (
	"fmt"
	"io"
	"strings"

	"github.com/planrunner/runner/internal/engine"
)

type Node struct {
	ID, Text string
	Children []Node // a block's steps: a parallel group's, a sequence's, a callee's
	Kind     string // a block's kind (Kind*); "" : a step
	Each     bool   // for_each: the step or block runs once per item
}

// The kinds of block.
const (
	KindParallel = "parallel"
	KindSequence = "sequence"
	KindCall     = "call"
)

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

// Build lays a plan out: steps top to bottom; a block (a parallel group,
// a sequence, a sub-plan call, any of them under for_each) as a box
// holding its steps, drawn the same way at any depth; edges come into a
// block at the steps it starts with and leave from those it ends with
// (a group's children: fan-out, fan-in; a sequence's or a call's first
// and last step); `needs` inside a group are edges between its children;
// branch cases are labelled dashed edges to their targets, and a case
// that jumps back up is a back edge.
func Build(prog *engine.Program) *Graph {
	g := &Graph{}
	pos := map[string]int{}
	for i, n := range prog.Steps {
		pos[n.Label] = i
	}
	b := &builder{g: g}
	// Terminals get upper-case ids: labels are lower case, and Mermaid
	// reads a node called `end` as the end of a subgraph.
	g.Nodes = append(g.Nodes, Node{ID: "START", Text: "start"})
	prev := []string{"START"}
	usedEnd, usedFail := false, false
	var jumps []Edge
	for i, n := range prog.Steps {
		gn, ins, outs := b.node(n, "")
		g.Nodes = append(g.Nodes, gn)
		for _, to := range ins {
			b.link(prev, to, Edge{})
		}
		prev = outs
		if br, ok := n.Impl.(engine.Brancher); ok {
			hasDefault := false
			for _, c := range br.Branches() {
				label := c.When
				if label == "" {
					label, hasDefault = "otherwise", true
				}
				j, known := pos[c.To]
				back := known && j <= i
				jumps = append(jumps, Edge{From: n.Label, To: c.To, Label: label, Dashed: true, Back: back})
				usedEnd = usedEnd || c.To == "end"
				usedFail = usedFail || c.To == "fail"
			}
			if hasDefault {
				prev = nil // no fall-through
			}
		}
		if i == len(prog.Steps)-1 && len(prev) > 0 {
			b.link(prev, "END", Edge{})
			usedEnd = true
		}
	}
	// Jumps last, back edges at the very end: the layout is ranked by the
	// plan's order.
	for _, back := range []bool{false, true} {
		for _, e := range jumps {
			if e.Back != back {
				continue
			}
			// A jump lands where edges into its target's box attach (a
			// group's children, a sequence's first step), known once all
			// boxes are laid out.
			for _, to := range b.targets(prog, e.To) {
				e := e
				e.To = to
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

type builder struct {
	g *Graph
	// ins are where edges into a step's box attach, by the step's id (a
	// jump to a group lands on them).
	ins map[string][]string
}

func (b *builder) link(from []string, to string, e Edge) {
	for _, f := range from {
		e.From, e.To = f, to
		b.g.Edges = append(b.g.Edges, e)
	}
}

// node lays out step n (its id prefixed by the calls it is inside) and
// says where edges into it attach (ins) and leave from (outs).
func (b *builder) node(n *engine.Node, prefix string) (gn Node, ins, outs []string) {
	id := prefix + n.Label
	gn = Node{ID: id, Text: NodeText(n)}
	if n.Sub != nil {
		gn.Text += "\n▣ runs " + n.Call.Path
	}
	if n.ForEach != nil {
		gn.Each = true
	}
	if prefix != "" {
		// A callee's step (at any depth in its plan) says whose it is, as
		// the run labels it: CALL/LABEL.
		gn.Text = strings.ReplaceAll(strings.TrimSuffix(prefix, "__"), "__", "/") + "/" + gn.Text
	}
	switch {
	case n.Children != nil:
		gn.Kind = KindParallel
		// needs make the group a DAG: a child starts from those it needs,
		// and only the children nothing in the group needs end it.
		needed := map[string]bool{}
		for _, c := range n.Children {
			for _, l := range c.Needs {
				needed[l] = true
			}
		}
		childOuts := map[string][]string{}
		childIns := map[string][]string{}
		for _, c := range n.Children {
			cn, ci, co := b.node(c, prefix)
			gn.Children = append(gn.Children, cn)
			childIns[c.Label], childOuts[c.Label] = ci, co
			if len(c.Needs) == 0 {
				ins = append(ins, ci...)
			}
			if !needed[c.Label] {
				outs = append(outs, co...)
			}
		}
		for _, c := range n.Children {
			for _, l := range c.Needs {
				for _, to := range childIns[c.Label] {
					b.link(childOuts[l], to, Edge{Label: "needs"})
				}
			}
		}
	case n.Seq != nil:
		gn.Kind = KindSequence
		gn.Text = sequenceText(n) // its steps are drawn inside it, not listed
		ins, outs = b.chain(&gn, n.Seq, prefix)
	case n.Sub != nil && len(n.Sub.Steps) > 0:
		gn.Kind = KindCall
		ins, outs = b.chain(&gn, n.Sub.Steps, id+"__")
	default:
		ins, outs = []string{id}, []string{id}
	}
	if b.ins == nil {
		b.ins = map[string][]string{}
	}
	b.ins[id] = ins
	return gn, ins, outs
}

// chain lays steps out in order inside box gn (a sequence's, a callee's).
func (b *builder) chain(gn *Node, steps []*engine.Node, prefix string) (ins, outs []string) {
	for j, c := range steps {
		cn, ci, co := b.node(c, prefix)
		gn.Children = append(gn.Children, cn)
		if j == 0 {
			ins = ci
		} else {
			for _, to := range ci {
				b.link(outs, to, Edge{})
			}
		}
		outs = co
	}
	return ins, outs
}

// sequenceText is a sequence box's title: NodeText without the list of
// its steps (they are drawn inside it).
func sequenceText(n *engine.Node) string {
	lines := strings.Split(NodeText(n), "\n")
	out := lines[:1]
	for _, l := range lines[1:] {
		if len(l) > 0 && l[0] >= '0' && l[0] <= '9' {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// targets are the boxes a jump to label lands on: where edges into its
// box attach (a group's children, a sequence's first step).
func (b *builder) targets(prog *engine.Program, label string) []string {
	if n := prog.Node(label); n != nil {
		if in := b.ins[label]; len(in) > 0 {
			return in
		}
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

// mermaidWords are the words a Mermaid flowchart reads as its own where a
// node id can stand; a step so labelled gets the id L_label (labels are
// lower case, so no other step has it).
var mermaidWords = map[string]bool{"graph": true, "flowchart": true, "subgraph": true, "end": true,
	"style": true, "classdef": true, "class": true, "click": true, "linkstyle": true, "direction": true,
	"call": true, "href": true, "callback": true, "default": true, "interpolate": true}

func (g *Graph) Mermaid(w io.Writer) {
	fmt.Fprintln(w, "flowchart TD")
	q := func(s string) string { return `"` + strings.NewReplacer(`"`, "#quot;", "\n", "<br/>").Replace(s) + `"` }
	id := func(s string) string {
		if mermaidWords[s] {
			return "L_" + s
		}
		return s
	}
	var each []string
	var node func(n Node, indent string)
	node = func(n Node, indent string) {
		switch {
		case n.Children != nil:
			fmt.Fprintf(w, "%ssubgraph %s[%s]\n", indent, id(n.ID), q(n.Text))
			for _, c := range n.Children {
				node(c, indent+"  ")
			}
			fmt.Fprintf(w, "%send\n", indent)
		case IsTerminal(n.ID):
			fmt.Fprintf(w, "%s%s((%s))\n", indent, n.ID, n.Text)
		default:
			fmt.Fprintf(w, "%s%s[%s]\n", indent, id(n.ID), q(n.Text))
		}
		if n.Each {
			each = append(each, n.ID)
		}
	}
	for _, n := range g.Nodes {
		node(n, "  ")
	}
	for _, e := range g.Edges {
		arrow := "-->"
		if e.Dashed {
			arrow = "-.->"
		}
		if e.Label != "" {
			fmt.Fprintf(w, "  %s %s|%s| %s\n", id(e.From), arrow, q(e.Label), id(e.To))
		} else {
			fmt.Fprintf(w, "  %s %s %s\n", id(e.From), arrow, id(e.To))
		}
	}
	// A for_each step or block, which fans out into one run per item: a
	// double-weight dashed border, besides the ⇉ line in its text.
	for _, e := range each {
		fmt.Fprintf(w, "  style %s stroke-width:3px,stroke-dasharray:6 3\n", id(e))
	}
}

func (g *Graph) DOT(w io.Writer) {
	q := func(s string) string {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
	}
	// A step may be called node, edge or graph, which DOT reads as
	// keywords: such ids are quoted (labels are [a-z][a-z0-9_]*, valid
	// ids otherwise).
	id := func(s string) string {
		switch strings.ToLower(strings.TrimPrefix(s, "cluster_")) {
		case "node", "edge", "graph", "digraph", "subgraph", "strict":
			return q(s)
		}
		return s
	}
	fmt.Fprintln(w, "digraph plan {\n  rankdir=TB;\n  node [shape=box];")
	var node func(n Node, indent string)
	node = func(n Node, indent string) {
		switch {
		case n.Children != nil:
			fmt.Fprintf(w, "%ssubgraph %s {\n%s  label=%s;\n", indent, id("cluster_"+n.ID), indent, q(n.Text))
			if n.Each {
				// One run per item: a dashed, bold frame.
				fmt.Fprintf(w, "%s  style=\"dashed,bold\";\n", indent)
			}
			for _, c := range n.Children {
				node(c, indent+"  ")
			}
			fmt.Fprintf(w, "%s}\n", indent)
		case IsTerminal(n.ID):
			fmt.Fprintf(w, "%s%s [shape=circle, label=%s];\n", indent, n.ID, q(n.Text))
		case n.Each:
			fmt.Fprintf(w, "%s%s [label=%s, style=\"dashed,bold\"];\n", indent, id(n.ID), q(n.Text))
		default:
			fmt.Fprintf(w, "%s%s [label=%s];\n", indent, id(n.ID), q(n.Text))
		}
	}
	for _, n := range g.Nodes {
		node(n, "  ")
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
		fmt.Fprintf(w, "  %s -> %s", id(e.From), id(e.To))
		if len(attrs) > 0 {
			fmt.Fprintf(w, " [%s]", strings.Join(attrs, ", "))
		}
		fmt.Fprintln(w, ";")
	}
	fmt.Fprintln(w, "}")
}
