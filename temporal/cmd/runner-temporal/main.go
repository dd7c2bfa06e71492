// Command runner-temporal runs runner's plans on Temporal: `worker` runs
// the interpreter workflow and the step activities, `run` starts a plan
// and waits for it. The default runner binary hands `runner worker` and
// `runner run --engine temporal` to it, so it never compiles the SDK.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/boot"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/planrunner/runner/internal/view/traceconf"
	rt "github.com/planrunner/runner/temporal"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"log/slog"
)

const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

var version = "dev"

func main() {
	// A worker runs steps: they must not read its secrets, and it adopts
	// what they leave behind.
	boot.Start("runner-temporal", boot.Options{RunsSteps: true})
	boot.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: runner-temporal worker --temporal HOST:PORT [--namespace N] [--task-queue Q] [--blobs DIR] [--workdir DIR] [--max-concurrent-steps N] [--health ADDR] [--tls-ca F --tls-cert F --tls-key F --api-key-file F]\n       runner-temporal gc --temporal HOST:PORT --store S [--grace 1h] [--dry-run]\n       runner-temporal store-id --store S\n       runner-temporal run PLAN --temporal HOST:PORT [--var k=v]... [--workdir DIR] [--out FILE] [--namespace N] [--task-queue Q] [--blobs DIR] [--otlp-endpoint URL]\n       runner-temporal codec-server --store S [--addr 127.0.0.1:8089] [--cors-origin http://localhost:8233]")
		return exitUsage
	}
	// Prices as runner reads them: the worker's agents check a plan's
	// cost limit against them, and a run's starter shows its cost.
	if err := agents.UseUserPrices(os.Getenv); err != nil {
		fmt.Fprintf(stderr, "runner-temporal: %v\n", err)
		return exitUsage
	}
	switch args[0] {
	case "worker":
		return cmdWorker(args[1:], stderr)
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "gc":
		return cmdGC(args[1:], stdout, stderr)
	case "store-id":
		return cmdStoreID(args[1:], stdout, stderr)
	case "bridge":
		return cmdBridge(args[1:], os.Stdin, stdout, stderr)
	case "codec-server":
		return cmdCodecServer(args[1:], stderr)
	case "version":
		fmt.Fprintf(stdout, "runner-temporal %s (%s)\n", version, rt.Build())
		return exitOK
	}
	fmt.Fprintf(stderr, "runner-temporal: unknown command %q (want worker, run, gc, store-id or codec-server)\n", args[0])
	return exitUsage
}

// conn is how a command reaches Temporal and its store: the connection
// flags (boot.ConnFlags, which runner shares), then what dial opened.
type conn struct {
	boot.Conn
	store     rt.Store // opened by dial
	storeSpec string   // the store as one string, for remote.json and a bridge
}

// connFlags are the flags of every command that dials.
func connFlags(fs *flag.FlagSet) *conn {
	c := &conn{}
	boot.ConnFlags(fs, &c.Conn)
	return c
}

// storeOptions are the store flags as the store opener takes them.
func storeOptions(s boot.Store) rt.StoreOptions {
	return rt.StoreOptions{Store: s.Spec, S3Endpoint: s.S3Endpoint, S3Region: s.S3Region, S3PathStyle: s.S3PathStyle, Timeout: s.Timeout}
}

func (c *conn) dial(log *slog.Logger) (client.Client, error) {
	if c.HostPort == "" {
		return nil, errors.New("--temporal HOST:PORT is required (e.g. --temporal 127.0.0.1:7233), or TEMPORAL_ADDRESS")
	}
	sec, err := c.Security.WithEnv(os.Getenv).Abs()
	if err != nil {
		return nil, err
	}
	c.Security = sec
	if c.store, c.storeSpec, err = rt.OpenStore(storeOptions(c.Store), os.Getenv); err != nil {
		return nil, err
	}
	o := client.Options{HostPort: c.HostPort, Namespace: c.Namespace,
		DataConverter: rt.DataConverter(c.store, 0), Logger: tlog.NewStructuredLogger(log)}
	if err := rt.Secure(&o, c.Security, os.Getenv); err != nil {
		return nil, err
	}
	tc, err := rt.Dial(o, c.DialTimeout)
	if err != nil && sec.UseTLS(os.Getenv) {
		hint := ""
		if sec.CertPath == "" {
			hint = "; if the cluster requires mutual TLS, give its client certificate with --tls-cert and --tls-key"
		}
		return nil, fmt.Errorf("%w (with TLS)%s", err, hint)
	}
	return tc, err
}

// parse parses flags and positional arguments in any order.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func cmdWorker(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var wf boot.Worker
	boot.WorkerFlags(fs, &wf)
	if _, err := parse(fs, args); err != nil {
		return exitUsage
	}
	c := &conn{Conn: wf.Conn}
	wf.WorkRoot = wf.Root()
	if wf.MaxSteps < 0 {
		fmt.Fprintf(stderr, "runner worker: --max-concurrent-steps %d: want 1 or more (0: the default)\n", wf.MaxSteps)
		return exitUsage
	}
	// The worker's log never shows a secret: the providers' keys now, each
	// run's secrets as its steps come (Activities.LogMask).
	logMask := mask.New()
	for _, n := range plans.ProviderKeyEnvs {
		logMask.Add(os.Getenv(n))
	}
	log, slogger, err := loggers(logMask.Writer(stderr), wf.Log)
	if err != nil {
		fmt.Fprintf(stderr, "runner worker: %v\n", err)
		return exitUsage
	}
	tc, err := c.dial(slogger)
	if err != nil {
		fmt.Fprintf(stderr, "runner worker: %v\n", err)
		return exitUsage
	}
	defer tc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	storeID, err := rt.CheckWorkerStore(ctx, tc, c.Namespace, c.TaskQueue, c.store, wf.ExpectStoreID)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "runner worker: refusing to poll: %v\n", err)
		return exitFailed
	}
	// runner's search attributes, registered where the namespace allows;
	// where it does not, said once here.
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	rt.RegisterSearchAttributes(sctx, tc, c.Namespace, func(msg string) { log.Warn().Msg(msg) })
	cancel()
	if wf.HostID == "" {
		wf.HostID = rt.NewHostID()
	}
	acts := &rt.Activities{Store: c.store, StoreID: storeID, Log: log, Workdir: wf.Workdir, Heartbeat: wf.Heartbeat, LogMask: logMask,
		HostID: wf.HostID, WorkRoot: wf.WorkRoot, SharedWorkspace: wf.SharedWorkspace}
	// The identity names the build: each history event a worker records
	// says which build recorded it.
	ident := rt.WorkerIdentity()
	w := rt.NewWorker(tc, c.TaskQueue, acts, worker.Options{MaxConcurrentActivityExecutionSize: wf.MaxSteps, Identity: ident})
	// This host's own queue: the steps of the runs pinned here. The limit
	// on concurrent steps is per queue, so each takes its share.
	hw := rt.NewHostWorker(tc, c.TaskQueue, acts, worker.Options{MaxConcurrentActivityExecutionSize: wf.MaxSteps, Identity: ident})
	if err := hw.Start(); err != nil {
		fmt.Fprintf(stderr, "runner worker: %v\n", err)
		return exitFailed
	}
	defer hw.Stop()
	if wf.Health != "" {
		stop, addr, err := rt.ServeHealth(wf.Health, tc)
		if err != nil {
			fmt.Fprintf(stderr, "runner worker: --health %s: %v\n", wf.Health, err)
			return exitUsage
		}
		defer stop()
		log.Info().Str("addr", addr).Msg("health endpoint: GET /healthz")
	}
	log.Info().Str("temporal", c.HostPort).Str("namespace", c.Namespace).Str("task_queue", c.TaskQueue).Str("store", c.store.String()).Str("store_id", storeID).
		Str("host", wf.HostID).Str("host_queue", rt.HostQueue(c.TaskQueue, wf.HostID)).Str("work_root", wf.WorkRoot).Str("build", rt.Build()).Msg("worker started")
	err = w.Run(worker.InterruptCh())
	// The host queue stops too before the steps' MCP servers end, so no
	// step of it starts one after.
	hw.Stop()
	acts.EndServers()
	if err != nil {
		fmt.Fprintf(stderr, "runner worker: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// loggers are the command's logs as its logging flags ask (console by
// default), and the Temporal SDK's, warnings and errors only, in the same
// format.
func loggers(stderr io.Writer, l boot.Log) (zerolog.Logger, *slog.Logger, error) {
	log, err := l.Logger(stderr, "console")
	if err != nil {
		return log, nil, err
	}
	if l.Format == "json" {
		return log, slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), nil
	}
	return log, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), nil
}

// eventWriter prints the events of `run --events` (runs.Event), which
// runner reads to show the same live progress as for an in-process run.
type eventWriter struct {
	enc   *json.Encoder
	board string
}

func (e eventWriter) Waiting(w board.WaitingInput) {
	e.enc.Encode(runs.Event{Waiting: &w, Board: e.board})
}

func (e eventWriter) StepStarted(label string, visit int, parent string) {
	e.enc.Encode(runs.Event{Started: &runs.EventStarted{Label: label, Visit: visit, Parent: parent}})
}
func (e eventWriter) StepFinished(rec board.StepRecord) { e.enc.Encode(runs.Event{Finished: &rec}) }

// plainView prints one line per finished step, with the host that ran
// it, and a line when a top-level step ran on another host than the one
// before.
type plainView struct {
	w     io.Writer
	board string
	host  string // the host of the last step a worker ran
}

func (p *plainView) Waiting(w board.WaitingInput) {
	fmt.Fprintf(p.w, "%s waits for an answer: %s\n  answer with: runner answer %s --step %s --json '{...}'\n",
		steps.VisitName(w.Label, w.Visit), strings.TrimSpace(w.Prompt), engine.ShellQuote(p.board), steps.VisitName(w.Label, w.Visit))
}

func (p *plainView) StepStarted(string, int, string) {}
func (p *plainView) StepFinished(rec board.StepRecord) {
	name := rec.Label
	if rec.Visit > 1 {
		name = fmt.Sprintf("%s#%d", rec.Label, rec.Visit)
	}
	// Top-level steps only: a fan-out's items run on any worker.
	if top := rec.Parent == "" && rec.Host != ""; top && p.host != "" && rec.Host != p.host {
		fmt.Fprintf(p.w, "steps run on host %s from %s (before it, on host %s)\n", rec.Host, name, p.host)
	}
	if rec.Parent == "" && rec.Host != "" {
		p.host = rec.Host
	}
	line := fmt.Sprintf("%s %s %dms", name, rec.Status, rec.DurationMS)
	if rec.Host != "" {
		line += " on " + rec.Host
	}
	if rec.Error != "" {
		line += ": " + rec.Error
	}
	fmt.Fprintln(p.w, line)
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner run --engine temporal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := connFlags(fs)
	// The run is set up as runner sets up a run in its own process
	// (runs.New): the same plan checks, vars, agents, workdir, run id and
	// board path.
	vars := plans.VarArgs{}
	o := runs.Options{Vars: vars, Agents: plans.AgentOverrides{}, Version: version, WorkdirElsewhere: true}
	fs.Var(vars, "var", "set a plan var: name=value (repeatable)")
	var reuse stringList
	fs.Var(&reuse, "reuse", "OLD/blackboard.json: take each model answer from this run's recording while the request is byte for byte the recorded one (repeatable)")
	fs.Var(o.Agents, "agent", "NAME.FIELD=VALUE: change an agent's provider, model, base_url or api_key_env for this run (repeatable)")
	fs.StringVar(&o.Workdir, "workdir", "", "directory steps run in (default: the current directory)")
	fs.StringVar(&o.Board, "out", "", "where to write blackboard.json (default: WORKDIR/.runner/runs/<run-id>/blackboard.json)")
	sharedWS := fs.Bool("shared-workspace", false, "every worker sees the workdir and the plan at these paths (one host, a shared disk): the plan's directory does not travel with the run, and its steps may run on any worker")
	syncBack := fs.String("sync-back", "", "write the files of the run's final workdir (on the host it ran on) into `DIR` when it ends (e.g. . to take its changes)")
	events := fs.Bool("events", false, "print progress as JSON lines on stdout (for the runner binary)")
	var lf boot.Log // runner gives its own on; progress is quiet with -q
	lf.Flags(fs)
	quiet := &lf.Quiet
	var opt rt.Options
	fs.DurationVar(&opt.HeartbeatTimeout, "heartbeat-timeout", 0, "a step's worker silent this long is taken for dead; the step runs again on another (default 20s)")
	fs.DurationVar(&opt.HostTimeout, "host-timeout", 0, "a step that waits this long for the host its run is pinned to pins the run to another host (default 20s; more where steps queue longer on a busy host)")
	fs.IntVar(&opt.MaxHistoryEvents, "max-history-events", 0, "continue as new past this many history events (default 10000)")
	spread := fs.Bool("spread-fanouts", true, "a for_each's items and a parallel group's children run on any worker, each from the workspace as the fan-out started, their files merged back in item or plan order (false: on the run's host; see docs/temporal.md)")
	fs.DurationVar(&opt.LocalStepsUnder, "local-steps-under", 0, "a command step whose timeout is at most this runs as a local activity, on the worker that runs the workflow when that is the run's host (default 0: none)")
	otlp := fs.String("otlp-endpoint", "", "export the run's trace over OTLP/HTTP to this URL when it ends (default: OTEL_EXPORTER_OTLP_ENDPOINT; see docs/tracing.md)")
	fs.String("engine", "temporal", "the engine (only temporal here)")
	pos, err := parse(fs, args)
	if err != nil {
		return exitUsage
	}
	opt.KeepFanOuts = !*spread
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "runner run: want one plan file, got %d arguments\n", len(pos))
		return exitUsage
	}
	o.Plan = pos[0]
	r, err := runs.New(o)
	if err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		return exitUsage
	}
	log, slogger, _ := loggers(stderr, boot.Log{})
	tc, err := c.dial(slogger)
	if err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		return exitUsage
	}
	defer tc.Close()
	runID, path, start := r.Record.ID, r.Board, time.Now()
	ro := rt.RunOptions{StartOptions: rt.StartOptions{TaskQueue: c.TaskQueue, Options: opt, SharedWorkspace: *sharedWS}, ReuseFiles: reuse,
		SearchAttributesFrom: c.Namespace, Warn: func(msg string) { log.Warn().Msg(msg) }, SyncBack: *syncBack,
		Remote: liveboard.Remote{HostPort: c.HostPort, Namespace: c.Namespace, TaskQueue: c.TaskQueue, Blobs: c.storeSpec, Security: c.Security}}
	wfID := rt.WorkflowIDOf(r.Record)
	switch {
	case *events:
		ro.Started = func(id string) {
			json.NewEncoder(stdout).Encode(runs.Event{Begin: &runs.EventBegin{RunID: runID, Workflow: id, Board: path}})
		}
		ro.Observer = eventWriter{json.NewEncoder(stdout), path}
	case !*quiet:
		ro.Observer = &plainView{w: stderr, board: path}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := rt.RunPlan(ctx, tc, c.store, r, ro)
	if err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		if runs.IsUsage(err) {
			return exitUsage
		}
		return exitFailed
	}
	e := runs.EventEnd{RunID: runID, Status: res.Status, Error: res.Error, Board: path, Parts: res.Parts + 1, Workflow: wfID}
	if *events {
		json.NewEncoder(stdout).Encode(runs.Event{End: &e})
	} else {
		if !*quiet {
			fmt.Fprintf(stderr, "run %s %s in %s (workflow %s)\n", runID, res.Status, time.Since(start).Round(time.Millisecond), wfID)
		}
		if res.Error != "" {
			fmt.Fprintf(stderr, "error: %s\n", res.Error)
		}
		if !*quiet {
			for _, h := range res.Hosts {
				fmt.Fprintf(stderr, "ran on host %s (%s)\n", h.Host, h.Reason)
			}
		}
		fmt.Fprintf(stdout, "blackboard: %s\n", path)
	}
	// The trace is made from the saved board, as for a run in runner's
	// own process, by the same driver: the same spans, and a collector
	// in trouble is a warning, never a failed run.
	m := mask.New()
	runs.LearnSecrets(m, r.Prog.Plan)
	traceconf.ExportRun(path, *otlp, os.Getenv, m.Writer(stderr))
	switch res.Status {
	case board.StatusSucceeded:
		return exitOK
	case board.StatusInterrupted:
		return exitInterrupted
	}
	return exitFailed
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return fmt.Sprint([]string(*l)) }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// cmdBridge serves the live board of a run on Temporal on a private Unix
// socket, in the liveboard protocol, for `runner board` and `runner
// answer` (which do not link the SDK). Its first stdout line says where:
// {"socket": PATH}, or {"ended": true} when the run has ended and its
// board is saved at --board. It serves until stdin closes.
func cmdBridge(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner-temporal bridge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := connFlags(fs)
	wf := fs.String("workflow", "", "the run's workflow id (required)")
	runID := fs.String("run-id", "", "the run's id")
	path := fs.String("board", "", "the run's blackboard.json (required)")
	if _, err := parse(fs, args); err != nil {
		return exitUsage
	}
	if *wf == "" || *path == "" {
		fmt.Fprintln(stderr, "runner-temporal bridge: --workflow and --board are required")
		return exitUsage
	}
	_, slogger, _ := loggers(stderr, boot.Log{})
	tc, err := c.dial(slogger)
	if err != nil {
		fmt.Fprintf(stderr, "runner-temporal bridge: %v\n", err)
		return exitUsage
	}
	defer tc.Close()
	b := &rt.Bridge{C: tc, WorkflowID: *wf, RunID: *runID, Board: *path, Store: c.store, Mask: mask.New()}
	for _, n := range plans.ProviderKeyEnvs {
		b.Mask.Add(os.Getenv(n))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	running, err := b.Running(ctx)
	if err == nil && running {
		// The plan's own secrets, from this environment, are masked in
		// what is sent, as runner masks its own writes.
		var run board.Run
		if err = b.QueryRun(&run); err == nil {
			if p := runs.SavedPlan(run); p != nil {
				runs.LearnSecrets(b.Mask, p)
			}
		}
	}
	if err == nil && !running {
		err = b.SaveEnded(ctx)
		if err == nil {
			json.NewEncoder(stdout).Encode(runs.BridgeHello{Ended: true})
			cancel()
			return exitOK
		}
	}
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "runner-temporal bridge: workflow %s on %s: %v\n", *wf, c.HostPort, err)
		return exitFailed
	}
	dir, err := os.MkdirTemp("", "runner-bridge-")
	if err != nil {
		fmt.Fprintf(stderr, "runner-temporal bridge: %v\n", err)
		return exitFailed
	}
	defer os.RemoveAll(dir)
	srv, err := liveboard.ServeSource(b, filepath.Join(dir, "s"))
	if err != nil {
		fmt.Fprintf(stderr, "runner-temporal bridge: %v\n", err)
		return exitFailed
	}
	defer srv.Close()
	json.NewEncoder(stdout).Encode(runs.BridgeHello{Socket: srv.Socket})
	io.Copy(io.Discard, stdin) // until the caller is done (or gone)
	return exitOK
}

// cmdGC deletes the blobs no run Temporal still knows references (see
// rt.GC): run it on a schedule (docs/temporal.md).
func cmdGC(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner-temporal gc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := connFlags(fs)
	grace := fs.Duration("grace", rt.DefaultGCGrace, "keep blobs written more recently than this, referenced or not (a run starting now)")
	dry := fs.Bool("dry-run", false, "say what would be deleted, delete nothing")
	if pos, err := parse(fs, args); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "runner-temporal gc: unexpected arguments %q\n", pos)
		}
		return exitUsage
	}
	if *grace < time.Minute {
		fmt.Fprintf(stderr, "runner-temporal gc: --grace %s: want at least 1m (a run starting now writes its blobs before Temporal names them)\n", *grace)
		return exitUsage
	}
	_, slogger, _ := loggers(stderr, boot.Log{})
	tc, err := c.dial(slogger)
	if err != nil {
		fmt.Fprintf(stderr, "runner-temporal gc: %v\n", err)
		return exitUsage
	}
	defer tc.Close()
	sw, ok := c.store.(rt.Sweeper)
	if !ok {
		fmt.Fprintf(stderr, "runner-temporal gc: the store %s cannot be listed\n", c.store)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := rt.GC(ctx, tc, sw, rt.GCOptions{Namespace: c.Namespace, Grace: *grace, DryRun: *dry})
	if err != nil {
		fmt.Fprintf(stderr, "runner-temporal gc: %v\n", err)
		return exitFailed
	}
	verb := "deleted"
	if *dry {
		verb = "would delete"
	}
	fmt.Fprintf(stdout, "store %s: %d blobs, %d referenced by %d runs, %d younger than %s; %s %d (%d bytes)\n",
		c.store, rep.Scanned, rep.Referenced, rep.Runs, rep.Young, *grace, verb, rep.Deleted, rep.DeletedBytes)
	return exitOK
}

// cmdStoreID prints the store's id (creating the store's identity on first
// use): what to give workers as --expect-store-id.
func cmdStoreID(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner-temporal store-id", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := connFlags(fs)
	if _, err := parse(fs, args); err != nil {
		return exitUsage
	}
	s, _, err := rt.OpenStore(storeOptions(c.Store), os.Getenv)
	if err == nil {
		var id string
		if id, err = s.ID(); err == nil {
			fmt.Fprintln(stdout, id)
			return exitOK
		}
	}
	fmt.Fprintf(stderr, "runner-temporal store-id: %v\n", err)
	return exitFailed
}

// cmdCodecServer serves Temporal's remote codec API over the blob store,
// so the Web UI and `temporal workflow show --codec-endpoint` show the
// JSON behind a payload kept in the store.
func cmdCodecServer(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner-temporal codec-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf boot.Store
	boot.StoreFlags(fs, &sf)
	addr := fs.String("addr", "127.0.0.1:8089", "listen on `HOST:PORT`; it serves the store's blobs to whoever reaches it, so keep it on loopback or behind your proxy")
	var origins stringList
	fs.Var(&origins, "cors-origin", "a Web UI `ORIGIN` (e.g. http://localhost:8233) whose pages may call this server; repeatable")
	if pos, err := parse(fs, args); err != nil {
		return exitUsage
	} else if len(pos) > 0 {
		fmt.Fprintf(stderr, "runner-temporal codec-server: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	for _, o := range origins {
		if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") || strings.HasSuffix(o, "/") {
			fmt.Fprintf(stderr, "runner-temporal codec-server: --cors-origin %q: want scheme://host[:port], no path (as a browser sends it)\n", o)
			return exitUsage
		}
	}
	store, spec, err := rt.OpenStore(storeOptions(sf), os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "runner-temporal codec-server: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "runner-temporal codec-server: --addr %s: %v\n", *addr, err)
		return exitUsage
	}
	srv := &http.Server{Handler: rt.CodecHandler(store, origins), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "codec server on http://%s (store %s)\n", ln.Addr(), spec)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "runner-temporal codec-server: %v\n", err)
		return exitFailed
	}
	return exitOK
}
