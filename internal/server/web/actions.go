package web

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/readlimit"
	"github.com/planrunner/runner/internal/view/report"
)

// The bounds of looking for plans under the served directory: a
// directory tree of a project, not a home directory, is expected.
const (
	plansDepth = 4
	plansFiles = 400
)

// planView is a plan the page can start: its path under the served
// directory, its name and description, and its vars with their defaults.
type planView struct {
	Rel, Name, Description string
	Vars                   []varView
}

type varView struct{ Name, Default string }

// actionReply is what the page shows once an action is taken.
type actionReply struct {
	Message string `json:"message"`
	// URL is the page of the run the action made (a start, a fork).
	URL string `json:"url,omitempty"`
	ID  string `json:"id,omitempty"`
}

var plansPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("plans").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>start a run · runner</title>
<script src="/assets/live.js" defer></script>
<style>` + pageCSS + `</style></head>
<body data-csrf="{{.CSRF}}">
<header><nav class="meta"><a href="/">all runs</a></nav>
<h1>Start a run</h1>
<p class="meta">plans under <code>{{.Dir}}</code>; each run is saved under <code>{{.RunsDir}}</code></p></header>
<main id="plans">
{{range .Plans}}<section class="plan" data-plan="{{.Rel}}"><h2>{{or .Name .Rel}} <span class="meta"><code>{{.Rel}}</code></span></h2>
{{with .Description}}<p class="meta">{{.}}</p>{{end}}
<form class="action" data-action="/runs">
<input type="hidden" name="plan" value="{{.Rel}}">
{{range .Vars}}<label class="field">var <code>{{.Name}}</code> <input name="v.{{.Name}}" value="{{.Default}}"></label>
{{end}}<button type="submit">start</button> <output class="action-result"></output>
</form></section>
{{else}}<p id="no-plans">no plans under <code>{{.Dir}}</code></p>{{end}}
</main></body></html>
`))
})

// pageCSS is the look the list, plans and graph pages share with the
// report: system fonts, light and dark, readable on a phone.
const pageCSS = `
:root { color-scheme: light dark; --muted: #6e7781; --line: #8884; --accent: #0969da; }
body { font: 15px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0; }
header, main { padding: 12px 24px; } @media (max-width: 600px) { header, main { padding: 8px 12px; } }
h1 { font-size: 1.5em; margin: .2em 0; } h2 { font-size: 1.15em; margin: .2em 0; }
.meta { color: var(--muted); }
a { color: var(--accent); }
table { border-collapse: collapse; } td, th { border: 1px solid var(--line); padding: 4px 8px; text-align: left; }
.scroll { overflow-x: auto; }
section.plan { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; margin: 12px 0; max-width: 48em; }
label.field { display: block; margin: 6px 0; }
label.field input, label.field select, label.field textarea { display: block; width: 100%; max-width: 32em; box-sizing: border-box; font: inherit; padding: 6px; margin-top: 2px; }
button { font: inherit; padding: 6px 16px; border-radius: 6px; border: 1px solid var(--line); background: var(--accent); color: #fff; cursor: pointer; }
output.bad, .bad { color: #cf222e; }
`

// findPlans lists the plans under dir a run can be started of: YAML
// files that read as plans, at most plansDepth folders down and
// plansFiles files read, skipping hidden folders (.runner, .git) and
// vendored trees.
func findPlans(dir string) []planView {
	var out []planView
	read := 0
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			name := d.Name()
			if p != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor" || strings.Count(rel, string(filepath.Separator)) >= plansDepth) {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); (ext != ".yaml" && ext != ".yml") || !d.Type().IsRegular() {
			return nil
		}
		if read++; read > plansFiles {
			return filepath.SkipAll
		}
		src, err := readlimit.File(p, readlimit.Plan)
		if err != nil {
			return nil
		}
		pl, err := plans.Parse(p, src)
		if err != nil || pl == nil || pl.Version == 0 || len(pl.Steps) == 0 {
			return nil
		}
		pv := planView{Rel: filepath.ToSlash(rel), Name: pl.Name, Description: strings.TrimSpace(pl.Description)}
		for _, v := range pl.Vars {
			pv.Vars = append(pv.Vars, varView{Name: v.Name, Default: varText(v.Default)})
		}
		out = append(out, pv)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out
}

// varText is a var's default as `--var NAME=VALUE` takes it.
func varText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool, int, int64, float64:
		return fmt.Sprint(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// plansList is the page that starts runs: each plan under the served
// directory with its vars as a form.
func (s *Server) plansList(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	plansPage().Execute(w, map[string]any{"Dir": s.opt.Dir, "RunsDir": runs.RunsDir(s.opt.Dir), "Plans": findPlans(s.opt.Dir), "CSRF": s.csrf})
}

// actionForm reads a POSTed form, bounded as an answer is.
func (s *Server) actionForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, readlimit.Limit(readlimit.Answer))
	if err := r.ParseForm(); err != nil {
		s.refuse(w, r, http.StatusBadRequest, "the form data: "+err.Error())
		return false
	}
	return true
}

// launching says the page cannot start processes (Options.Launch unset).
func (s *Server) launching(w http.ResponseWriter, r *http.Request) bool {
	if s.opt.Launch == nil {
		s.refuse(w, r, http.StatusNotImplemented, "this server does not start runs")
		return false
	}
	return true
}

// start starts a run of a plan found under the served directory (only
// those: the page names it by its path there), with the vars given,
// as `runner run` in a process of its own, saved under the served
// directory's runs with an id chosen here, so the reply can name its page.
func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	if !s.launching(w, r) || !s.actionForm(w, r) {
		return
	}
	rel := r.PostForm.Get("plan")
	var plan *planView
	for _, p := range findPlans(s.opt.Dir) {
		if p.Rel == rel {
			plan = &p
			break
		}
	}
	if plan == nil {
		s.refuse(w, r, http.StatusNotFound, fmt.Sprintf("no plan %q under %s", rel, s.opt.Dir))
		return
	}
	known := map[string]bool{}
	for _, v := range plan.Vars {
		known[v.Name] = true
	}
	var names []string
	for k := range r.PostForm {
		if name, ok := strings.CutPrefix(k, "v."); ok {
			if !known[name] {
				s.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("the plan %s has no var %q", rel, name))
				return
			}
			names = append(names, name)
		}
	}
	sort.Strings(names)
	dir, err := filepath.Abs(s.opt.Dir)
	if err != nil {
		s.refuse(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	id := board.NewID(time.Now())
	path := filepath.Join(runs.RunsDir(dir), id, "blackboard.json")
	args := []string{"run", filepath.Join(dir, filepath.FromSlash(rel)), "--workdir", dir, "--out", path, "-q"}
	for _, n := range names {
		args = append(args, "--var", n+"="+r.PostForm.Get("v."+n))
	}
	if err := s.opt.Launch(dir, args...); err != nil {
		s.refuse(w, r, http.StatusInternalServerError, "starting the run: "+err.Error())
		return
	}
	s.opt.Log.Info().Str("plan", rel).Str("run", id).Msg("started a run from the page")
	msg := "started run " + id
	if !s.appears(path) {
		msg += "; it has not saved its first state yet (see serve's log if it does not show)"
	}
	writeJSON(w, http.StatusOK, actionReply{Message: msg, URL: "/runs/" + id, ID: id})
}

// appears waits a little for a run just launched to save its board, so
// that its page is there when the browser goes to it.
func (s *Server) appears(path string) bool {
	for range 100 {
		if exists(path) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// stop interrupts the run's process as Ctrl-C would: it stops its steps,
// saves, and ends interrupted, to be resumed.
func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	path := s.runPath(r)
	if path == "" {
		s.refuse(w, r, http.StatusNotFound, "no run "+r.PathValue("id")+" under "+runs.RunsDir(s.opt.Dir))
		return
	}
	pid := runs.LiveProcess(path)
	if pid == 0 {
		s.refuse(w, r, http.StatusConflict, "run "+r.PathValue("id")+" is not running in a process of this machine (a run on Temporal is stopped through Temporal)")
		return
	}
	p, err := os.FindProcess(pid)
	if err == nil {
		err = p.Signal(syscall.SIGTERM)
	}
	if err != nil {
		s.refuse(w, r, http.StatusInternalServerError, fmt.Sprintf("stopping process %d: %v", pid, err))
		return
	}
	s.opt.Log.Info().Str("run", r.PathValue("id")).Int("pid", pid).Msg("stopped a run from the page")
	writeJSON(w, http.StatusOK, actionReply{Message: fmt.Sprintf("stopping run %s: it saves and ends interrupted; resume it to go on", r.PathValue("id"))})
}

// resume resumes a run that stopped (interrupted, or waiting with its
// answers given) as `runner resume`, in a process of its own.
func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	path := s.runPath(r)
	if path == "" {
		s.refuse(w, r, http.StatusNotFound, "no run "+r.PathValue("id")+" under "+runs.RunsDir(s.opt.Dir))
		return
	}
	if s.opt.Resume == nil {
		s.refuse(w, r, http.StatusNotImplemented, "this server does not resume runs")
		return
	}
	if st := resumable(path); st != "" {
		s.refuse(w, r, http.StatusConflict, "run "+r.PathValue("id")+" "+st)
		return
	}
	if err := s.opt.Resume(path); err != nil {
		s.refuse(w, r, http.StatusInternalServerError, "resuming the run: "+err.Error())
		return
	}
	s.opt.Log.Info().Str("run", r.PathValue("id")).Msg("resumed a run from the page")
	writeJSON(w, http.StatusOK, actionReply{Message: "resuming run " + r.PathValue("id")})
}

// resumable says why the run at path cannot be resumed now ("": it can).
func resumable(path string) string {
	if !exists(path) {
		return "is not saved here (a run on Temporal goes on by itself)"
	}
	b, err := board.Load(path)
	if err != nil {
		return "cannot be read: " + err.Error()
	}
	return resumableRun(path, b.Run())
}

// resumableRun is resumable for run, the run as its file says.
func resumableRun(path string, run board.Run) string {
	if runs.LiveProcess(path) != 0 {
		return "is running"
	}
	switch st := run.Status; st {
	case board.StatusInterrupted, board.StatusWaiting, board.StatusRunning: // running in the file, its process gone: interrupted
		return ""
	default:
		return "has " + st + ": there is nothing to resume (fork it from a step to run again)"
	}
}

// fork starts a fork of the run from a step visit it ran: `runner replay
// --from` in a process of its own, in the run's workdir, saved as a new
// run beside it. The run's own folder is not written.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	path := s.runPath(r)
	if path == "" {
		s.refuse(w, r, http.StatusNotFound, "no run "+r.PathValue("id")+" under "+runs.RunsDir(s.opt.Dir))
		return
	}
	if !s.launching(w, r) || !s.actionForm(w, r) {
		return
	}
	from := r.PostForm.Get("from")
	if from == "" {
		s.refuse(w, r, http.StatusBadRequest, "say which step to fork from (from)")
		return
	}
	if !exists(path) {
		s.refuse(w, r, http.StatusConflict, "run "+r.PathValue("id")+" is still running: fork it once it has stopped")
		return
	}
	b, err := board.Load(path)
	if err != nil {
		s.refuse(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	if runs.LiveProcess(path) != 0 {
		s.refuse(w, r, http.StatusConflict, "run "+r.PathValue("id")+" is still running: fork it once it has stopped")
		return
	}
	if err := replay.CheckFrom(b, from); err != nil {
		s.refuse(w, r, http.StatusBadRequest, err.Error())
		return
	}
	wd := b.Run().Workdir
	if fi, err := os.Stat(wd); err != nil || !fi.IsDir() {
		s.refuse(w, r, http.StatusConflict, fmt.Sprintf("the run's workdir %s is not here: fork it with `runner replay --from %s --workdir DIR`", wd, from))
		return
	}
	id := board.NewID(time.Now())
	out := filepath.Join(filepath.Dir(filepath.Dir(path)), id, "blackboard.json")
	if abs, err := filepath.Abs(out); err == nil {
		out = abs
	}
	abs, _ := filepath.Abs(path)
	if err := s.opt.Launch(wd, "replay", abs, "--workdir", wd, "--from", from, "--out", out, "-q"); err != nil {
		s.refuse(w, r, http.StatusInternalServerError, "starting the fork: "+err.Error())
		return
	}
	s.opt.Log.Info().Str("run", r.PathValue("id")).Str("from", from).Str("fork", id).Msg("forked a run from the page")
	msg := fmt.Sprintf("forked run %s from %s as run %s", r.PathValue("id"), from, id)
	if !s.appears(out) {
		msg += "; it has not saved its first state yet (see serve's log if it does not show)"
	}
	writeJSON(w, http.StatusOK, actionReply{Message: msg, URL: "/runs/" + id, ID: id})
}

// actions are the buttons of a run's page: what can be done to it now.
func (s *Server) actions(path string, b *board.Board) *report.Actions {
	id := filepath.Base(filepath.Dir(path))
	a := &report.Actions{}
	run := b.Run()
	live := runs.LiveProcess(path) != 0
	if live {
		a.Stop = "/runs/" + id + "/stop"
	}
	if s.opt.Resume != nil && !live && exists(path) && resumableRun(path, run) == "" {
		a.Resume = "/runs/" + id + "/resume"
	}
	if s.opt.Launch != nil && !live && exists(path) {
		a.Fork = "/runs/" + id + "/fork"
		seen := map[string]bool{}
		for _, rec := range b.Steps() {
			if rec.Parent != "" || rec.Status == "skipped" {
				continue
			}
			name := steps.VisitName(rec.Label, rec.Visit)
			if !seen[name] {
				seen[name] = true
				a.ForkFrom = append(a.ForkFrom, name)
			}
		}
		if len(a.ForkFrom) == 0 {
			a.Fork = ""
		}
	}
	if a.Stop == "" && a.Resume == "" && a.Fork == "" {
		return nil
	}
	return a
}
