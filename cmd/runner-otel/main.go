// Command runner-otel exports a saved run's trace: over OTLP/HTTP to the
// endpoint its flags or the OTEL_EXPORTER_OTLP_* variables name, or as
// OTLP JSON to a file. runner starts it at the end of a traced run and
// for `runner trace`; it is a program of its own so that the
// OpenTelemetry SDK costs runner nothing when tracing is off
// (docs/tracing.md).
//
//	runner-otel BLACKBOARD [--otlp-endpoint URL | -o FILE] [--timeout D] [-q]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/boot"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/planrunner/runner/internal/view/traceconf"
	"github.com/planrunner/runner/internal/view/tracing"
)

func main() {
	boot.Start("runner-otel", boot.Options{})
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner-otel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	endpoint := fs.String("otlp-endpoint", "", "OTLP/HTTP URL to send the trace to (default: OTEL_EXPORTER_OTLP_ENDPOINT)")
	out := fs.String("o", "", "write the trace as OTLP JSON to this file (- for stdout) instead of sending it")
	timeout := fs.Duration("timeout", tracing.DefaultTimeout, "give up sending after this long")
	quiet := fs.Bool("q", false, "say nothing when it worked")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "runner-otel: want one blackboard.json, got %d arguments\n", fs.NArg())
		return 2
	}
	if *out == "" && !traceconf.Enabled(os.Getenv, *endpoint) {
		fmt.Fprintln(stderr, "runner-otel: nowhere to send the trace: give --otlp-endpoint URL, set OTEL_EXPORTER_OTLP_ENDPOINT, or write it to a file with -o FILE")
		return 2
	}
	if *timeout <= 0 {
		*timeout = tracing.DefaultTimeout
	}
	path := fs.Arg(0)
	b, err := board.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "runner-otel: %v\n", err)
		return 2
	}
	run := b.Run()
	m := mask.New()
	if p := runs.SavedPlan(run); p != nil {
		runs.LearnSecrets(m, p) // the plan's secrets, from this environment
	}
	stderr = m.Writer(stderr)
	c := tracing.Config{Endpoint: *endpoint, File: *out, Stdout: stdout, Timeout: *timeout,
		Options: tracing.Options{Mask: m.String, Content: traceconf.Content(os.Getenv), Types: steps.Registry()}}
	start := time.Now()
	n, err := tracing.Export(context.Background(), b, c)
	if err != nil {
		fmt.Fprintf(stderr, "runner-otel: %v\n", err)
		return 1
	}
	if !*quiet && *out != "-" {
		where := *out
		if where == "" {
			where = *endpoint
		}
		if where == "" {
			where = "the OTLP endpoint"
		}
		fmt.Fprintf(stderr, "trace of run %s: %d spans → %s in %s\n", run.ID, n, where, time.Since(start).Round(time.Millisecond))
	}
	return 0
}
