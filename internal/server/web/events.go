package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/runs"
)

// events streams "change" events to one page (server-sent events) each
// time follow pokes, at most one per Throttle: the page then fetches
// itself again. Once follow is ready (it will hear of every change from
// then on), one event is sent, so a page catches up with what changed
// between its making and its stream.
//
// A client that stops reading costs a bounded amount: what waits for it
// is one pending change (pokes while it waits merge into it, so nothing
// grows) and what its connection queues (streamQueue), and each write must be taken by its connection within
// StreamWriteTimeout, else the stream ends, its watcher with it, and the
// log says which client was dropped and why. The page's script opens
// the stream again if it is still there.
func (s *Server) events(w http.ResponseWriter, r *http.Request, follow func(ctx context.Context, ready, poke func())) {
	rc := http.NewResponseController(w)
	if c, ok := r.Context().Value(connKey{}).(interface{ SetWriteBuffer(int) error }); ok {
		c.SetWriteBuffer(streamQueue)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// send writes and flushes one message within the stream's bound.
	send := func(msg string) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(s.opt.StreamWriteTimeout)); err != nil {
			s.opt.Log.Warn().Err(err).Str("client", r.RemoteAddr).Str("stream", r.URL.Path).Msg("this connection cannot bound its writes: the stream is refused")
			return false
		}
		_, err := io.WriteString(w, msg)
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			// A write that fails cancels the request's context, so the
			// error says why: a client that read nothing, or one gone.
			if errors.Is(err, os.ErrDeadlineExceeded) {
				s.opt.Log.Warn().Str("client", r.RemoteAddr).Str("stream", r.URL.Path).Err(err).
					Msgf("dropped an event stream: the client took nothing of it within %s (serve's --stream-write-timeout)", s.opt.StreamWriteTimeout)
			} else {
				s.opt.Log.Debug().Str("client", r.RemoteAddr).Str("stream", r.URL.Path).Err(err).Msg("an event stream's client is gone")
			}
			return false
		}
		rc.SetWriteDeadline(time.Time{})
		return true
	}
	w.WriteHeader(http.StatusOK)
	if !send("") {
		return
	}
	changed := make(chan struct{}, 1) // the one pending change: pokes merge
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	go follow(ctx, poke, poke)
	beat := time.NewTicker(25 * time.Second) // keeps proxies from closing an idle stream
	defer beat.Stop()
	n := 0
	for {
		msg := ""
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			msg = ": still here\n\n"
		case <-changed:
			n++
			msg = fmt.Sprintf("event: change\ndata: %d\n\n", n)
		}
		if !send(msg) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.opt.Throttle):
		}
	}
}

// runEvents follows one run for one page.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	path := s.runPath(r)
	if path == "" {
		s.refuse(w, r, http.StatusNotFound, "no run "+r.PathValue("id"))
		return
	}
	after := int64(-1)
	if n, err := strconv.ParseInt(r.URL.Query().Get("seq"), 10, 64); err == nil && n >= 0 {
		after = n
	}
	s.events(w, r, func(ctx context.Context, ready, poke func()) { s.followRun(ctx, path, after, ready, poke) })
}

// followRun pokes each time the run at path changes, until ctx ends,
// calling ready once it follows (after: the board's length the page
// shows, -1 for unknown). A
// run on Temporal that still runs is followed through its live board's
// watch stream (a bridge); once it has ended, and for every run of this
// machine, through its directory: the journal grows a line per change,
// the lock file names a new owner, the file is saved.
func (s *Server) followRun(ctx context.Context, path string, after int64, ready, poke func()) {
	var once sync.Once
	readyOnce := func() { once.Do(ready) }
	defer readyOnce()
	if rem, err := liveboard.FindRemote(path); err == nil && rem != nil && !exists(rem.Board) {
		if b, _, err := runs.OpenRemote(path, s.opt.Stderr); err == nil && b != nil {
			// From the page's entry on: what came since it was made is
			// streamed at once.
			readyOnce()
			err := b.Watch(ctx, liveboard.Filter{After: after}, func(liveboard.Change) error { poke(); return nil })
			b.Close()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.opt.Log.Warn().Err(err).Str("run", path).Msg("following the run on Temporal")
			}
			poke() // it ended (or the bridge did): its board is saved now
		}
		path = rem.Board
	}
	dir := filepath.Dir(path)
	if err := watchDirs(ctx, []string{dir}, readyOnce, func(string, bool) bool { poke(); return false }); err != nil && ctx.Err() == nil {
		s.opt.Log.Warn().Err(err).Str("dir", dir).Msg("following a run")
	}
}

// listEvents follows the runs directory for the list page: a new run
// directory is watched as it appears (and .runner/runs itself, when the
// first run makes it).
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	s.events(w, r, func(ctx context.Context, ready, poke func()) {
		top, _ := filepath.Abs(s.opt.Dir)
		dot := filepath.Join(top, ".runner")
		root := runs.RunsDir(top)
		dirs := []string{top}
		for _, d := range []string{dot, root} {
			if exists(d) {
				dirs = append(dirs, d)
			}
		}
		if ents, err := os.ReadDir(root); err == nil {
			for _, e := range ents {
				if e.IsDir() {
					dirs = append(dirs, filepath.Join(root, e.Name()))
				}
			}
		}
		err := watchDirs(ctx, dirs, ready, func(p string, newDir bool) bool {
			parent := filepath.Dir(p)
			mine := p == dot || p == root || parent == root || filepath.Dir(parent) == root
			if mine {
				poke()
			}
			return newDir && (p == dot || p == root || parent == root)
		})
		if err != nil && ctx.Err() == nil {
			s.opt.Log.Warn().Err(err).Msg("following the runs")
		}
	})
}
