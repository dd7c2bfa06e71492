package web

import (
	"bufio"
	"html/template"
	"net/http"
	"path/filepath"
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
:root { color-scheme: light dark; }
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 12px 24px; }
table { border-collapse: collapse; } td, th { border: 1px solid #8884; padding: 3px 8px; text-align: left; }
.meta { color: #6e7781; }
</style></head>
<body data-events="/events">
<h1>Runs <span class="meta" id="live-state">live</span></h1>
<p class="meta">under <code>{{.Dir}}</code> · <a href="/plans" id="start-link">start a run</a></p>
<div id="list">
{{if .Runs}}<table id="runs"><tr><th>id</th><th>plan</th><th>status</th><th>started</th><th>duration</th><th>steps</th><th>tokens</th><th>cost</th></tr>
{{range .Runs}}<tr data-id="{{.ID}}" data-status="{{.Status}}"><td><a href="/runs/{{.ID}}">{{.ID}}</a></td><td><code>{{or .Plan "-"}}</code></td><td class="status">{{.StatusText}}</td><td>{{.StartedAt.Local.Format "2006-01-02 15:04:05"}}</td><td>{{.DurationText $.Now}}</td><td>{{.StepsText}}</td><td>{{.TokensText}}</td><td>{{.CostText}}</td></tr>
{{end}}</table>{{else}}<p id="no-runs">no runs under <code>{{.RunsDir}}</code> yet</p>{{end}}
</div>
</body></html>
`))
})

// list is the page of `runner runs`: newest first.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	list, err := runs.List(s.opt.Dir)
	if err != nil {
		s.refuse(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
		list[i], list[j] = list[j], list[i]
	}
	for i := range list {
		s.temporalSummary(&list[i])
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	bw := bufio.NewWriter(w)
	listPage().Execute(bw, map[string]any{"Dir": s.opt.Dir, "RunsDir": runs.RunsDir(s.opt.Dir), "Runs": list, "Now": time.Now()})
	bw.Flush()
}

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
