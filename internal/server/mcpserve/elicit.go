package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/runs"
)

// A run started (or resumed) by a client that declared elicitation is
// followed for as long as that client is connected: each input the run
// comes to wait at is asked of the client as an elicitation, with the
// input's prompt and form, and an accepted answer is recorded as
// answer_input (and `runner answer`) records it, by runs.OpenQuestion;
// a run that stopped to wait is then resumed. A declined or cancelled
// elicitation leaves the input waiting, for answer_input or `runner
// answer`. An input that names answerers is never elicited: the server
// cannot say who answers (docs/mcp.md, "Who answers").

// elicits says whether the client of ss takes elicitations the server
// sends of its own accord: from protocol version 2026-07-28 on, a server
// may ask only within its answer to a request (multi round-trip
// requests), which a run's input, coming at any time, is not.
func elicits(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.ProtocolVersion < lastFreeElicitation
}

// lastFreeElicitation is the first protocol version without
// server-initiated requests.
const lastFreeElicitation = "2026-07-28"

// follow starts following the run at path for ss, when its client takes
// elicitations.
func (s *Server) follow(ss *mcp.ServerSession, path string) {
	if !elicits(ss) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := followKey{ss, path}
	if s.closed || s.following[key] {
		return // one follower per session and run: an input is asked once
	}
	if s.following == nil {
		s.following = map[followKey]bool{}
	}
	s.following[key] = true
	ctx, cancel := context.WithCancel(context.Background())
	s.follows.Add(2)
	go func() { // the follow ends with the session or the server
		defer s.follows.Done()
		defer cancel()
		gone := make(chan struct{})
		go func() { ss.Wait(); close(gone) }()
		select {
		case <-gone:
		case <-s.stopFollows:
		case <-ctx.Done():
		}
	}()
	go func() {
		defer s.follows.Done()
		defer cancel()
		defer func() {
			s.mu.Lock()
			delete(s.following, key)
			s.mu.Unlock()
		}()
		f := &follower{s: s, ss: ss, path: path, asked: map[string]bool{}, answered: map[string]bool{}}
		f.run(ctx)
	}()
}

type followKey struct {
	ss   *mcp.ServerSession
	path string
}

type follower struct {
	s    *Server
	ss   *mcp.ServerSession
	path string
	// asked are the inputs (label#visit) asked of the client already;
	// answered, those it answered, for the resume.
	asked, answered map[string]bool
}

func inputKey(w board.WaitingInput) string { return fmt.Sprintf("%s#%d", w.Label, w.Visit) }

// run looks at the run each time its files change, until it ends.
func (f *follower) run(ctx context.Context) {
	files := []string{f.path, board.JournalPath(f.path), liveboard.RemotePath(f.path)}
	last := ""
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		if now := fingerprint(files); now != last {
			last = now
			if !f.look(ctx) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// look asks the inputs the run waits at that were not asked yet, and
// resumes the run once it has stopped with all of them answered; false
// when there is nothing more to follow.
func (f *follower) look(ctx context.Context) bool {
	sum := runs.SummaryOf(f.path, f.s.o.Dir)
	if sum.Error != "" {
		return false
	}
	switch sum.Status {
	case board.StatusSucceeded, board.StatusFailed, board.StatusInterrupted:
		return sum.Live // a run on its way out is looked at once more
	}
	var b *board.Board
	if err := f.s.onBoard(f.path, true, func(a liveboard.Access) (err error) {
		b, err = a.Board()
		return err
	}); err != nil {
		return true // a run between two processes: looked at again
	}
	waiting := b.Run().Waiting
	for _, w := range waiting {
		if f.asked[inputKey(w)] || len(w.Answerers) > 0 {
			continue
		}
		f.asked[inputKey(w)] = true
		if !f.ask(ctx, w) {
			return ctx.Err() == nil
		}
	}
	if sum.Status != board.StatusWaiting || sum.Live || len(waiting) == 0 {
		return true
	}
	for _, w := range waiting {
		if !f.answered[inputKey(w)] {
			return true // waits for an answer of another's
		}
	}
	st, err := f.s.start(ctx, []string{"resume", f.path})
	if err != nil {
		f.s.o.Log.Warn().Err(err).Str("run", sum.ID).Msg("resuming a run after an elicited answer")
		f.s.tell(ctx, f.ss, "error", "the answer was recorded, but resuming the run failed: "+err.Error(), map[string]any{"run": sum.ID})
		return false
	}
	f.s.tell(ctx, f.ss, "info", "run resumed", map[string]any{"run": st.RunID, "pid": st.PID})
	return true
}

// ask elicits one input's answer and records it; false when the client is
// gone.
func (f *follower) ask(ctx context.Context, w board.WaitingInput) bool {
	schema := json.RawMessage(`{"type":"object","properties":{}}`)
	if len(w.Form) > 0 {
		schema = w.Form
	}
	run := runs.SummaryOf(f.path, f.s.o.Dir).ID
	res, err := f.ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: w.Prompt, RequestedSchema: schema})
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		f.s.o.Log.Warn().Err(err).Str("run", run).Str("step", w.Label).Msg("eliciting an input's answer")
		f.s.tell(ctx, f.ss, "warning", "asking the input failed ("+err.Error()+"); answer it with answer_input", map[string]any{"run": run, "step": w.Label, "visit": w.Visit})
		return true
	}
	if res.Action != "accept" {
		f.s.tell(ctx, f.ss, "info", "the input was not answered ("+res.Action+"); it waits for answer_input", map[string]any{"run": run, "step": w.Label, "visit": w.Visit})
		return true
	}
	content := res.Content
	if content == nil {
		content = map[string]any{}
	}
	q, err := runs.OpenQuestion(f.path, w.Label, w.Visit, f.s.o.Mask, nil)
	if err == nil {
		_, err = q.Answer(content, "mcp")
		q.Close()
	}
	if err != nil {
		f.s.tell(ctx, f.ss, "error", "the answer was refused: "+err.Error()+"; answer it with answer_input", map[string]any{"run": run, "step": w.Label, "visit": w.Visit})
		return true
	}
	f.answered[inputKey(w)] = true
	f.s.o.Log.Info().Str("run", run).Str("step", w.Label).Int("visit", w.Visit).Msg("input answered by elicitation")
	f.s.tell(ctx, f.ss, "info", "input answered", map[string]any{"run": run, "step": w.Label, "visit": w.Visit})
	return true
}
