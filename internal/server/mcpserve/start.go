package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/safefs"
)

// A run is started as a `runner run` process of its own, detached from
// the server (its own session, no terminal, no pipe to the server): it
// survives the server, which over stdio lives only as long as its client,
// and it writes its own run directory, journal and live board exactly as
// a run started in a shell does. Its output goes to a log beside its board
// (run-PID.log, resume-PID.log).

// StartInput is start_run's.
type StartInput struct {
	Plan    string            `json:"plan" jsonschema:"the plan file, relative to the server's directory"`
	Vars    map[string]string `json:"vars,omitempty" jsonschema:"plan vars to set, by name (runner run --var NAME=VALUE)"`
	Workdir string            `json:"workdir,omitempty" jsonschema:"the directory the steps run in, relative to the server's directory (default: that directory); the run is saved under WORKDIR/.runner/runs"`
}

// Started is a run started.
type Started struct {
	RunID      string `json:"run_id"`
	Blackboard string `json:"blackboard" jsonschema:"the run's blackboard.json"`
	PID        int    `json:"pid" jsonschema:"the process running it"`
	Log        string `json:"log" jsonschema:"where the run's process writes its log"`
}

// StartOutput is start_run's answer: the run, or the plan's problems.
type StartOutput struct {
	Started  *Started  `json:"started,omitempty"`
	Problems []Problem `json:"problems,omitempty" jsonschema:"what is wrong with the plan; nothing started"`
}

func (s *Server) startRun(ctx context.Context, req *mcp.CallToolRequest, in StartInput) (*mcp.CallToolResult, StartOutput, error) {
	if in.Plan == "" {
		return nil, StartOutput{}, errors.New("plan: give the plan file to run")
	}
	plan := s.dirPath(in.Plan)
	// Checked here first, so that a plan's problems come back with
	// line:col as validate_plan gives them, and nothing starts.
	if _, err := engine.Load(plan, steps.Registry()); err != nil {
		ps, perr := problems(err)
		if perr != nil {
			return nil, StartOutput{}, perr
		}
		res := &mcp.CallToolResult{IsError: true}
		var text strings.Builder
		fmt.Fprintf(&text, "the plan has %d problem(s); nothing started:\n", len(ps))
		for _, p := range ps {
			text.WriteString(p.Text + "\n")
		}
		res.Content = []mcp.Content{&mcp.TextContent{Text: text.String()}}
		return res, StartOutput{Problems: ps}, nil
	}
	args := []string{"run"}
	names := make([]string, 0, len(in.Vars))
	for k := range in.Vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if k == "" || strings.Contains(k, "=") {
			return nil, StartOutput{}, fmt.Errorf("vars: %q is no var name", k)
		}
		args = append(args, "--var", k+"="+in.Vars[k])
	}
	if in.Workdir != "" {
		args = append(args, "--workdir", s.dirPath(in.Workdir))
	}
	st, err := s.start(ctx, append(args, "--", plan))
	if err != nil {
		return nil, StartOutput{}, err
	}
	ss := sessionOf(req)
	s.tell(ctx, ss, "info", "run started", map[string]any{"run": st.RunID, "blackboard": st.Blackboard, "pid": st.PID})
	s.follow(ss, st.Blackboard)
	return nil, StartOutput{Started: &st}, nil
}

// sessionOf is the session a tool call came on; nil when a tool is
// called directly (a resource read reuses them).
func sessionOf(req *mcp.CallToolRequest) *mcp.ServerSession {
	if req == nil {
		return nil
	}
	return req.Session
}

// startWait is how long a run's process may take to say it started.
const startWait = 60 * time.Second

// start runs `runner ARGS...` detached, with its log in a file, and
// waits until it says which run it started ("run started", with the
// run's id and board), or until it ends without (its log says why).
func (s *Server) start(ctx context.Context, args []string) (Started, error) {
	bin := s.o.Runner
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return Started{}, fmt.Errorf("finding the runner binary to start the run with: %w", err)
		}
		bin = exe
	}
	logDir := filepath.Join(s.o.Dir, ".runner", "mcp")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return Started{}, err
	}
	logf, err := os.CreateTemp(logDir, "start-*.log")
	if err != nil {
		return Started{}, err
	}
	defer logf.Close()
	// JSON logs: the "run started" line is read back for the id.
	full := append([]string{"--log-format", "json"}, args...)
	cmd := exec.Command(bin, full...)
	cmd.Dir = s.o.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	detach(cmd)
	if err := cmd.Start(); err != nil {
		os.Remove(logf.Name())
		return Started{}, fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaped while the server lives
	s.o.Log.Info().Int("pid", cmd.Process.Pid).Strs("args", args).Msg("run process started")

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(startWait)
	defer deadline.Stop()
	var st Started
	found := false
	for {
		if !found {
			st, found = startedLine(logf.Name())
		}
		// The id is said just before the board is first written: the run
		// is there for the other tools once its file is and the process
		// holds it (a resumed run's file was there before).
		if found && boardThere(st.Blackboard) && ownedBy(st.Blackboard, cmd.Process.Pid) {
			st.PID, st.Log = cmd.Process.Pid, logf.Name()
			// The log goes with the run it belongs to.
			if dst := filepath.Join(filepath.Dir(st.Blackboard), fmt.Sprintf("%s-%d.log", args[0], cmd.Process.Pid)); safefs.Rename(logf.Name(), dst) == nil {
				st.Log = dst
			}
			return st, nil
		}
		select {
		case err := <-exited:
			if st, ok := startedLine(logf.Name()); ok && boardThere(st.Blackboard) { // a run that ended at once
				st.PID, st.Log = cmd.Process.Pid, logf.Name()
				if dst := filepath.Join(filepath.Dir(st.Blackboard), fmt.Sprintf("%s-%d.log", args[0], cmd.Process.Pid)); safefs.Rename(logf.Name(), dst) == nil {
					st.Log = dst
				}
				return st, nil
			}
			return Started{}, fmt.Errorf("runner %s did not start a run (%v): %s", strings.Join(args, " "), err, logTail(logf.Name()))
		case <-deadline.C:
			return Started{}, fmt.Errorf("runner %s has not said which run it started after %s (it goes on; its log is %s)", strings.Join(args, " "), startWait, logf.Name())
		case <-ctx.Done():
			return Started{}, fmt.Errorf("waiting for the run to start: %w (the process goes on; its log is %s)", ctx.Err(), logf.Name())
		case <-tick.C:
		}
	}
}

// ownedBy says whether process pid holds the run at path.
func ownedBy(path string, pid int) bool {
	o, err := boardlock.ReadOwner(path)
	return err == nil && o.PID == pid
}

// boardThere says whether a run's board file has been written.
func boardThere(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// startedLine finds the "run started" line in a run process's log.
func startedLine(path string) (Started, bool) {
	f, err := os.Open(path)
	if err != nil {
		return Started{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"run started"`)) {
			continue
		}
		var ev struct {
			Message    string `json:"message"`
			Run        string `json:"run"`
			Blackboard string `json:"blackboard"`
		}
		if json.Unmarshal(line, &ev) == nil && ev.Message == "run started" && ev.Run != "" {
			return Started{RunID: ev.Run, Blackboard: ev.Blackboard}, true
		}
	}
	return Started{}, false
}

// logTail is the end of a run process's log, its messages rather than
// its JSON, for an error.
func logTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev struct {
			Message string `json:"message"`
			Error   string `json:"error"`
		}
		switch {
		case json.Unmarshal([]byte(line), &ev) == nil && ev.Message != "":
			if ev.Error != "" {
				ev.Message += ": " + ev.Error
			}
			msgs = append(msgs, ev.Message)
		case strings.TrimSpace(line) != "":
			msgs = append(msgs, line)
		}
	}
	if len(msgs) > 20 {
		msgs = msgs[len(msgs)-20:]
	}
	if len(msgs) == 0 {
		return "it wrote nothing"
	}
	return strings.Join(msgs, "\n")
}
