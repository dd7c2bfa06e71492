package runs

import (
	"os"
	"path/filepath"
	"time"

	"github.com/planrunner/runner/agents"
	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/liveboard"
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

func summarize(dir, id string) Summary {
	path := filepath.Join(RunsDir(dir), id, "blackboard.json")
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
	s.Plan = run.PlanPath
	abs, _ := filepath.Abs(dir)
	if rel, err := filepath.Rel(abs, run.PlanPath); err == nil && filepath.IsLocal(rel) {
		s.Plan = rel
	}
	s.Status, s.StartedAt, s.EndedAt = run.Status, run.StartedAt, run.FinishedAt
	if s.Status == board.StatusRunning {
		if liveOwner(path) {
			s.Live = true
		} else {
			s.Status = board.StatusInterrupted
		}
	}
	for _, st := range b.Steps() {
		s.Steps++
		if st.Status == board.StatusFailed {
			s.Failed++
		}
	}
	s.Usage = agents.RecordedUsage(b.Recordings())
	return s
}

// liveOwner says whether a run's process holds the run at path now.
func liveOwner(path string) bool {
	o, err := board.ReadOwner(path)
	if err != nil || o.Kind != board.OwnerRun || o.PID == os.Getpid() {
		return false
	}
	return o.PID > 0 && processAlive(o.PID)
}
