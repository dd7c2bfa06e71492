package runs

import (
	"path/filepath"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/notify"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/rs/zerolog"
)

// NotifyWait bounds how long a run's process waits at its end for its
// notifications to be delivered (their retries included).
var NotifyWait = 15 * time.Second

// notifyEnd sends the plan's notifications for how the run on b ended:
// each input it newly waits at (with a single-use answer link when a
// target asks for one and the input names no answerers: a link cannot
// say who follows it), or that it failed or ended. The board is still
// open: a link's sha256 and expiry are saved on its input, and an input
// is marked notified so that a resume that stops there again does not
// tell twice.
func notifyEnd(b *board.Board, plan *plans.Plan, m *mask.Masker, log zerolog.Logger) {
	if plan == nil || len(plan.Notify) == 0 {
		return
	}
	s := notify.New(plan.Notify, m.String, log)
	run := b.Run()
	now := time.Now().UTC()
	name := plan.Name
	if name == "" {
		name = filepath.Base(run.PlanPath)
	}
	base := notify.Event{Run: run.ID, Plan: name, Status: run.Status, Error: run.Error, Board: b.Path(), Time: now}
	switch run.Status {
	case board.StatusWaiting:
		if !s.Wants(notify.EventWaiting) {
			return
		}
		lt := s.LinkTarget()
		waiting := append([]board.WaitingInput(nil), run.Waiting...)
		var events []notify.Event
		for i := range waiting {
			w := &waiting[i]
			if w.Notified {
				continue
			}
			in := &notify.Input{Step: steps.VisitName(w.Label, w.Visit), Prompt: w.Prompt, Tool: w.Tool,
				Answerers: w.Answerers, Deadline: w.Deadline, Command: AnswerCommand(engine.ShellQuote(b.Path()), *w)}
			if lt != nil && len(w.Answerers) == 0 {
				token, sum, err := notify.NewLink()
				if err != nil {
					log.Warn().Err(err).Msg("notify: making a single-use link")
				} else {
					ttl := lt.LinkTTL
					if ttl <= 0 {
						ttl = notify.DefaultLinkTTL
					}
					exp := now.Add(ttl)
					w.Link, w.LinkExpires = sum, &exp
					in.Link, in.LinkExpires = notify.LinkURL(lt.LinkBase, run.ID, w.Label, w.Visit, token), &exp
				}
			}
			w.Notified = true
			ev := base
			ev.Event, ev.Input = notify.EventWaiting, in
			events = append(events, ev)
		}
		if len(events) == 0 {
			return
		}
		// Saved before anything is sent: a link works only once its
		// input keeps its sum.
		if err := b.UpdateRun(func(r *board.Run) { r.Waiting = waiting }); err != nil {
			log.Warn().Err(err).Msg("notify: saving the inputs' links; nothing sent")
			return
		}
		for _, ev := range events {
			s.Send(ev)
		}
	case board.StatusFailed:
		base.Event = notify.EventFailed
		s.Send(base)
	default:
		base.Event = notify.EventEnded
		s.Send(base)
	}
	s.Wait(NotifyWait)
}
