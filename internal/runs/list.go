package runs

import (
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/liveboard"
)

// Summary is one saved run as `runner runs` lists it.
type Summary struct {
	ID   string `json:"id"`
	Path string `json:"path"` // its blackboard.json
	Plan string `json:"plan"` // the plan file, relative to the listed directory where it is inside it
	// Status is the run's: running, waiting, succeeded, failed or
	// interrupted. A run whose file says running but whose process is gone
	// (killed) is interrupted: `runner resume` continues it.
	Status    string          `json:"status"`
	Live      bool            `json:"live"` // its process (or Temporal workflow) runs it now
	Engine    string          `json:"engine,omitempty"`
	StartedAt time.Time       `json:"started_at"`
	EndedAt   *time.Time      `json:"finished_at,omitempty"`
	Steps     int             `json:"steps"` // step visits recorded so far
	Failed    int             `json:"failed_steps"`
	Usage     agents.RunUsage `json:"usage"`
	// Hosts are the hosts its steps ran on (their records' `host`), in
	// the order the run first used each: a run on Temporal's.
	Hosts []string `json:"hosts,omitempty"`
	// Error says why the run could not be read (a damaged file); the rest
	// is then what its directory name says.
	Error string `json:"error,omitempty"`
}

// List reads the runs saved under dir (RunsDir(dir)), oldest first. A run
// that cannot be read is listed with its error, not dropped.
func List(dir string) ([]Summary, error) {
	ids, err := runIDs(dir)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(ids))
	for _, id := range ids {
		out = append(out, summarize(dir, id))
	}
	return out, nil
}

// SummaryOf is the summary of the run whose blackboard.json is at path,
// as List gives it, wherever the run is saved; its plan is shown relative
// to dir where it is inside it. Its id is the run's own, else the name of
// its directory.
func SummaryOf(path, dir string) Summary {
	return summarizePath(path, filepath.Base(filepath.Dir(path)), dir, true)
}

func summarize(dir, id string) Summary {
	return summarizePath(filepath.Join(RunsDir(dir), id, "blackboard.json"), id, dir, false)
}

// summarizePath summarizes the run at path; ownID takes its id from the
// file rather than its directory's name (a run saved elsewhere, --out).
func summarizePath(path, id, dir string, ownID bool) Summary {
	s := Summary{ID: id, Path: path}
	if t, ok := board.IDTime(id); ok {
		s.StartedAt = t
	}
	if !exists(path) {
		// A run on Temporal saves its file when it ends; until then its
		// directory holds where the workflow is.
		rem, err := liveboard.FindRemote(path)
		switch {
		case err != nil:
			s.Status, s.Error = "unknown", err.Error()
		case rem != nil:
			s.Status, s.Live, s.Engine = board.StatusRunning, true, "temporal"
		}
		return s
	}
	b, err := board.Load(path)
	if err != nil {
		s.Status, s.Error = "unknown", err.Error()
		return s
	}
	run := b.Run()
	if ownID && run.ID != "" {
		s.ID = run.ID
	}
	s.Plan = run.PlanPath
	abs, _ := filepath.Abs(dir)
	if rel, err := filepath.Rel(abs, run.PlanPath); err == nil && filepath.IsLocal(rel) {
		s.Plan = rel
	}
	s.Status, s.StartedAt, s.EndedAt = run.Status, run.StartedAt, run.FinishedAt
	switch {
	case s.Status == board.StatusRunning:
		if liveOwner(path) {
			s.Live = true
		} else {
			s.Status = board.StatusInterrupted
		}
	case run.FinishedAt != nil && resumedNow(path, *run.FinishedAt):
		// A resume runs it: its file still says how it last stopped
		// (waiting, failed, interrupted) until the resume ends.
		s.Status, s.Live = board.StatusRunning, true
	}
	for _, st := range b.Steps() {
		s.Steps++
		if st.Status == board.StatusFailed {
			s.Failed++
		}
		if st.Host != "" && !slices.Contains(s.Hosts, st.Host) {
			s.Hosts = append(s.Hosts, st.Host)
		}
	}
	s.Usage = agents.RecordedUsage(b.RecordingsKeyed())
	return s
}

// resumedNow says whether a run's process (a resume) took the run at
// path after it last stopped, at stopped, and holds it now.
func resumedNow(path string, stopped time.Time) bool {
	o, err := boardlock.ReadOwner(path)
	return err == nil && o.Since.After(stopped) && liveOwner(path)
}

// liveOwner says whether a run's process holds the run at path now.
func liveOwner(path string) bool {
	o, err := boardlock.ReadOwner(path)
	if err != nil || o.Kind != boardlock.OwnerRun || o.PID == os.Getpid() {
		return false
	}
	return o.PID > 0 && processAlive(o.PID)
}
