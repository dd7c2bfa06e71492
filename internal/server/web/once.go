package web

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/notify"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/planrunner/runner/internal/sys/readlimit"
)

// A single-use link, sent by a notification (package notify), answers
// one input of one run once, before it expires, without the serve token:
// GET /once/RUN?step=LABEL&visit=N&token=T shows the input's form (a plain
// HTML form, no script), POST answers it. The token is checked against
// the sha256 the run saved on that very input; any other input, a token
// that expired and an input that has its answer already are refused. The
// answer is recorded as given by "single-use link".

// linkAnswerer is the name an answer through a single-use link is
// recorded under.
const linkAnswerer = "single-use link"

var oncePageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("once").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>runner: answer {{.Step}}</title></head>
<body><h1>Run {{.Run}}: {{.Step}}</h1>
<pre id="prompt">{{.Prompt}}</pre>
<form method="post" action="/once/{{.Run}}">
<input type="hidden" name="step" value="{{.Label}}"><input type="hidden" name="visit" value="{{.Visit}}"><input type="hidden" name="token" value="{{.Token}}">
{{range .Fields}}<p><label>{{.Name}}{{if .Description}} ({{.Description}}){{end}}
{{if eq .Type "boolean"}}<select name="f.{{.Name}}"><option value=""></option><option value="true">yes</option><option value="false">no</option></select>
{{else if .Enum}}<select name="f.{{.Name}}"><option value=""></option>{{range .Enum}}<option>{{.}}</option>{{end}}</select>
{{else}}<input name="f.{{.Name}}">{{end}}</label></p>
{{end}}<p><button type="submit">answer</button> (this link answers once, until {{.Expires}})</p>
</form></body></html>
`))
})

// openOnce opens the question a single-use link names and checks its
// token; it writes the refusal itself and returns nil.
func (s *Server) openOnce(w http.ResponseWriter, r *http.Request, step, visitText, token string) *runs.Question {
	path := s.runPath(r)
	if path == "" {
		s.refuse(w, r, http.StatusNotFound, "no run "+r.PathValue("id"))
		return nil
	}
	visit, err := strconv.Atoi(visitText)
	if err != nil || visit < 1 || step == "" {
		s.refuse(w, r, http.StatusBadRequest, "the link names no input (step and visit)")
		return nil
	}
	q, err := runs.OpenQuestion(path, step, visit, mask.New(), s.opt.Stderr)
	if err != nil {
		s.refuse(w, r, answerStatus(err), err.Error())
		return nil
	}
	refuse := func(code int, msg string) *runs.Question {
		q.Close()
		s.refuse(w, r, code, msg)
		return nil
	}
	if !q.Waiting {
		return refuse(http.StatusGone, "step "+steps.VisitName(step, visit)+" does not wait for an answer: "+notify.ErrLinkUsed.Error()+" or its run went on")
	}
	now := time.Now()
	if s.opt.Now != nil {
		now = s.opt.Now()
	}
	switch err := notify.CheckLink(q.Input, token, now); {
	case errors.Is(err, notify.ErrLinkExpired):
		return refuse(http.StatusGone, err.Error()+"; answer with runner answer or from runner serve")
	case err != nil:
		return refuse(http.StatusForbidden, err.Error())
	}
	if q.HasAnswer() {
		return refuse(http.StatusGone, notify.ErrLinkUsed.Error()+": step "+steps.VisitName(step, visit)+" has its answer")
	}
	return q
}

func (s *Server) oncePage(w http.ResponseWriter, r *http.Request) {
	qv := r.URL.Query()
	q := s.openOnce(w, r, qv.Get("step"), qv.Get("visit"), qv.Get("token"))
	if q == nil {
		return
	}
	defer q.Close()
	var fields []steps.FormField
	if q.Form != nil {
		fields = q.Form.Fields
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	oncePageTmpl().Execute(w, map[string]any{"Run": q.Run.ID, "Step": steps.VisitName(q.Input.Label, q.Input.Visit),
		"Label": q.Input.Label, "Visit": q.Input.Visit, "Token": qv.Get("token"), "Prompt": q.Input.Prompt,
		"Fields": fields, "Expires": q.Input.LinkExpires.UTC().Format(time.RFC3339)})
}

func (s *Server) onceAnswer(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !sameOrigin(o, r.Host) {
		s.refuse(w, r, http.StatusForbidden, "refused: the request comes from another origin ("+o+"), not http://"+r.Host)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, readlimit.Limit(readlimit.Answer))
	if err := r.ParseForm(); err != nil {
		s.refuse(w, r, http.StatusBadRequest, "the answer's form data: "+err.Error())
		return
	}
	form := r.PostForm
	q := s.openOnce(w, r, form.Get("step"), form.Get("visit"), form.Get("token"))
	if q == nil {
		return
	}
	defer q.Close()
	answer, err := formAnswer(form, q.Form)
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("step %s: %v", q.Input.Label, err))
		return
	}
	a, err := q.Answer(answer, linkAnswerer)
	if err != nil {
		s.refuse(w, r, answerStatus(err), err.Error())
		return
	}
	name := steps.VisitName(a.Label, a.Visit)
	s.opt.Log.Info().Str("run", q.Run.ID).Str("step", name).Msg("answered through a single-use link")
	msg := "answered " + name
	if a.Where == runs.OnFile && q.Run.Status == board.StatusWaiting && s.opt.Resume != nil {
		q.Close() // the resume takes the run's lock
		if err := s.opt.Resume(q.Path); err != nil {
			msg += "; resuming the run failed: " + err.Error()
		} else {
			msg += "; the run goes on"
		}
	}
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		writeJSON(w, http.StatusOK, answerReply{Label: a.Label, Visit: a.Visit, Message: msg})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	errorPage().Execute(w, map[string]any{"Msg": msg})
}
