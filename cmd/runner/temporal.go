package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/liveboard"
	"github.com/planrunner/runner/steps"
	"strings"
)

// Running on Temporal lives in the nested module ./temporal, built as the
// runner-temporal binary, so this binary never compiles the Temporal SDK.
// `runner worker` becomes runner-temporal; `runner run --engine temporal`
// starts it and shows its progress events with the same display as an
// in-process run.

const temporalBinary = "runner-temporal"

// temporalFlags are the flags `run` passes on to runner-temporal.
type temporalFlags struct {
	engine    string
	set       map[string]*string
	heartbeat time.Duration
	maxEvents int
}

func addTemporalFlags(fs *flag.FlagSet) *temporalFlags {
	t := &temporalFlags{set: map[string]*string{}}
	fs.StringVar(&t.engine, "engine", "local", "local (in this process) or temporal (on Temporal workers, through runner-temporal)")
	for name, usage := range map[string]string{
		"temporal":   "with --engine temporal: the Temporal frontend HOST:PORT",
		"namespace":  "with --engine temporal: the Temporal namespace (default: default)",
		"task-queue": "with --engine temporal: the task queue workers poll (default: runner)",
		"blobs":      "with --engine temporal: the content-addressed store workers share",
	} {
		t.set[name] = fs.String(name, "", usage)
	}
	fs.DurationVar(&t.heartbeat, "heartbeat-timeout", 0, "with --engine temporal: a step's worker silent this long is taken for dead (default 20s)")
	fs.IntVar(&t.maxEvents, "max-history-events", 0, "with --engine temporal: continue as new past this many history events (default 10000)")
	return t
}

func (t *temporalFlags) args() []string {
	var out []string
	for _, name := range []string{"temporal", "namespace", "task-queue", "blobs"} {
		if v := *t.set[name]; v != "" {
			out = append(out, "--"+name, v)
		}
	}
	if t.heartbeat > 0 {
		out = append(out, "--heartbeat-timeout", t.heartbeat.String())
	}
	if t.maxEvents > 0 {
		out = append(out, "--max-history-events", fmt.Sprint(t.maxEvents))
	}
	return out
}

// findTemporalBinary looks for runner-temporal: $RUNNER_TEMPORAL, next to
// this executable, then on PATH.
func findTemporalBinary() (string, error) {
	if p := os.Getenv("RUNNER_TEMPORAL"); p != "" {
		return p, nil
	}
	self, err := os.Executable()
	if err == nil {
		p := filepath.Join(filepath.Dir(self), temporalBinary)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(temporalBinary); err == nil {
		return p, nil
	}
	dir := "DIR"
	if self != "" {
		dir = filepath.Dir(self)
	}
	return "", fmt.Errorf("running on Temporal needs the %s binary, built apart so that runner stays free of the Temporal SDK; "+
		"it is not next to this runner nor on PATH. Build it from the repository with\n"+
		"  (cd temporal && go build -o %s/%s ./cmd/runner-temporal)\nor set RUNNER_TEMPORAL to its path", temporalBinary, dir, temporalBinary)
}

// cmdWorker is `runner worker`: runner-temporal takes the process over.
func cmdWorker(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The flags runner-temporal takes, listed here for --help and
	// completion; it parses them itself.
	fs, _ := newFlags("worker", stderr)
	fs.String("temporal", "", "the Temporal frontend HOST:PORT (required)")
	fs.String("namespace", "default", "the Temporal namespace")
	fs.String("task-queue", "runner", "the task queue to poll")
	fs.String("blobs", "", "the content-addressed store every worker and client of a run shares (default: the user cache directory)")
	fs.String("workdir", "", "where steps run (default: the run's workdir)")
	fs.Duration("heartbeat", time.Second, "how often a running step tells the server this worker is alive")
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(stderr)
			fs.Usage()
			return exitOK
		}
	}
	bin, err := findTemporalBinary()
	if err != nil {
		fmt.Fprintf(stderr, "runner worker: %v\n", err)
		return exitUsage
	}
	argv := append([]string{bin, "worker"}, args...)
	if err := syscall.Exec(bin, argv, os.Environ()); err != nil {
		fmt.Fprintf(stderr, "runner worker: starting %s: %v\n", bin, err)
		return exitUsage
	}
	return exitOK // not reached
}

// runEvent is one line of `runner-temporal run --events`.
type runEvent struct {
	Begin *struct {
		RunID    string `json:"run_id"`
		Workflow string `json:"workflow"`
		Board    string `json:"board"`
	} `json:"begin"`
	Started *struct {
		Label  string `json:"label"`
		Visit  int    `json:"visit"`
		Parent string `json:"parent"`
	} `json:"started"`
	Finished *board.StepRecord   `json:"finished"`
	Waiting  *board.WaitingInput `json:"waiting"`
	Board    string              `json:"board"`
	End      *struct {
		RunID    string `json:"run_id"`
		Status   string `json:"status"`
		Error    string `json:"error"`
		Board    string `json:"board"`
		Workflow string `json:"workflow"`
	} `json:"end"`
}

// runOnTemporal runs a checked plan through runner-temporal and shows its
// progress here as for a run in this process (the live display on a
// terminal, the same JSON events otherwise); pass is what runner-temporal
// gets after `run PLAN`.
func runOnTemporal(prog *engine.Program, plan string, pass []string, g *globals, stdout, stderr io.Writer) int {
	bin, err := findTemporalBinary()
	if err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		return exitUsage
	}
	g.learnSecrets(prog.Plan) // what runner-temporal prints is masked here too
	log, err := g.logger(stderr, g.progress(stderr))
	if err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		return exitUsage
	}
	tolerated := map[string]bool{}
	for _, s := range prog.Plan.AllSteps() {
		tolerated[s.Label] = s.ContinueOnError
	}
	cmd := exec.Command(bin, append([]string{"run", plan, "--events"}, pass...)...)
	cmd.Stderr = g.mask.Writer(stderr)
	events, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		return exitFailed
	}
	// Ctrl-C reaches runner-temporal too (same process group): it cancels
	// the workflow, which ends the run as interrupted; we wait for that.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "runner run: starting %s: %v\n", bin, err)
		return exitUsage
	}
	var last runEvent
	sc := bufio.NewScanner(events)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev runEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case ev.Begin != nil:
			log = log.With().Str("run", ev.Begin.RunID).Logger()
		case ev.Started != nil && g.view != nil:
			g.view.StepStarted(ev.Started.Label, ev.Started.Visit, ev.Started.Parent)
		case ev.Finished != nil && g.view != nil:
			g.view.StepFinished(*ev.Finished)
		case ev.Finished != nil:
			engine.LogStep(log.With().Str("step", ev.Finished.Label).Logger(), *ev.Finished, tolerated[ev.Finished.Label])
		case ev.Waiting != nil && g.format(stderr) == "json":
			log.Warn().Str("step", ev.Waiting.Label).Int("visit", ev.Waiting.Visit).Str("prompt", ev.Waiting.Prompt).
				Strs("next", []string{answerCommand(engine.ShellQuote(ev.Board), *ev.Waiting)}).Msg("waiting for an answer")
		case ev.Waiting != nil && !g.quiet:
			// The run waits on Temporal, with no process of ours needed:
			// say how to answer, as a run in one process does when it stops.
			var w io.Writer = stderr
			if g.view != nil {
				w = g.view // above the live block
			}
			fmt.Fprintf(g.mask.Writer(w), "%s waits for an answer: %s\n  %s\n", steps.VisitName(ev.Waiting.Label, ev.Waiting.Visit),
				strings.TrimSpace(ev.Waiting.Prompt), answerCommand(engine.ShellQuote(ev.Board), *ev.Waiting))
		case ev.End != nil:
			last = ev
		}
	}
	werr := cmd.Wait()
	if g.view != nil {
		g.view.close()
	}
	if last.End == nil {
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintf(stderr, "runner run: %s ended without a result: %v\n", bin, werr)
		return exitFailed
	}
	e := last.End
	elapsed := time.Since(start)
	if g.format(stderr) == "json" {
		ev := log.Info()
		if e.Error != "" {
			ev = log.Error().Str("error", e.Error)
		}
		ev.Str("status", e.Status).Int64("duration_ms", elapsed.Milliseconds()).Str("blackboard", e.Board).
			Str("workflow", e.Workflow).Msg("run finished")
	} else {
		if !g.quiet {
			fmt.Fprintf(stderr, "run %s %s in %s (Temporal workflow %s)\n", e.RunID, e.Status, elapsed.Round(time.Millisecond), e.Workflow)
		}
		if e.Error != "" {
			fmt.Fprintf(g.mask.Writer(stderr), "error: %s\n", e.Error)
		}
	}
	if g.report {
		if b, err := board.Load(e.Board); err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
		} else if path, err := writeReport(b, e.Board, ""); err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "report: %s\n", path)
		}
	}
	fmt.Fprintf(stdout, "blackboard: %s\n", e.Board)
	switch e.Status {
	case board.StatusSucceeded:
		return exitOK
	case board.StatusInterrupted:
		return exitInterrupted
	}
	return exitFailed
}

// bridged is access to the live board of a run on Temporal, through a
// `runner-temporal bridge` process serving it on a private socket.
type bridged struct {
	*liveboard.Client
	cmd   *exec.Cmd
	stdin io.Closer
}

func (b *bridged) Close() error {
	b.Client.Close()
	b.stdin.Close() // the bridge serves until its stdin closes
	return b.cmd.Wait()
}

// openRemote gives access to the board at path when it is the board of a
// run on Temporal that is still running (its remote.json is there, its
// blackboard.json not yet). Otherwise it returns nil and the file to work
// on: path itself, or the blackboard.json the ended run was saved to.
func openRemote(path string, g *globals, stderr io.Writer) (*bridged, string, error) {
	rem, err := liveboard.FindRemote(path)
	if err != nil || rem == nil {
		return nil, path, err
	}
	if _, err := os.Stat(rem.Board); err == nil {
		return nil, rem.Board, nil // ended and saved
	}
	bin, err := findTemporalBinary()
	if err != nil {
		return nil, "", fmt.Errorf("%s is a run on Temporal (workflow %s): %w", path, rem.WorkflowID, err)
	}
	args := []string{"bridge", "--temporal", rem.HostPort, "--workflow", rem.WorkflowID, "--run-id", rem.RunID, "--board", rem.Board}
	for flag, v := range map[string]string{"--namespace": rem.Namespace, "--task-queue": rem.TaskQueue, "--blobs": rem.Blobs} {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = g.mask.Writer(stderr)
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
	var first struct {
		Socket string `json:"socket"`
		Ended  bool   `json:"ended"`
	}
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
	return &bridged{Client: c, cmd: cmd, stdin: stdin}, rem.Board, nil
}
