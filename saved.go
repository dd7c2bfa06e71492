package runner

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
)

// Blackboard is a run's record, as saved in its blackboard.json: how it
// ended, the steps it ran, and the entries its steps and agents wrote.
// It is read-only.
type Blackboard struct {
	b   *board.Board
	err error // how the run ended, as the engine said; nil: from the file
}

// Open reads a saved run, as `runner board`, `runner report` and `runner
// replay` take it: path is its blackboard.json, its run directory, or a
// run id (or a unique prefix, or "latest") among the runs under the
// current directory. A run still running reads as far as it has got.
func Open(path string) (*Blackboard, error) {
	path, err := runs.Resolve(path, ".")
	if err != nil {
		return nil, err
	}
	b, err := board.LoadForRead(path)
	if err != nil {
		return nil, err
	}
	return &Blackboard{b: b}, nil
}

// Path is the file the blackboard is saved in ("" for none).
func (bb *Blackboard) Path() string { return bb.b.Path() }

// ID is the run's id.
func (bb *Blackboard) ID() string { return bb.b.Run().ID }

// Status is how the run stands: running, succeeded, failed, interrupted,
// or waiting (for a person's answer to an input step).
func (bb *Blackboard) Status() string { return bb.b.Run().Status }

// Err is nil when the run succeeded or still runs, else how it ended
// (the step that failed and why, an interruption, a wait).
func (bb *Blackboard) Err() error {
	if bb.err != nil {
		return bb.err
	}
	run := bb.b.Run()
	switch {
	case run.Status == board.StatusSucceeded || run.Status == board.StatusRunning:
		return nil
	case run.Error != "":
		return errors.New(run.Error)
	}
	return errors.New("run " + run.Status)
}

// StepRecord is one visit of a step: how it went and what it returned.
type StepRecord struct {
	Label  string
	Visit  int    // 1 the first time the step ran, 2 when a loop came back...
	Type   string // the step's type: command, llm, ...
	Status string // succeeded, failed, skipped...
	// Output is steps.<label>.output: text, or a JSON value (an llm step
	// with output: json).
	Output any
	// Result is the step's result as saved: its output and its type's
	// result fields, a JSON object.
	Result   json.RawMessage
	Error    string
	Started  time.Time
	Finished time.Time
}

// Steps lists the step visits in the order they finished.
func (bb *Blackboard) Steps() []StepRecord {
	recs := bb.b.Steps()
	out := make([]StepRecord, len(recs))
	for i, r := range recs {
		var res struct{ Output any }
		json.Unmarshal(r.Result, &res) // a step that did not run has no result
		out[i] = StepRecord{Label: r.Label, Visit: r.Visit, Type: r.Type, Status: r.Status, Output: res.Output,
			Result: r.Result, Error: r.Error, Started: r.StartedAt, Finished: r.FinishedAt}
	}
	return out
}

// Get is the value of key on the board (what board('KEY') reads in a
// plan); false when the key was never written, was deleted or expired.
func (bb *Blackboard) Get(key string) (any, bool) {
	e, ok := bb.b.Get(key)
	return e.Content, ok
}

// Entry is one write on the board: a key's new value, or a note in a
// section (what an agent posted, a conflict...).
type Entry struct {
	Seq     int64  // its place on the board, from 1
	Section string // kv for a key's value
	Key     string // "" for an entry that is no key's value
	Author  string // the agent or the step that wrote it
	Label   string // the step that wrote it
	Content any
	Deleted bool // the key's deletion
	Time    time.Time
}

// Entries lists every entry on the board, oldest first.
func (bb *Blackboard) Entries() []Entry {
	es := bb.b.Entries()
	out := make([]Entry, len(es))
	for i, e := range es {
		out[i] = Entry{Seq: e.Seq, Section: e.Section, Key: e.Key, Author: e.Author, Label: e.Label,
			Content: e.Content, Deleted: e.Deleted, Time: e.TS}
	}
	return out
}
