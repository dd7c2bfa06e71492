package web

import (
	"context"
	"fmt"
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
func (s *Server) events(w http.ResponseWriter, r *http.Request, follow func(ctx context.Context, ready, poke func())) {
	fl, ok := w.(http.Flusher)
	if !ok {
		s.refuse(w, r, http.StatusInternalServerError, "this connection cannot stream")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	changed := make(chan struct{}, 1)
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
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			fmt.Fprint(w, ": still here\n\n")
		case <-changed:
			n++
			fmt.Fprintf(w, "event: change\ndata: %d\n\n", n)
		}
		fl.Flush()
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
