package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/planrunner/runner/internal/sys/readlimit"
)

// answerReply is what the page shows once an answer is taken.
type answerReply struct {
	Label   string `json:"label"`
	Visit   int    `json:"visit"`
	Already bool   `json:"already"`
	Where   string `json:"where"` // file, live, temporal
	Resumed bool   `json:"resumed,omitempty"`
	Message string `json:"message"`
}

// answer records a person's answer from the page, exactly as `runner
// answer` does (runs.OpenQuestion and Question.Answer: the same check
// against the form, the same idempotence and conflict rule), with `by`
// from the page. Fields come as f.NAME, each read as the form's type
// says (as `runner answer --set`). An answer recorded on a run that
// stopped to wait starts the run again (Options.Resume), as `runner
// answer --resume`.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	path := s.runPath(r)
	if path == "" {
		s.refuse(w, r, http.StatusNotFound, "no run "+r.PathValue("id")+" under "+runs.RunsDir(s.opt.Dir))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, readlimit.Limit(readlimit.Answer))
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("the answer is over %d bytes, the limit of an answer (RUNNER_READ_LIMIT_MB raises it)", tooBig.Limit))
			return
		}
		s.refuse(w, r, http.StatusBadRequest, "the answer's form data: "+err.Error())
		return
	}
	form := r.PostForm
	label := form.Get("label")
	if label == "" {
		s.refuse(w, r, http.StatusBadRequest, "the answer names no step (label)")
		return
	}
	visit := 0
	if v := form.Get("visit"); v != "" && v != "0" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("visit %q: want a number from 1", v))
			return
		}
		visit = n
	}
	who := s.identity(r)
	by := strings.TrimSpace(form.Get("by"))
	if who != "" {
		by = who // known for sure: the form's name does not count
	}
	if by == "" {
		s.refuse(w, r, http.StatusBadRequest, "say who answers (answered by)")
		return
	}
	q, err := runs.OpenQuestion(path, label, visit, mask.New(), s.opt.Stderr)
	if err != nil {
		s.refuse(w, r, answerStatus(err), err.Error())
		return
	}
	defer q.Close()
	q.Identity = who
	answer, err := formAnswer(form, q.Form)
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("step %s: %v", label, err))
		return
	}
	a, err := q.Answer(answer, by)
	if err != nil {
		s.refuse(w, r, answerStatus(err), err.Error())
		return
	}
	name := steps.VisitName(a.Label, a.Visit)
	rep := answerReply{Label: a.Label, Visit: a.Visit, Already: a.Already}
	switch a.Where {
	case runs.OnTemporal:
		rep.Where, rep.Message = "temporal", "answered "+name+"; the run on Temporal goes on"
	case runs.OnLiveRun:
		rep.Where, rep.Message = "live", "answered "+name+"; the run still runs its other steps and takes the answer when it is resumed"
	default:
		rep.Where, rep.Message = "file", "answered "+name
	}
	if a.Already {
		rep.Message = "step " + name + " was already answered with this answer"
	}
	s.opt.Log.Info().Str("run", q.Run.ID).Str("step", name).Str("by", by).Bool("already", a.Already).Msg("answered from the page")
	if a.Where == runs.OnLiveRun && s.opt.Resume != nil && !a.Already {
		rep.Message = "answered " + name + "; the run still runs its other steps: once they end, it is resumed with the answer"
		go s.resumeWhenStopped(q.Path)
	}
	if a.Where == runs.OnFile && q.Run.Status == board.StatusWaiting {
		if s.opt.Resume == nil {
			rep.Message += "; resume the run to go on"
		} else {
			q.Close() // the resume takes the run's lock
			if err := s.opt.Resume(q.Path); err != nil {
				rep.Message += "; resuming the run failed: " + err.Error()
			} else {
				rep.Resumed = true
				rep.Message += "; the run goes on"
			}
		}
	}
	writeJSON(w, http.StatusOK, rep)
}

// answerStatus is the HTTP status of an answer refused: 409 for a
// different answer already recorded, 404 for a step that does not wait,
// 400 for an answer the form refuses, 500 for a run that cannot be read.
func answerStatus(err error) int {
	switch {
	case errors.Is(err, board.ErrAnswerConflict):
		return http.StatusConflict
	case errors.Is(err, board.ErrNotWaiting):
		return http.StatusNotFound
	case errors.Is(err, board.ErrNotAnswerer):
		return http.StatusForbidden
	case runs.IsUsage(err):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// resumeWhenStopped resumes the run at path once its process has let go
// of it, if it stopped to wait: the answer given through its socket is
// taken by its next resume. Its lock is tried four times a second, for
// this one run, until it is free.
func (s *Server) resumeWhenStopped(path string) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for range t.C {
		l, err := boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerCLI})
		var owned *boardlock.OwnedError
		if errors.As(err, &owned) {
			continue
		}
		if err != nil {
			s.opt.Log.Warn().Err(err).Str("board", path).Msg("waiting to resume the run")
			return
		}
		b, err := board.Load(path)
		l.Unlock()
		if err != nil {
			s.opt.Log.Warn().Err(err).Str("board", path).Msg("waiting to resume the run")
			return
		}
		if b.Run().Status != board.StatusWaiting {
			return // it went on by itself, or someone resumed it
		}
		if err := s.opt.Resume(path); err != nil {
			s.opt.Log.Warn().Err(err).Str("board", path).Msg("resuming the run")
		}
		return
	}
}

// formAnswer is the answer a posted form gives: its f.NAME fields, each
// read by form's field type (text as it came when the input has no
// form); a field left empty is not given, so a required one is then
// refused by name.
func formAnswer(posted url.Values, form *steps.Form) (map[string]any, error) {
	var names []string
	for k := range posted {
		if strings.HasPrefix(k, "f.") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	answer := map[string]any{}
	for _, k := range names {
		name, text := strings.TrimPrefix(k, "f."), posted.Get(k)
		if text == "" {
			continue
		}
		if form == nil {
			answer[name] = text
			continue
		}
		v, err := form.Parse(name, text)
		if err != nil {
			return nil, err
		}
		answer[name] = v
	}
	return answer, nil
}
