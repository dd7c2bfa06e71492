package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/view/traceconf"
)

// addTraceFlag adds --otlp-endpoint to a command that runs a plan.
func addTraceFlag(fs *flag.FlagSet, g *globals) {
	fs.StringVar(&g.otlp, "otlp-endpoint", "", "export the run's trace over OTLP/HTTP to this URL when it ends (default: OTEL_EXPORTER_OTLP_ENDPOINT; see docs/tracing.md)")
}

// traceRun exports a finished run's (or replay's) trace when tracing is
// on: to --otlp-endpoint, or where the OTEL_EXPORTER_OTLP_* variables
// say, through runner-otel (traceconf.ExportRun, which runner-temporal
// shares). A collector that is slow, dead or refuses costs at most the
// export timeout and a warning; the run's outcome and exit code stay as
// they were. Off, it reads a few variables and nothing else.
func traceRun(path string, g *globals, stderr io.Writer) {
	traceconf.ExportRun(path, g.otlp, os.Getenv, g.mask.Writer(stderr))
}

func cmdTrace(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("trace", stdout, stderr)
	fs.StringVar(&g.otlp, "otlp-endpoint", "", "OTLP/HTTP URL to send the trace to (default: OTEL_EXPORTER_OTLP_ENDPOINT)")
	out := fs.String("o", "", "write the trace as OTLP JSON to this file (- for stdout) instead of sending it")
	timeout := fs.Duration("timeout", 0, "give up sending after this long (default: OTEL_EXPORTER_OTLP_TIMEOUT, else 5s)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one blackboard.json, got %d arguments", len(pos))
	}
	if *out == "" && !traceconf.Enabled(os.Getenv, g.otlp) {
		return usageErr(stderr, fs, "nowhere to send the trace: give --otlp-endpoint URL, set OTEL_EXPORTER_OTLP_ENDPOINT, or write it to a file with -o FILE")
	}
	if pos[0], err = runs.Resolve(pos[0], "."); err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	if *timeout == 0 {
		if *timeout, err = traceconf.Timeout(os.Getenv); err != nil {
			return usageErr(stderr, fs, "%v", err)
		}
	}
	hargs := []string{"--timeout", timeout.String()}
	if g.otlp != "" {
		hargs = append(hargs, "--otlp-endpoint", g.otlp)
	}
	if *out != "" {
		hargs = append(hargs, "-o", *out)
	}
	if g.quiet {
		hargs = append(hargs, "-q")
	}
	hargs = append(hargs, "--", pos[0])
	ctx, cancel := context.WithTimeout(context.Background(), *timeout+5*time.Second)
	defer cancel()
	err = traceconf.RunHelper(ctx, os.Getenv, hargs, stdout, stderr)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee) && ee.ExitCode() == exitUsage:
		return exitUsage // a file that is no blackboard, said by runner-otel
	case errors.As(err, &ee):
		return exitFailed // runner-otel said why
	}
	fmt.Fprintf(stderr, "runner trace: %v\n", err)
	return exitFailed
}
