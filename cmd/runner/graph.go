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
}

type graph struct {
	nodes []gnode
	edges []gedge
}

// buildGraph lays a plan out: steps top to bottom, groups as boxes, and
// branch cases as labelled edges to their targets.
func buildGraph(prog *engine.Program) *graph {
	g := &graph{}
	node := func(n *engine.Node) gnode {
		text := n.Label + " (" + n.Type + ")"
		if n.Children != nil {
			text = n.Label + " (parallel)"
		}
		if n.If != nil {
			text += "\nif " + n.If.Src
		}
		gn := gnode{id: n.Label, text: text}
		for _, c := range n.Children {
			gn.children = append(gn.children, gnode{id: c.Label, text: c.Label + " (" + c.Type + ")"})
		}
		return gn
	}
	// Terminals get upper-case ids: labels are lower case, and Mermaid
	// reads a node called `end` as the end of a subgraph.
	g.nodes = append(g.nodes, gnode{id: "START", text: "start"})
	prev := "START"
	usedEnd, usedFail := false, false
	for i, n := range prog.Steps {
		g.nodes = append(g.nodes, node(n))
		if prev != "" {
			g.edges = append(g.edges, gedge{from: prev, to: n.Label})
		}
		prev = n.Label
		if b, ok := n.Impl.(engine.Brancher); ok {
			hasDefault := false
			for _, br := range b.Branches() {
				label := br.When
				if label == "" {
					label, hasDefault = "otherwise", true
				}
				g.edges = append(g.edges, gedge{from: n.Label, to: terminal(br.To), label: label, dashed: true})
				usedEnd = usedEnd || br.To == "end"
				usedFail = usedFail || br.To == "fail"
			}
			if hasDefault {
				prev = "" // no fall-through
			}
		}
		if i == len(prog.Steps)-1 && prev != "" {
			g.edges = append(g.edges, gedge{from: prev, to: "END"})
			usedEnd = true
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
			fmt.Fprintf(w, "  subgraph cluster_%s {\n    label=%s;\n    %s [shape=point];\n", n.id, q(n.text), n.id)
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
		fmt.Fprintf(w, "  %s -> %s", e.from, e.to)
		if len(attrs) > 0 {
			fmt.Fprintf(w, " [%s]", strings.Join(attrs, ", "))
		}
		fmt.Fprintln(w, ";")
	}
	fmt.Fprintln(w, "}")
}
