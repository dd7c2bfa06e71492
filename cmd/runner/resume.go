package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/liveboard"
	"github.com/planrunner/runner/steps"
)

func cmdResume(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("resume", stderr)
	force := fs.Bool("force", false, "resume even though the plan file changed since the run started")
	syncFlag := fs.Bool("sync", false, "fsync the journal after every step")
	fs.BoolVar(&g.output, "show-output", false, "stream command and test output as it comes, each line prefixed by its step's label")
	fs.BoolVar(&g.report, "report", false, "write the run's HTML report (report.html beside blackboard.json) when it ends")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one blackboard.json, got %d arguments", len(pos))
	}
	if _, err := os.Stat(pos[0]); err != nil {
		if rem, _ := liveboard.FindRemote(pos[0]); rem != nil {
			// A run on Temporal is durable: nothing here to resume.
			fmt.Fprintf(stderr, "runner resume: run %s runs on Temporal (workflow %s at %s) and goes on by itself; "+
				"follow it with `runner board %s watch`, answer its inputs with `runner answer`\n",
				rem.RunID, rem.WorkflowID, rem.HostPort, engine.ShellQuote(pos[0]))
			return exitUsage
		}
		fmt.Fprintf(stderr, "runner resume: %v\n", err)
		return exitUsage
	}
	lock, err := ownRun(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "runner resume: %v\n", err)
		return exitUsage
	}
	defer lock.Unlock()
	saved, err := board.Load(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "runner resume: %v\n", err)
		return exitUsage
	}
	run := saved.Run()
	if run.Status == board.StatusSucceeded {
		fmt.Fprintf(stderr, "runner resume: run %s already succeeded; nothing to resume\n", run.ID)
		return exitOK
	}
	src, note, err := resumePlanSource(run, *force)
	if err != nil {
		fmt.Fprintf(stderr, "runner resume: %v\n", err)
		return exitUsage
	}
	if note != "" {
		fmt.Fprintln(stderr, note)
	}
	prog, err := engine.Compile(run.PlanPath, src, steps.Registry())
	if err != nil {
		return planErrors(stderr, prog, err)
	}
	if err := prog.Plan.Override(run.Agents); err != nil {
		fmt.Fprintf(stderr, "runner resume: %v\n", err)
		return exitUsage
	}
	g.runID = run.ID
	log, set, code := g.setup(prog.Plan, fs, stderr)
	if code != exitOK {
		return code
	}
	b, err := board.Open(pos[0], board.Options{Sync: *syncFlag, Redact: g.mask.String})
	if err != nil {
		fmt.Fprintf(stderr, "runner resume: %v\n", err)
		return exitFailed
	}
	defer b.Close()
	defer serveRun(b, lock, prog.Plan, run.Workdir, stderr)()
	r := &engine.Runner{Prog: prog, Board: b, Log: log, Workdir: run.Workdir,
		Vars: engine.SavedVars(prog.Plan, run.Vars), Agents: set}
	if err := r.Restore(b.Steps()); err != nil {
		if errors.Is(err, engine.ErrFinished) {
			fmt.Fprintf(stderr, "runner resume: run %s has no step left to run\n", run.ID)
			return exitOK
		}
		fmt.Fprintf(stderr, "runner resume: %v\n", err)
		return exitUsage
	}
	if err := b.UpdateRun(func(r *board.Run) {
		if src := string(src); src != r.PlanSource {
			r.PlanSource, r.PlanSHA256 = src, prog.Plan.SHA256
		}
		r.Status, r.Error, r.FinishedAt = board.StatusRunning, "", nil
	}); err != nil {
		fmt.Fprintf(stderr, "runner resume: %v\n", err)
		return exitFailed
	}
	log.Info().Int("steps_done", len(b.Steps())).Msg("resuming")
	return execute(r, stdout, stderr, g)
}

// resumePlanSource returns the plan to go on with: the saved one, unless
// the plan file changed, which is refused without --force.
func resumePlanSource(run board.Run, force bool) ([]byte, string, error) {
	src, err := os.ReadFile(run.PlanPath)
	if err != nil {
		return []byte(run.PlanSource), fmt.Sprintf("plan %s not found; resuming with the plan saved in the run", run.PlanPath), nil
	}
	if sha := sha256hex(src); sha != run.PlanSHA256 {
		if !force {
			return nil, "", fmt.Errorf("plan %s changed since run %s started (sha256 %.12s…, was %.12s…); give --force to resume with the changed plan", run.PlanPath, run.ID, sha, run.PlanSHA256)
		}
		return src, fmt.Sprintf("plan %s changed since the run started; resuming with it (--force)", run.PlanPath), nil
	}
	return src, "", nil
}
