package web

import (
	"bufio"
	"html/template"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/view/report"
)

var errorPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("error").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>runner serve</title>{{if .Boot}}
<script src="/assets/boot.js"></script>{{end}}</head>
<body><p id="error">{{.Msg}}</p></body></html>
`))
})

var listPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("list").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>runs · runner</title>
<script src="/assets/list.js" defer></script>
<style>
:root { color-scheme: light dark; --fg: #1f2328; --bg: #fff; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --dim: #6e7781; --line: #d0d7de; --bg2: #f6f8fa; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --ok: #2ea043; --bad: #f85149; --warn: #d29922; --dim: #8d96a0; --line: #30363d; --bg2: #161b22; }
}
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 12px 24px; color: var(--fg); background: var(--bg); }
a { color: #0969da; } @media (prefers-color-scheme: dark) { a { color: #4493f8; } }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; } td, th { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; white-space: nowrap; }
th { background: var(--bg2); font-weight: 600; } tr:hover td { background: var(--bg2); }
td.id code, td.id a { font: 12px ui-monospace, Menlo, Consolas, monospace; }
.meta { color: var(--dim); }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; background: var(--dim); }
.succeeded { background: var(--ok); } .failed { background: var(--bad); } .interrupted, .canceled { background: var(--warn); }
.running, .waiting { background: #0969da; }
#filter { margin: 8px 0; display: flex; flex-wrap: wrap; gap: 6px 12px; align-items: center; } #pages a { margin-right: 12px; }
/* A phone shows what tells runs apart; the rest is on each run's page. */
@media (max-width: 600px) {
  body { margin: 8px 10px; } .wide, td.plan .meta { display: none; } td, th { padding: 4px 6px; }
  /* An id's end tells runs of one minute apart: the ellipsis goes first. */
  td.id a { display: inline-block; max-width: 9em; overflow: hidden; text-overflow: ellipsis; direction: rtl; vertical-align: bottom; }
}
</style></head>
<body data-events="/events">
<h1>Runs <span class="meta" id="live-state">live</span></h1>
<p class="meta">under <code>{{.Dir}}</code> · <a href="/plans" id="start-link">start a run</a></p>
<form id="filter" method="get" action="/">
<label>status <select name="status">{{range .Statuses}}<option value="{{.}}"{{if eq . $.Status}} selected{{end}}>{{or . "any"}}</option>{{end}}</select></label>
<label>plan <input name="plan" value="{{.Plan}}" placeholder="name or path"></label>
<button type="submit">filter</button>{{if or .Status .Plan}} <a href="/">clear</a>{{end}}
</form>
<div id="list">
{{if .Runs}}<div class="scroll"><table id="runs"><tr><th>id</th><th>plan</th><th>status</th><th>started</th><th class="wide">duration</th><th class="wide">steps</th><th class="wide">tokens</th><th class="wide">cost</th></tr>
{{range .Runs}}<tr data-id="{{.ID}}" data-status="{{.Status}}"><td class="id"><a href="/runs/{{.ID}}">{{.ID}}</a></td><td class="plan">{{if .Name}}{{.Name}} <span class="meta"><code>{{or .Plan "-"}}</code></span>{{else}}<code>{{or .Plan "-"}}</code>{{end}}</td><td class="status"><span class="badge {{.Status}}">{{.StatusText}}</span></td><td>{{.StartedAt.Local.Format "2006-01-02 15:04"}}</td><td class="wide">{{.DurationText $.Now}}</td><td class="wide">{{.StepsText}}</td><td class="wide">{{.TokensText}}</td><td class="wide">{{.CostText}}</td></tr>
{{end}}</table></div>{{else if or .Status .Plan .After}}<p id="no-runs">no runs here that match</p>{{else}}<p id="no-runs">no runs under <code>{{.RunsDir}}</code> yet</p>{{end}}
<p id="pages">{{if .After}}<a id="newest" href="{{.First}}">newest</a>{{end}}{{if .Older}} <a id="older" href="{{.Older}}">older</a>{{end}}</p>
</div>
</body></html>
`))
})

// pageSize is how many runs a page of the list shows, unless ?limit= says.
const pageSize = 50

// list is the page of `runner runs`: newest first, a page at a time
// (?after=ID: the page after the one that ended at ID), filtered by
// ?status= and ?plan= (a part of its path or name). It reads the run
// index, and only the runs its page shows that the index cannot vouch for.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query := runs.Query{Status: q.Get("status"), Plan: q.Get("plan"), After: q.Get("after"), NewestFirst: true, Limit: pageSize}
	if !slices.Contains(listStatuses, query.Status) {
		s.refuse(w, r, http.StatusBadRequest, "status "+query.Status+": want one of "+strings.Join(listStatuses[1:], ", "))
		return
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			s.refuse(w, r, http.StatusBadRequest, "limit "+l+": want a number of runs from 1 to 1000")
			return
		}
		query.Limit = n
	}
	list, more, err := runs.Find(s.opt.Dir, query)
	if err != nil {
		s.refuse(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	for i := range list {
		s.temporalSummary(&list[i])
	}
	page := func(after string) string {
		v := url.Values{}
		for _, k := range []string{"status", "plan", "limit"} {
			if q.Get(k) != "" {
				v.Set(k, q.Get(k))
			}
		}
		if after != "" {
			v.Set("after", after)
		}
		if len(v) == 0 {
			return "/"
		}
		return "/?" + v.Encode()
	}
	data := map[string]any{"Dir": s.opt.Dir, "RunsDir": runs.RunsDir(s.opt.Dir), "Runs": list, "Now": time.Now(),
		"Statuses": listStatuses, "Status": query.Status, "Plan": query.Plan, "After": query.After, "First": page("")}
	if more {
		data["Older"] = page(list[len(list)-1].ID)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	bw := bufio.NewWriter(w)
	listPage().Execute(bw, data)
	bw.Flush()
}

// listStatuses are what the list filters by ("": any).
var listStatuses = []string{"", board.StatusRunning, board.StatusWaiting, board.StatusSucceeded, board.StatusFailed, board.StatusInterrupted}

// temporalSummary completes the summary of a live run on Temporal, which
// has no file to read until it ends, from its board through the bridge
// (as its page reads it): whether it waits for an answer, its steps and
// usage. A bridge that cannot be had leaves it "running", as runs.List
// says.
func (s *Server) temporalSummary(sum *runs.Summary) {
	if sum.Engine != "temporal" || !sum.Live || sum.Path == "" {
		return
	}
	b, err := s.load(sum.Path)
	if err != nil {
		s.opt.Log.Warn().Err(err).Str("run", sum.ID).Msg("reading the run on Temporal for the list")
		return
	}
	run := b.Run()
	if len(run.Waiting) > 0 || run.Status == board.StatusWaiting {
		sum.Status = board.StatusWaiting
	}
	if sum.Plan == "" {
		sum.Plan = run.PlanPath
		if abs, err := filepath.Abs(s.opt.Dir); err == nil {
			if rel, err := filepath.Rel(abs, run.PlanPath); err == nil && filepath.IsLocal(rel) {
				sum.Plan = rel
			}
		}
	}
	if !run.StartedAt.IsZero() {
		sum.StartedAt = run.StartedAt
	}
	sum.Steps, sum.Failed = 0, 0
	for _, st := range b.Steps() {
		sum.Steps++
		if st.Status == board.StatusFailed {
			sum.Failed++
		}
	}
	sum.Usage = agents.RecordedUsage(b.RecordingsKeyed())
}

// runPage is the run's report, live.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	path := s.runPath(r)
	if path == "" {
		s.refuse(w, r, http.StatusNotFound, "no run "+r.PathValue("id")+" under "+runs.RunsDir(s.opt.Dir))
		return
	}
	b, err := s.load(path)
	if err != nil {
		s.refuse(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	id := r.PathValue("id")
	running := runs.ReadRunning(path)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	err = report.WriteWith(w, b, report.Options{BoardPath: path, Live: &report.Live{
		Script: "/assets/live.js", CSRF: s.csrf, By: s.opt.By, Back: "/", Graph: "/runs/" + id + "/graph", Events: "/runs/" + id + "/events",
		Running: running, Actions: s.actions(path, b),
	}})
	if err != nil {
		s.opt.Log.Error().Err(err).Str("run", id).Msg("rendering the run page")
	}
}

// load reads the run's board as it stands: from the process that runs
// it (its socket) or the run on Temporal (a bridge) while it is live,
// else from its file.
func (s *Server) load(path string) (*board.Board, error) {
	remote, p, err := runs.OpenRemote(path, s.opt.Stderr)
	if err != nil {
		return nil, err
	}
	if remote != nil {
		defer remote.Close()
		return remote.Board()
	}
	if o, err := boardlock.ReadOwner(p); err == nil && o.Kind == boardlock.OwnerRun && o.Socket != "" {
		if c, err := liveboard.Dial(o.Socket, p); err == nil {
			b, err := c.Board()
			c.Close()
			if err == nil {
				return b, nil
			}
		}
	}
	return board.Load(p)
}
