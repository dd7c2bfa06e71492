package runs

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/view/boardview"
)

// own takes the lock of the run at path for a run or resume: no other
// process may run it at the same time. A CLI write holding the lock for a
// moment is waited for; a live run is refused, naming its process.
func own(path string) (*boardlock.Lock, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerRun})
		var owned *boardlock.OwnedError
		if err == nil || !errors.As(err, &owned) {
			return l, err
		}
		// A run whose process is gone lets go of the lock as its last
		// file is closed (a child between fork and exec may hold it a
		// moment longer): wait for that, as for a CLI write.
		if owned.Owner.Kind == boardlock.OwnerRun && processAlive(owned.Owner.PID) || time.Now().After(deadline) {
			msg := fmt.Sprintf("run %s is live: process %d owns it", path, owned.Owner.PID)
			if owned.Owner.Kind == boardlock.OwnerCLI {
				msg = fmt.Sprintf("run %s is busy: process %d (runner board) has held it for over 10s; try again when it is done", path, owned.Owner.PID)
			}
			if owned.Owner.PID == 0 {
				msg = fmt.Sprintf("run %s is in use by another process", path)
			}
			if owned.Owner.Socket != "" {
				msg += fmt.Sprintf(" and serves its board on %s (see `runner board %s watch`)", owned.Owner.Socket, path)
			}
			return nil, errors.New(msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serve shares the board of the run this process owns with other
// processes, and records the socket in the lock file. The returned stop
// ends the sharing; the lock itself is released by the caller. With the
// plan's board.markdown, it also keeps that file current. srv is nil
// when the board could not be served.
func serve(b *board.Board, lock *boardlock.Lock, p *plans.Plan, workdir string, warnings io.Writer) (stop func(), srv *liveboard.Server) {
	stopMD := func() error { return nil }
	if md := p.Board.Markdown; md != "" {
		if !filepath.IsAbs(md) {
			md = filepath.Join(workdir, md)
		}
		stopMD = boardview.KeepMarkdown(b, md, 200*time.Millisecond)
	}
	srv, err := liveboard.Serve(b)
	if err != nil {
		srv = nil
		// The run goes on; outside processes wait for it to end.
		warn(warnings, "warning: not serving the board to other processes: %v\n", err)
	} else {
		lock.SetOwner(boardlock.Owner{Kind: boardlock.OwnerRun, Socket: srv.Socket})
		srv.OnWrite(replay.RecordExternal(b)) // a replay makes outside writes again where they came
		var mu sync.Mutex                     // one answer at a time: check, then record
		srv.OnAnswer(func(a board.Answer) (liveboard.AnswerReply, error) {
			mu.Lock()
			defer mu.Unlock()
			return recordAnswer(b, a)
		})
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if srv != nil {
				lock.SetOwner(boardlock.Owner{Kind: boardlock.OwnerRun})
				srv.Close()
			}
			if err := stopMD(); err != nil {
				warn(warnings, "warning: board.markdown %s: %v\n", p.Board.Markdown, err)
			}
		})
	}, srv
}

// recordAnswer takes an answer to an input step of the run this process
// owns: an input in a parallel group that waits while its siblings still
// run. Checked and recorded as on the saved file; the run takes it when
// it is resumed (or, if the step has not asked yet, when it asks).
func recordAnswer(b *board.Board, a board.Answer) (liveboard.AnswerReply, error) {
	a, already, err := steps.Settle(b.Run(), b.Recordings(), a)
	if err != nil {
		return liveboard.AnswerReply{}, err
	}
	if !already {
		if err := b.AddRecording(steps.AnswerRecording(a)); err != nil {
			return liveboard.AnswerReply{}, err
		}
	}
	return liveboard.AnswerReply{Label: a.Label, Visit: a.Visit, Already: already}, nil
}
