package plangraph_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/view/plangraph"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func render(t *testing.T, plan string) (mermaid, dot string) {
	t.Helper()
	prog, err := engine.Load(filepath.Join("testdata", plan), steps.Registry())
	if err != nil {
		t.Fatal(err)
	}
	g := plangraph.Build(prog)
	var m, d bytes.Buffer
	g.Mermaid(&m)
	g.DOT(&d)
	return m.String(), d.String()
}

// Each form a plan can take is drawn legibly in both languages: a
// for_each step or block marked as fanning out, a sequence in a group as a
// box of its steps in order, needs as edges between a group's children, a
// sub-plan call as a box that names its file and holds the callee's steps
// (groups included), and steps whose labels are the languages' own words.
// The drawings are compared with goldens (-update rewrites them) and each
// must parse.
func TestGraphForms(t *testing.T) {
	cases := []struct {
		plan         string
		mermaid, dot []string // lines each drawing has
		notM, notDot []string
	}{
		{"foreach-step.yaml",
			[]string{`  each["each (command)<br/>⇉ for_each split(trim(steps.list.output), #quot; #quot;), 2 at once"]`, "  list --> each", "  style each stroke-width:3px,stroke-dasharray:6 3"},
			[]string{`  each [label="each (command)\n⇉ for_each split(trim(steps.list.output), \" \"), 2 at once", style="dashed,bold"];`}, nil, nil},
		{"foreach-group.yaml",
			[]string{`  subgraph fan["fan (parallel)<br/>⇉ for_each [#quot;a#quot;, #quot;b#quot;, #quot;c#quot;], 2 at once"]`, "  START --> up", "  at --> after", "  style fan stroke-width:3px,stroke-dasharray:6 3"},
			[]string{"  subgraph cluster_fan {", `    style="dashed,bold";`}, nil, nil},
		{"sequence-in-group.yaml",
			[]string{"  subgraph top[\"top (parallel)\"]", "    subgraph fan[\"fan (sequence)<br/>⇉ for_each [1, 2], 8 at once\"]",
				"      subgraph inner[\"inner (parallel)\"]", "  read --> deep", "  first --> second", "  START --> first", "  second --> after", "  style fan stroke-width:3px,stroke-dasharray:6 3"},
			[]string{"    subgraph cluster_pair {", "      second [label=\"second (command)\"];", "  read -> each;"},
			[]string{"1. read", "START --> second", "first --> after"}, []string{"1. read"}},
		{"needs.yaml",
			[]string{`  build -->|"needs"| report`, `  lint -->|"needs"| report`, "  START --> build", "  START --> docs", "  report --> after", "  docs --> after"},
			[]string{`  build -> report [label="needs"];`},
			[]string{"START --> report", "build --> after", "lint --> after"}, nil},
		{"subplan.yaml",
			[]string{`  subgraph once["once (plan)<br/>▣ runs callee.yaml"]`, `    subgraph once__both["once/both (parallel)"]`, `      once__left["once/left (command)"]`,
				`    subgraph inside["inside (plan)<br/>▣ runs callee.yaml"]`, "  once__say --> once__left", "  once__right --> beside",
				`  subgraph each["each (plan)<br/>⇉ for_each [#quot;a#quot;, #quot;b#quot;], 8 at once<br/>▣ runs callee.yaml"]`, "  each__right --> END"},
			[]string{"    subgraph cluster_inside {", `    label="inside (plan)\n▣ runs callee.yaml";`, "  subgraph cluster_each {"}, nil, nil},
		{"keywords.yaml",
			[]string{`  subgraph L_graph["graph (parallel)"]`, `  L_subgraph["subgraph (command)"]`, "  edge --> L_subgraph"},
			[]string{`  "node" [label="node (command)"];`, `  subgraph "cluster_graph" {`, `  "edge" -> "subgraph";`, `  "node" -> "strict";`}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.plan, func(t *testing.T) {
			m, d := render(t, c.plan)
			base := strings.TrimSuffix(c.plan, ".yaml")
			golden(t, base+".mmd", m)
			golden(t, base+".dot", d)
			has(t, "mermaid", m, c.mermaid, c.notM)
			has(t, "dot", d, c.dot, c.notDot)
			checkMermaid(t, m)
			checkDOT(t, d)
		})
	}
}

func has(t *testing.T, what, out string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
	for _, w := range not {
		if strings.Contains(out, w) {
			t.Errorf("%s has %q:\n%s", what, w, out)
		}
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden (-update rewrites it):\n%s", name, got)
	}
}

var (
	mNode   = regexp.MustCompile(`^\s*(?:subgraph )?([A-Za-z_][A-Za-z0-9_]*)(?:\["[^"]*"\]|\(\([a-z]+\)\))$`)
	mEdge   = regexp.MustCompile(`^  ([A-Za-z_][A-Za-z0-9_]*) (-->|-\.->)(?:\|"[^"]*"\|)? ([A-Za-z_][A-Za-z0-9_]*)$`)
	mStyle  = regexp.MustCompile(`^  style ([A-Za-z_][A-Za-z0-9_]*) [a-z-]+:[^ ]+( [0-9]+)?$`)
	mermaid = map[string]bool{"graph": true, "flowchart": true, "subgraph": true, "end": true, "style": true,
		"classDef": true, "class": true, "click": true, "linkStyle": true, "direction": true}
)

// checkMermaid parses a flowchart as far as runner writes one: every line a
// node, a subgraph (closed), an edge between declared nodes or a style of
// one, and no id a word of Mermaid's own.
func checkMermaid(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != "flowchart TD" {
		t.Errorf("mermaid starts with %q", lines[0])
	}
	ids, depth := map[string]bool{}, 0
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "end" {
			depth--
			continue
		}
		if m := mNode.FindStringSubmatch(l); m != nil {
			if mermaid[m[1]] || ids[m[1]] {
				t.Errorf("mermaid: id %q is a keyword or declared twice", m[1])
			}
			ids[m[1]] = true
			if strings.HasPrefix(strings.TrimSpace(l), "subgraph ") {
				depth++
			}
		}
	}
	if depth != 0 {
		t.Errorf("mermaid: subgraphs not closed (%d)", depth)
	}
	for _, l := range lines[1:] {
		switch {
		case strings.TrimSpace(l) == "end" || mNode.MatchString(l):
		case mEdge.MatchString(l):
			m := mEdge.FindStringSubmatch(l)
			if !ids[m[1]] || !ids[m[3]] {
				t.Errorf("mermaid: edge to an undeclared node: %s", l)
			}
		case mStyle.MatchString(l):
			if m := mStyle.FindStringSubmatch(l); !ids[m[1]] {
				t.Errorf("mermaid: style of an undeclared node: %s", l)
			}
		default:
			t.Errorf("mermaid: line not understood: %q", l)
		}
	}
}

var (
	dID    = `(?:[A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\]|\\.)*")`
	dAttr  = `\[[a-z]+=(?:[a-z]+|"(?:[^"\\]|\\.)*")(?:, [a-z]+=(?:[a-z]+|"(?:[^"\\]|\\.)*"))*\]`
	dNode  = regexp.MustCompile(`^\s*(` + dID + `) ` + dAttr + `;$`)
	dEdge  = regexp.MustCompile(`^\s*(` + dID + `) -> (` + dID + `)(?: ` + dAttr + `)?;$`)
	dSub   = regexp.MustCompile(`^\s*subgraph (` + dID + `) \{$`)
	dSet   = regexp.MustCompile(`^\s*[a-z]+=(?:[A-Za-z]+|"(?:[^"\\]|\\.)*");$`)
	dWords = map[string]bool{"node": true, "edge": true, "graph": true, "digraph": true, "subgraph": true, "strict": true}
)

// checkDOT has Graphviz lay the graph out when it is installed, and parses
// it as far as runner writes DOT either way: statements of the forms
// runner uses, braces closed, bare ids not keywords, edges between
// declared nodes.
func checkDOT(t *testing.T, out string) {
	t.Helper()
	if dot, err := exec.LookPath("dot"); err == nil {
		cmd := exec.Command(dot, "-Tsvg")
		cmd.Stdin = strings.NewReader(out)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("dot -Tsvg: %v\n%.500s", err, msg)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	bare := func(id string) {
		if !strings.HasPrefix(id, `"`) && dWords[strings.ToLower(id)] {
			t.Errorf("dot: bare id %q is a keyword", id)
		}
	}
	ids, depth := map[string]bool{}, 0
	for _, l := range lines {
		switch {
		case l == "digraph plan {", strings.TrimSpace(l) == "node [shape=box];", dSet.MatchString(l):
			if strings.HasPrefix(l, "digraph") {
				depth++
			}
		case strings.TrimSpace(l) == "}":
			depth--
		case dSub.MatchString(l):
			bare(dSub.FindStringSubmatch(l)[1])
			depth++
		case dEdge.MatchString(l):
		case dNode.MatchString(l):
			id := dNode.FindStringSubmatch(l)[1]
			bare(id)
			ids[strings.Trim(id, `"`)] = true
		default:
			t.Errorf("dot: line not understood: %q", l)
		}
	}
	if depth != 0 {
		t.Errorf("dot: braces not closed (%d)", depth)
	}
	for _, l := range lines {
		if m := dEdge.FindStringSubmatch(l); m != nil {
			bare(m[1])
			bare(m[2])
			if !ids[strings.Trim(m[1], `"`)] || !ids[strings.Trim(m[2], `"`)] {
				t.Errorf("dot: edge to an undeclared node: %s", l)
			}
		}
	}
}
