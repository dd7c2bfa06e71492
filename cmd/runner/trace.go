package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/plans"
	"github.com/planrunner/runner/runs"
	"github.com/planrunner/runner/tracing"
)

// addTraceFlag adds --otlp-endpoint to a command that runs a plan.
func addTraceFlag(fs *flag.FlagSet, g *globals) {
	fs.StringVar(&g.otlp, "otlp-endpoint", "", "export the run's trace over OTLP/HTTP to this URL when it ends (default: OTEL_EXPORTER_OTLP_ENDPOINT; docs/tracing.md)")
}

// traceRun exports a finished run's (or replay's) trace when tracing is
// on: to --otlp-endpoint, or where the OTEL_EXPORTER_OTLP_* variables
// say. A collector that is slow, dead or refuses costs at most the
// export's timeout and a warning; the run's outcome stays as it was.
func traceRun(b *board.Board, g *globals, stderr io.Writer) {
	if !tracing.Enabled(os.Getenv, g.otlp) {
		return // off: no span is made, nothing of the SDK runs
	}
	c := tracing.Config{Endpoint: g.otlp, Options: traceOptions(g)}
	if _, err := tracing.Export(context.Background(), b, c); err != nil {
		fmt.Fprintf(g.mask.Writer(stderr), "runner: warning: trace not exported: %v\n", err)
	}
}

func traceOptions(g *globals) tracing.Options {
	return tracing.Options{Mask: g.mask.String, Content: tracing.ContentFromEnv(os.Getenv)}
}

func cmdTrace(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("trace", stderr)
	fs.StringVar(&g.otlp, "otlp-endpoint", "", "OTLP/HTTP URL to send the trace to (default: OTEL_EXPORTER_OTLP_ENDPOINT)")
	out := fs.String("o", "", "write the trace as OTLP JSON to this file (- for stdout) instead of sending it")
	timeout := fs.Duration("timeout", tracing.DefaultTimeout, "give up sending after this long")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one blackboard.json, got %d arguments", len(pos))
	}
	if *out == "" && !tracing.Enabled(os.Getenv, g.otlp) {
		return usageErr(stderr, fs, "nowhere to send the trace: give --otlp-endpoint URL, set OTEL_EXPORTER_OTLP_ENDPOINT, or write it to a file with -o FILE")
	}
	if pos[0], err = runs.Resolve(pos[0], "."); err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	b, err := board.Load(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "runner trace: %v\n", err)
		return exitUsage
	}
	run := b.Run()
	if p, err := plans.Parse(run.PlanPath, []byte(run.PlanSource)); err == nil {
		g.learnSecrets(p) // the plan's secrets, from this environment, are masked
	}
	c := tracing.Config{Endpoint: g.otlp, File: *out, Timeout: *timeout, Options: traceOptions(g)}
	if *out == "-" {
		c.File, c.Stdout = "-", stdout
	}
	n, err := tracing.Export(context.Background(), b, c)
	if err != nil {
		fmt.Fprintf(g.mask.Writer(stderr), "runner trace: %v\n", err)
		return exitFailed
	}
	if !g.quiet && *out != "-" {
		where := *out
		if where == "" {
			where = "the OTLP endpoint"
			if g.otlp != "" {
				where = g.otlp
			}
		}
		fmt.Fprintf(stderr, "trace of run %s: %d spans → %s\n", run.ID, n, where)
	}
	return exitOK
}
