package liveboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RemoteFile is written in the directory of a run that lives elsewhere
// (on Temporal workers) by the process that started it, before the run's
// blackboard.json exists: it says where the run is, so `runner board`
// and `runner answer` reach the live run, and, once the run has ended,
// where its board can be fetched from if no one saved it.
const RemoteFile = "remote.json"

// Remote is where a run lives. It holds addresses, never commands: a
// reader builds the command itself.
type Remote struct {
	Engine     string `json:"engine"` // "temporal"
	HostPort   string `json:"temporal"`
	Namespace  string `json:"namespace,omitempty"`
	TaskQueue  string `json:"task_queue,omitempty"`
	Blobs      string `json:"blobs,omitempty"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Board is the blackboard.json the run's board is saved to when it ends.
	Board string `json:"board"`
}

// WriteRemote writes r as RemoteFile beside r.Board, atomically.
func WriteRemote(r Remote) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(r.Board)
	tmp, err := os.CreateTemp(dir, ".remote-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, RemoteFile)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// FindRemote reads the Remote of the run whose blackboard.json is path
// (which need not exist yet) or whose directory is path. It returns nil,
// nil when the run is not remote.
func FindRemote(path string) (*Remote, error) {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		dir = path
	}
	data, err := os.ReadFile(filepath.Join(dir, RemoteFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r := &Remote{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, RemoteFile), err)
	}
	if r.Engine != "temporal" || r.HostPort == "" || r.WorkflowID == "" || r.Board == "" {
		return nil, fmt.Errorf("%s: not a run on Temporal this runner knows (engine %q)", filepath.Join(dir, RemoteFile), r.Engine)
	}
	return r, nil
}
