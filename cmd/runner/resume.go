package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/planrunner/runner/internal/runs"
)

func cmdResume(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("resume", stdout, stderr)
	var o runs.ResumeOptions
	var env runs.Env
	fs.BoolVar(&o.Force, "force", false, "resume even though the plan file changed since the run started")
	fs.BoolVar(&env.Sync, "sync", false, "fsync the journal after every step")
	fs.BoolVar(&g.output, "show-output", false, "stream command and test output as it comes, each line prefixed by its step's label")
	fs.BoolVar(&g.report, "report", false, "write the run's HTML report (report.html beside blackboard.json) when it ends")
	fs.StringVar(&g.junit, "junit", "", "write the run's tests and steps as JUnit XML to `FILE` when it ends (as runner report --format junit)")
	addTraceFlag(fs, g)
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one blackboard.json, got %d arguments", len(pos))
	}
	if pos[0], err = runs.Resolve(pos[0], "."); err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	r, err := runs.Reopen(pos[0], o)
	if err != nil {
		return resumeErr(stderr, fs.Name(), err)
	}
	if r.Note != "" {
		fmt.Fprintln(stderr, r.Note)
	}
	return execute(r, env, fs, stdout, stderr, g, true) // the run's own workdir: said when it started
}

// resumeErr is runErr, where a run with nothing left to do is no error.
func resumeErr(stderr io.Writer, cmd string, err error) int {
	if errors.Is(err, runs.ErrSucceeded) || errors.Is(err, runs.ErrNothingLeft) {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitOK
	}
	return runErr(stderr, cmd, err)
}
