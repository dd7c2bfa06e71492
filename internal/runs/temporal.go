package runs

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/sys/boot"
)

// Running on Temporal lives in the nested module ./temporal, built as the
// runner-temporal binary, so that this module never compiles the Temporal
// SDK. This file is the client side both binaries share: finding
// runner-temporal, the events `runner-temporal run --events` prints, and
// reaching a run on Temporal through `runner-temporal bridge`.

// TemporalBinaryName is the name of the binary that runs plans on Temporal.
const TemporalBinaryName = "runner-temporal"

// TemporalBinary finds runner-temporal: $RUNNER_TEMPORAL, next to this
// executable, then on PATH.
func TemporalBinary() (string, error) {
	if p := os.Getenv("RUNNER_TEMPORAL"); p != "" {
		return p, nil
	}
	self, err := os.Executable()
	if err == nil {
		p := filepath.Join(filepath.Dir(self), TemporalBinaryName)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(TemporalBinaryName); err == nil {
		return p, nil
	}
	dir := "DIR"
	if self != "" {
		dir = filepath.Dir(self)
	}
	return "", fmt.Errorf("running on Temporal needs the %s binary, built apart so that runner stays free of the Temporal SDK; "+
		"it is not next to this runner nor on PATH. Install it beside runner with\n"+
		"  GOBIN=%s go install github.com/planrunner/runner/temporal/cmd/%s@latest\nor set RUNNER_TEMPORAL to its path", TemporalBinaryName, dir, TemporalBinaryName)
}

// Event is one line of `runner-temporal run --events`: one of its
// fields is set. runner shows them with the same display as a run in its
// own process.
type Event struct {
	Begin    *EventBegin         `json:"begin,omitempty"`
	Started  *EventStarted       `json:"started,omitempty"`
	Finished *board.StepRecord   `json:"finished,omitempty"`
	Waiting  *board.WaitingInput `json:"waiting,omitempty"`
	Board    string              `json:"board,omitempty"` // with Waiting: the run's blackboard.json
	End      *EventEnd           `json:"end,omitempty"`
}

// EventBegin is the first event: the run started as a workflow.
type EventBegin struct {
	RunID    string `json:"run_id"`
	Workflow string `json:"workflow"`
	Board    string `json:"board"`
}

// EventStarted is a step visit that started.
type EventStarted struct {
	Label  string `json:"label"`
	Visit  int    `json:"visit"`
	Parent string `json:"parent,omitempty"`
}

// EventEnd is the last event: how the run ended, and where its board is.
type EventEnd struct {
	RunID    string `json:"run_id"`
	Status   string `json:"status"`
	Error    string `json:"error,omitempty"`
	Board    string `json:"board"`
	Parts    int    `json:"parts"`
	Workflow string `json:"workflow"`
}

// Temporal says where a run goes on Temporal (runner run --engine
// temporal's flags); "" and 0 leave runner-temporal's defaults.
type Temporal struct {
	Binary string // runner-temporal; "": TemporalBinary()
	// Conn reaches Temporal and the store workers share (the flags
	// runner-temporal takes to dial, defined once in package boot).
	Conn             boot.Conn
	HeartbeatTimeout time.Duration
	MaxHistoryEvents int
	LocalStepsUnder  time.Duration // command steps with a timeout at most this run as local activities
	// SharedWorkspace: every worker sees the workdir and the plan at
	// these paths, so the plan's directory does not travel with the run;
	// SyncBack is where the run's final workdir files are written;
	// HostTimeout re-pins a run whose host stopped taking its steps.
	SharedWorkspace bool
	SyncBack        string
	HostTimeout     time.Duration
	// KeepFanOuts keeps a for_each's items and a parallel group's
	// children on the run's host instead of spreading them over the pool
	// (--spread-fanouts=false).
	KeepFanOuts bool
	// OTLPEndpoint is --otlp-endpoint: runner-temporal exports the run's
	// trace there when it ends (the OTEL_* variables reach it through
	// the environment), as runner does for a run in its own process.
	OTLPEndpoint string
}

// ExecuteOnTemporal runs r on Temporal workers through runner-temporal
// instead of in this process, with the options r was set up with. runner-temporal sets the run up again from them, under
// its own run id (in the Begin event). on and the result are as for
// RunOnTemporal.
func (r *Run) ExecuteOnTemporal(t Temporal, stderr io.Writer, on func(Event)) (*EventEnd, error) {
	if r.resume {
		return nil, usage(errors.New("a run on Temporal is durable: it is not resumed"))
	}
	if len(r.Prog.Plan.Budgets.Limits) > 0 {
		return nil, usage(errors.New(plans.BudgetsOnTemporal))
	}
	if r.opts.Offline {
		return nil, usage(errors.New("--offline is not available with --engine temporal (a replay runs nothing: use it without --engine)"))
	}
	args := t.Conn.Args()
	if t.OTLPEndpoint != "" {
		args = append(args, "--otlp-endpoint", t.OTLPEndpoint)
	}
	if t.HeartbeatTimeout > 0 {
		args = append(args, "--heartbeat-timeout", t.HeartbeatTimeout.String())
	}
	if t.MaxHistoryEvents > 0 {
		args = append(args, "--max-history-events", strconv.Itoa(t.MaxHistoryEvents))
	}
	if t.LocalStepsUnder > 0 {
		args = append(args, "--local-steps-under", t.LocalStepsUnder.String())
	}
	if t.SharedWorkspace {
		args = append(args, "--shared-workspace")
	}
	if t.SyncBack != "" {
		abs, err := filepath.Abs(t.SyncBack)
		if err != nil {
			return nil, usage(err)
		}
		args = append(args, "--sync-back", abs)
	}
	if t.HostTimeout > 0 {
		args = append(args, "--host-timeout", t.HostTimeout.String())
	}
	if t.KeepFanOuts {
		args = append(args, "--spread-fanouts=false")
	}
	args = append(args, "--workdir", r.Record.Workdir)
	for _, p := range r.opts.Reuse {
		args = append(args, "--reuse", p)
	}
	for _, a := range r.opts.Agents.Args() {
		args = append(args, "--agent", a)
	}
	for k, v := range r.opts.Vars {
		args = append(args, "--var", k+"="+v)
	}
	if r.opts.Board != "" {
		args = append(args, "--out", r.opts.Board)
	}
	bin := t.Binary
	if bin == "" {
		var err error
		if bin, err = TemporalBinary(); err != nil {
			return nil, usage(err)
		}
	}
	return RunOnTemporal(bin, r.opts.Plan, args, stderr, on)
}

// RunOnTemporal runs a plan through runner-temporal at bin: args are what
// follows `run PLAN --events`. on is called with each event as it comes;
// what runner-temporal writes to its stderr goes to stderr. It returns
// the end event, or an error when the run did not end with one (an
// *exec.ExitError carries runner-temporal's exit code; a UsageError, that
// it did not start).
func RunOnTemporal(bin, plan string, args []string, stderr io.Writer, on func(Event)) (*EventEnd, error) {
	cmd := exec.Command(bin, append([]string{"run", plan, "--events"}, args...)...)
	cmd.Stderr = stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, usage(fmt.Errorf("starting %s: %w", bin, err))
	}
	var end *EventEnd
	sc := bufio.NewScanner(events)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.End != nil {
			end = ev.End
		}
		on(ev)
	}
	werr := cmd.Wait()
	if end == nil {
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			return nil, ee
		}
		return nil, fmt.Errorf("%s ended without a result: %v", bin, werr)
	}
	return end, nil
}

// Bridged is access to the live board of a run on Temporal, through a
// `runner-temporal bridge` process serving it on a private socket.
type Bridged struct {
	*liveboard.Client
	cmd   *exec.Cmd
	stdin io.Closer
}

// Close ends the access and the bridge.
func (b *Bridged) Close() error {
	b.Client.Close()
	b.stdin.Close() // the bridge serves until its stdin closes
	return b.cmd.Wait()
}

// OpenRemote gives access to the board at path when it is the board of a
// run on Temporal that is still running (its remote.json is there, its
// blackboard.json not yet). Otherwise it returns nil and the file to work
// on: path itself, or the blackboard.json the ended run was saved to. The
// bridge's own messages go to stderr.
func OpenRemote(path string, stderr io.Writer) (*Bridged, string, error) {
	rem, err := liveboard.FindRemote(path)
	if err != nil || rem == nil {
		return nil, path, err
	}
	if _, err := os.Stat(rem.Board); err == nil {
		return nil, rem.Board, nil // ended and saved
	}
	bin, err := TemporalBinary()
	if err != nil {
		return nil, "", fmt.Errorf("%s is a run on Temporal (workflow %s): %w", path, rem.WorkflowID, err)
	}
	args := []string{"bridge", "--temporal", rem.HostPort, "--workflow", rem.WorkflowID, "--run-id", rem.RunID, "--board", rem.Board}
	for _, f := range [][2]string{{"--namespace", rem.Namespace}, {"--task-queue", rem.TaskQueue}, {"--blobs", rem.Blobs}} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	args = append(args, rem.Security.Args()...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("starting %s: %w", bin, err)
	}
	var first BridgeHello
	line, rerr := bufio.NewReader(out).ReadBytes('\n')
	if rerr != nil || json.Unmarshal(line, &first) != nil || (first.Socket == "" && !first.Ended) {
		stdin.Close()
		werr := cmd.Wait()
		return nil, "", fmt.Errorf("reaching the run on Temporal (workflow %s at %s): the bridge ended (%v)", rem.WorkflowID, rem.HostPort, werr)
	}
	if first.Ended {
		stdin.Close()
		cmd.Wait()
		return nil, rem.Board, nil // it ended; the bridge saved its board
	}
	c, err := liveboard.Dial(first.Socket, rem.Board)
	if err != nil {
		stdin.Close()
		cmd.Wait()
		return nil, "", err
	}
	return &Bridged{Client: c, cmd: cmd, stdin: stdin}, rem.Board, nil
}

// BridgeHello is the first line `runner-temporal bridge` prints: the
// socket it serves the run's board on, or that the run has ended and its
// board is saved.
type BridgeHello struct {
	Socket string `json:"socket,omitempty"`
	Ended  bool   `json:"ended,omitempty"`
}
