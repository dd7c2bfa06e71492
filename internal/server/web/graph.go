package web

import (
	"bufio"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"sync"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/view/plangraph"
)

// graphNode is a box of the drawn graph: the step's text from plangraph,
// with what the run did at it.
type graphNode struct {
	ID, Text string
	Status   string // of its last visit: succeeded, failed, waiting, …; pending before it runs
	Visits   int    // loop visits (a branch going back, retries of the plan)
	Items    int    // for_each items run
	Jumps    []plangraph.Edge
	Children []graphNode
	// Arrow: the plan goes on to this box from the one drawn above it.
	Arrow bool
}

var graphPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("graph").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>graph · run {{.Run.ID}} · {{.Run.Status}}</title>
<script src="/assets/live.js" defer></script>
<style>
:root { color-scheme: light dark; }
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0; }
header, main { padding: 12px 24px; }
.meta { color: #6e7781; }
.flow { display: flex; flex-direction: column; align-items: center; gap: 4px; }
.arrow { color: #6e7781; } .gap { height: 12px; }
.node, .group { border: 2px solid #8c959f; border-radius: 6px; padding: 4px 10px; min-width: 12em; }
.group > .kids { display: flex; gap: 8px; flex-wrap: wrap; justify-content: center; }
.node pre, .group > pre { margin: 0; font: 12px/1.4 ui-monospace, Menlo, Consolas, monospace; white-space: pre-wrap; }
.terminal { border-radius: 50%; min-width: 0; padding: 4px 14px; }
[data-status="succeeded"] { border-color: #1a7f37; } [data-status="failed"] { border-color: #cf222e; }
[data-status="running"], [data-status="waiting"] { border-color: #0969da; } [data-status="skipped"] { border-color: #8c959f; border-style: dashed; }
[data-status="interrupted"], [data-status="canceled"] { border-color: #9a6700; }
.badge { font-size: 12px; font-weight: 600; }
.jump { font-size: 12px; }
</style></head>
<body data-seq="{{.Seq}}" data-events="{{.Events}}">
<header><nav class="meta"><a href="/">all runs</a> · <a href="/runs/{{.Run.ID}}">run {{.Run.ID}}</a> · <span id="live-state">live</span></nav>
<h1>{{.Name}} <span id="run-status">{{.Run.Status}}</span></h1></header>
<main>
{{with .Error}}<p class="meta" id="graph-error">{{.}}</p>{{end}}
<div class="flow" id="graph">
{{range $i, $n := .Nodes}}{{if $n.Arrow}}<div class="arrow">↓</div>{{else if $i}}<div class="gap"></div>{{end}}
{{if $n.Children}}<div class="group" data-label="{{$n.ID}}" data-status="{{$n.Status}}"><pre>{{$n.Text}}</pre> {{template "state" $n}}
<div class="kids">{{range $n.Children}}<div class="node" data-label="{{.ID}}" data-status="{{.Status}}"><pre>{{.Text}}</pre>{{template "state" .}}</div>{{end}}</div></div>
{{else if eq $n.Status "terminal"}}<div class="node terminal" data-label="{{$n.ID}}"><pre>{{$n.Text}}</pre></div>
{{else}}<div class="node" data-label="{{$n.ID}}" data-status="{{$n.Status}}"><pre>{{$n.Text}}</pre>{{template "state" $n}}</div>{{end}}
{{end}}
</div>
<details id="plan-source"><summary>plan source</summary><pre>{{.Run.PlanSource}}</pre></details>
</main></body></html>
{{define "state"}}<div><span class="badge">{{.Status}}</span>{{if gt .Visits 1}} <span class="meta visits">{{.Visits}} visits</span>{{end}}{{if .Items}} <span class="meta items">{{.Items}} items</span>{{end}}</div>{{range .Jumps}}<div class="jump meta">⇢ {{.To}}{{with .Label}} when {{.}}{{end}}</div>{{end}}{{end}}
`))
})

// graphPage draws the run's plan with each step's status on it, live.
func (s *Server) graphPage(w http.ResponseWriter, r *http.Request) {
	path := s.runPath(r)
	if path == "" {
		s.refuse(w, r, http.StatusNotFound, "no run "+r.PathValue("id")+" under the runs served")
		return
	}
	b, err := s.load(path)
	if err != nil {
		s.refuse(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	run := b.Run()
	v := map[string]any{"Run": run, "Seq": b.Len(), "Events": "/runs/" + r.PathValue("id") + "/events", "Name": run.PlanPath}
	prog, err := engine.Compile(run.PlanPath, []byte(run.PlanSource), steps.Registry())
	if err != nil {
		v["Error"] = fmt.Sprintf("the saved plan does not compile here, so it cannot be drawn: %v", err)
	} else {
		if prog.Plan != nil && prog.Plan.Name != "" {
			v["Name"] = prog.Plan.Name
		}
		v["Nodes"] = drawn(plangraph.Build(prog), b, runs.ReadRunning(path))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	bw := bufio.NewWriter(w)
	if err := graphPage().Execute(bw, v); err != nil {
		s.opt.Log.Error().Err(err).Msg("rendering the graph")
	}
	bw.Flush()
}

// drawn puts what the run did on the graph's boxes. A record is found
// by its label as the run writes it: a callee's step CALL/LABEL (drawn
// as CALL__LABEL), an item's step ITEM/LABEL (drawn once, in its
// block), an item LABEL[i] (counted on its step).
func drawn(g *plangraph.Graph, b *board.Board, running []runs.RunningStep) []graphNode {
	type seen struct {
		status string
		visit  int
		last   map[string]string // the last visit's status by record label
		visits map[int]bool
		items  map[string]bool
	}
	ids := map[string]bool{}
	var walk func(ns []plangraph.Node)
	walk = func(ns []plangraph.Node) {
		for _, n := range ns {
			ids[n.ID] = true
			walk(n.Children)
		}
	}
	walk(g.Nodes)
	by := map[string]*seen{}
	get := func(id string) *seen {
		if by[id] == nil {
			by[id] = &seen{visits: map[int]bool{}, items: map[string]bool{}}
		}
		return by[id]
	}
	for _, rec := range b.Steps() {
		id, item := graphID(rec.Label, ids)
		if id == "" {
			continue
		}
		s := get(id)
		if item {
			s.items[fmt.Sprintf("%d/%s", rec.Visit, rec.Label)] = true
			if s.status == "" {
				s.status = "running"
			}
			continue
		}
		s.visits[rec.Visit] = true
		if rec.Visit > s.visit {
			s.visit, s.last = rec.Visit, map[string]string{}
		}
		if rec.Visit == s.visit {
			// A later record of the same visit (a resume ran it again)
			// says how it stands; a block's items are told apart by
			// their labels.
			s.last[rec.Label] = rec.Status
			s.status = rec.Status
			for _, st := range s.last {
				if st == board.StatusFailed {
					s.status = st
				}
			}
		}
	}
	for _, wi := range b.Run().Waiting {
		if id, _ := graphID(wi.Label, ids); id != "" {
			get(id).status = board.StatusWaiting
		}
	}
	for _, r := range running {
		if id, _ := graphID(r.Label, ids); id != "" {
			get(id).status = "running"
		}
	}
	// A jump to a group lands on each of its children: it is shown once,
	// to the group.
	group := map[string]string{}
	for _, n := range g.Nodes {
		for _, c := range n.Children {
			group[c.ID] = n.ID
		}
	}
	jumps := map[string][]plangraph.Edge{}
	for _, e := range g.Edges {
		if e.Dashed {
			if p, ok := group[e.To]; ok {
				e.To = p
			}
			jumps[e.From] = append(jumps[e.From], e)
		}
	}
	var node func(n plangraph.Node) graphNode
	node = func(n plangraph.Node) graphNode {
		if plangraph.IsTerminal(n.ID) {
			return graphNode{ID: n.ID, Text: n.Text, Status: "terminal"}
		}
		gn := graphNode{ID: n.ID, Text: n.Text, Status: "pending", Jumps: uniqueJumps(jumps[n.ID])}
		if s := by[n.ID]; s != nil {
			if s.status != "" {
				gn.Status = s.status
			}
			gn.Visits, gn.Items = len(s.visits), len(s.items)
		}
		for _, c := range n.Children {
			cn := node(c)
			gn.Children = append(gn.Children, cn)
			// A block not ended yet is as far as its steps are.
			if gn.Status == "pending" || gn.Status == "running" {
				switch cn.Status {
				case board.StatusWaiting:
					gn.Status = board.StatusWaiting
				case "pending", "terminal":
				default:
					if gn.Status == "pending" {
						gn.Status = "running"
					}
				}
			}
		}
		return gn
	}
	var out []graphNode
	for i, n := range g.Nodes {
		gn := node(n)
		gn.Arrow = i > 0 && linked(g.Edges, g.Nodes[i-1], n)
		out = append(out, gn)
	}
	return out
}

// graphID is the graph's box of a step record's label, and whether the
// record is one item of it (LABEL[i]); "" when the plan drawn has no
// such step (a plan changed since). Items' indices are dropped from
// every part of the label; a callee's steps are drawn under the call's
// id (CALL__LABEL), a for_each block's once, under their own label, so
// the leading parts are dropped until a box is found.
func graphID(label string, ids map[string]bool) (string, bool) {
	parts := strings.Split(label, "/")
	_, _, item := engine.SplitItemLabel(parts[len(parts)-1])
	for i := range parts {
		parts[i] = engine.BaseLabel(parts[i])
	}
	for i := range parts {
		if id := strings.Join(parts[i:], "__"); ids[id] {
			return id, item
		}
	}
	return "", false
}

// linked says whether the plan goes on from box a to box b: a solid edge
// from a step in a (or a itself) to one in b. A branch whose cases all
// jump, and the end of the run, have none.
func linked(edges []plangraph.Edge, a, b plangraph.Node) bool {
	in := func(n plangraph.Node) map[string]bool {
		m := map[string]bool{}
		var walk func(n plangraph.Node)
		walk = func(n plangraph.Node) {
			m[n.ID] = true
			for _, c := range n.Children {
				walk(c)
			}
		}
		walk(n)
		return m
	}
	from, to := in(a), in(b)
	for _, e := range edges {
		if !e.Dashed && from[e.From] && to[e.To] {
			return true
		}
	}
	return false
}

// uniqueJumps lists a branch's cases once each.
func uniqueJumps(es []plangraph.Edge) []plangraph.Edge {
	seen := map[string]bool{}
	var out []plangraph.Edge
	for _, e := range es {
		k := e.Label + "\x00" + e.To
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}
