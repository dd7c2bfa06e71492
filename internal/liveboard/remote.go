package liveboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/planrunner/runner/internal/sys/readlimit"
	"github.com/planrunner/runner/internal/sys/safefs"
)

// RemotePath is the file written beside the blackboard.json of a run that
// lives elsewhere (on Temporal workers) by the process that started it,
// before the blackboard.json exists: it says where the run is, so `runner
// board` and `runner answer` reach the live run, and, once the run has
// ended, where its board can be fetched from if no one saved it.
func RemotePath(board string) string { return board + ".remote" }

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
	// Security is how the cluster was reached (TLS files, never a key).
	Security Security `json:"security,omitzero"`
}

// WriteRemote writes r at RemotePath(r.Board), atomically.
func WriteRemote(r Remote) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return safefs.WriteFileBytes(RemotePath(r.Board), append(data, '\n'), 0o600)
}

// FindRemote reads the Remote of the run whose blackboard.json is path
// (which need not exist yet), or whose run directory is path. It returns
// nil, nil when the run is not remote.
func FindRemote(path string) (*Remote, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "blackboard.json")
	}
	rp := RemotePath(path)
	data, err := readlimit.Regular(rp, readlimit.Small)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r := &Remote{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%s: %w", rp, err)
	}
	if r.Engine != "temporal" || r.HostPort == "" || r.WorkflowID == "" || r.Board == "" {
		return nil, fmt.Errorf("%s: not a run on Temporal this runner knows (engine %q)", rp, r.Engine)
	}
	return r, nil
}
