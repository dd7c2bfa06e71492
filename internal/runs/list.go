package runs

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/liveboard"
)

// Summary is one saved run as `runner runs` lists it.
type Summary struct {
	ID   string `json:"id"`
	Path string `json:"path"`           // its blackboard.json
	Plan string `json:"plan"`           // the plan file, relative to the listed directory where it is inside it
	Name string `json:"name,omitempty"` // the plan's name:
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
	// Batches are the provider batches the run waits on (an llm step
	// with batch: true): such a run, live or stopped before the batch
	// ended, is listed waiting; `runner resume` takes the batch up.
	Batches []board.WaitingBatch `json:"batches,omitempty"`
	// Error says why the run could not be read (a damaged file); the rest
	// is then what its directory name says.
	Error string `json:"error,omitempty"`
}

// List reads the runs saved under dir (RunsDir(dir)), oldest first. A run
// that cannot be read is listed with its error, not dropped.
func List(dir string) ([]Summary, error) {
	list, _, err := Find(dir, Query{})
	return list, err
}

// Query says which saved runs Find lists, and in which order.
type Query struct {
	// Status keeps the runs with this status ("": any).
	Status string
	// Plan keeps the runs of plans whose path or name contains it.
	Plan string
	// NewestFirst lists the newest run first (else the oldest).
	NewestFirst bool
	// After is a cursor: the id of the last run of the page before, so
	// the listing starts with the run that comes after it in its order.
	After string
	// Limit is the most runs listed (0: all).
	Limit int
	// Since keeps the runs started at or after it (zero: all). A run
	// the index says started before it is not read at all: its start
	// never changes, whatever else about it has.
	Since time.Time
}

func (q Query) match(s Summary) bool {
	return (q.Since.IsZero() || !s.StartedAt.Before(q.Since)) &&
		(q.Status == "" || s.Status == q.Status) &&
		(q.Plan == "" || strings.Contains(s.Plan, q.Plan) || strings.Contains(s.Name, q.Plan))
}

// Find lists the runs saved under dir that q asks for, and whether more
// follow (the next page starts After the last one listed). It reads the
// run index (IndexPath) and loads only the runs whose entry is missing or
// does not match the run's files; it stops at the end of the page, so a
// page costs what it shows and the runs skipped to fill it, not the runs
// saved.
func Find(dir string, q Query) (list []Summary, more bool, err error) {
	var ix *index
	read := make(chan struct{})
	go func() { // beside the listing of the runs directory, as long
		ix = readIndex(IndexPath(dir))
		close(read)
	}()
	ids, err := runDirs(dir)
	<-read
	if err != nil {
		return nil, false, err
	}
	defer ix.save(ids)
	defer ix.listing(dir)()
	todo := ids
	if q.After != "" {
		i := sort.SearchStrings(ids, q.After)
		switch {
		case q.NewestFirst:
			todo = ids[:i]
		case i < len(ids) && ids[i] == q.After:
			todo = ids[i+1:]
		default:
			todo = ids[i:]
		}
	}
	if !q.Since.IsZero() {
		keep := make([]string, 0, len(todo))
		for _, id := range todo {
			if e, ok := ix.entry(id); ok && e.Start != 0 && e.Start < q.Since.UnixNano() {
				continue
			}
			keep = append(keep, id)
		}
		todo = keep
	}
	if q.NewestFirst {
		todo = slices.Clone(todo)
		slices.Reverse(todo)
	}
	// The runs are summarized a chunk at a time, the chunk's stats and
	// reads spread over the CPUs; a page stops at its last chunk.
	chunk := max(64, 2*q.Limit)
	list = make([]Summary, 0, q.Limit)
	if q.Limit == 0 {
		// All at once: the summaries are the list, those left out taken
		// away in place.
		list = ix.summaries(dir, todo)
		n := 0
		for i := range list {
			if list[i].ID != "" && q.match(list[i]) {
				list[n] = list[i]
				n++
			}
		}
		clear(list[n:])
		return list[:n], false, nil
	}
	for len(todo) > 0 {
		n := min(chunk, len(todo))
		sums := ix.summaries(dir, todo[:n])
		todo = todo[n:]
		for _, s := range sums {
			if s.ID == "" || !q.match(s) {
				continue
			}
			if len(list) == q.Limit {
				return list, true, nil
			}
			list = append(list, s)
		}
	}
	return list, false, nil
}

// SummaryOf is the summary of the run whose blackboard.json is at path,
// as List gives it, wherever the run is saved; its plan is shown relative
// to dir where it is inside it. Its id is the run's own, else the name of
// its directory.
func SummaryOf(path, dir string) Summary {
	s := summarizeAbs(path, filepath.Base(filepath.Dir(path)), true)
	s.Plan = relPlan(dir, s.Plan)
	return s
}

func summarize(dir, id string) Summary {
	s := summarizeAbs(filepath.Join(RunsDir(dir), id, "blackboard.json"), id, false)
	s.Plan = relPlan(dir, s.Plan)
	return s
}

// relPlan is the plan path shown for a run listed under dir: relative to
// dir where it is inside it.
func relPlan(dir, plan string) string {
	if plan == "" {
		return plan
	}
	abs, _ := filepath.Abs(dir)
	return relPlanAbs(abs, plan)
}

// relPlanAbs is relPlan for a directory already made absolute.
func relPlanAbs(abs, plan string) string {
	if plan == "" {
		return plan
	}
	if rel, err := filepath.Rel(abs, plan); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return plan
}

// afterSummaryRead, set by tests, runs once summarizeAbs has read a
// run's file: where a run that ends in the meantime is seen.
var afterSummaryRead func(path string)

// summarizeAbs summarizes the run at path, its plan's path as saved;
// ownID takes its id from the file rather than its directory's name (a
// run saved elsewhere, --out).
func summarizeAbs(path, id string, ownID bool) Summary {
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
	if afterSummaryRead != nil {
		afterSummaryRead(path)
	}
	if run := b.Run(); ownID && run.ID != "" {
		s.ID = run.ID
	}
	summarizeBoard(&s, b)
	switch run := b.Run(); {
	case s.Status == board.StatusRunning:
		if liveOwner(path) {
			s.Live = true
			break
		}
		// Its owner was gone when asked. It may have ended after the file
		// was read: read it again, which says how it ended if it did. A
		// file that still says running has no owner left to change it.
		if again, err := board.Load(path); err == nil && again.Run().Status != board.StatusRunning {
			b = again
			summarizeBoard(&s, b)
			break
		}
		s.Status = board.StatusInterrupted
	case run.FinishedAt != nil && resumedNow(path, *run.FinishedAt):
		// A resume runs it: its file still says how it last stopped
		// (waiting, failed, interrupted) until the resume ends.
		s.Status, s.Live = board.StatusRunning, true
	}
	if run := b.Run(); len(run.Batches) > 0 && (s.Status == board.StatusRunning || s.Status == board.StatusInterrupted) {
		s.Status, s.Batches = board.StatusWaiting, run.Batches
	}
	return s
}

// summarizeBoard fills s from the run's board as saved.
func summarizeBoard(s *Summary, b *board.Board) {
	run := b.Run()
	s.Plan, s.Name = run.PlanPath, planName(run.PlanSource)
	s.Status, s.StartedAt, s.EndedAt = run.Status, run.StartedAt, run.FinishedAt
	s.Steps, s.Failed, s.Hosts = 0, 0, nil
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
}

// planName is the `name:` of a plan's source, "" when it has none or does
// not read.
func planName(src string) string {
	var p struct {
		Name string `yaml:"name"`
	}
	if yaml.Unmarshal([]byte(src), &p) != nil {
		return ""
	}
	return p.Name
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
