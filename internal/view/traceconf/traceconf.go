// Package traceconf says whether a run is traced and where the program
// that exports the trace is, from the environment alone (the standard
// library only).
//
// The exporter, the OpenTelemetry SDK with its protobuf and gRPC
// packages, lives in its own program, runner-otel (cmd/runner-otel,
// package tracing): linked into runner it would add some 90 package
// initialisers and 7 MB to every start of runner, traced or not. runner
// starts runner-otel only when a trace is asked for.
package traceconf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The environment variables of the OpenTelemetry SDK that decide
// whether there is a trace to send (runner-otel's exporter reads the
// rest of OTEL_EXPORTER_OTLP_*: headers, certificates, timeout).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvDisabled       = "OTEL_SDK_DISABLED"
	EnvExporter       = "OTEL_TRACES_EXPORTER"
	// EnvContent opts in to message content on the spans (the GenAI
	// conventions' own variable).
	EnvContent = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
	// EnvBin names the runner-otel program to use.
	EnvBin = "RUNNER_OTEL_BIN"
)

// Helper is the exporter program's name.
const Helper = "runner-otel"

// Enabled reports whether a run is to be traced: an endpoint given on
// the command line, or one in the environment unless the SDK or the
// traces exporter is turned off there (OTEL_SDK_DISABLED=true,
// OTEL_TRACES_EXPORTER=none).
func Enabled(getenv func(string) string, endpoint string) bool {
	if endpoint != "" {
		return true
	}
	if strings.EqualFold(strings.TrimSpace(getenv(EnvDisabled)), "true") {
		return false
	}
	for _, e := range strings.Split(getenv(EnvExporter), ",") {
		if strings.TrimSpace(e) == "none" {
			return false
		}
	}
	return getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != ""
}

// Content reports whether OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
// asks for message content on the spans.
func Content(getenv func(string) string) bool {
	return strings.EqualFold(strings.TrimSpace(getenv(EnvContent)), "true")
}

// ErrNoHelper: runner-otel is nowhere to be found.
var ErrNoHelper = errors.New("runner-otel, which exports traces, is not installed: go install github.com/planrunner/runner/cmd/...@latest installs it beside runner, or set " + EnvBin)

// FindHelper is the runner-otel to start: $RUNNER_OTEL_BIN, else the one
// beside the running executable, else the one on PATH.
func FindHelper(getenv func(string) string) (string, error) {
	if p := getenv(EnvBin); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", errors.New(EnvBin + ": " + err.Error())
		}
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), Helper)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(Helper); err == nil {
		return p, nil
	}
	return "", ErrNoHelper
}

// DefaultTimeout bounds an export at the end of a run: a slow or dead
// collector costs the run at most this, then a warning.
const DefaultTimeout = 5 * time.Second

// Timeout is how long an export may take: OTEL_EXPORTER_OTLP_TRACES_TIMEOUT
// or OTEL_EXPORTER_OTLP_TIMEOUT (milliseconds, as the SDK reads them),
// else DefaultTimeout. A value that is not a positive number of
// milliseconds is an error naming the variable.
func Timeout(getenv func(string) string) (time.Duration, error) {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"} {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			continue
		}
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return DefaultTimeout, fmt.Errorf("%s=%q: want a positive number of milliseconds", name, v)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	return DefaultTimeout, nil
}

// ExportRun exports the trace of the run saved at board when tracing is
// on (endpoint given, or the OTEL_* variables say so), through
// runner-otel: runner does it at the end of a run in its own process,
// runner-temporal at the end of a run on Temporal, so both send the same
// trace. It never fails the run: whatever goes wrong (no runner-otel, a
// collector that is down, slow or refuses) costs at most the export
// timeout plus a moment, and is one line on warn, "runner: warning:
// trace not exported: …". warn should mask the run's secrets (runner-otel
// masks its own messages). Off, it reads a few variables and starts
// nothing.
func ExportRun(board, endpoint string, getenv func(string) string, warn io.Writer) {
	if !Enabled(getenv, endpoint) {
		return
	}
	timeout, err := Timeout(getenv)
	if err != nil {
		fmt.Fprintf(warn, "runner: warning: %v; using %s\n", err, timeout)
	}
	args := []string{"-q", "--timeout", timeout.String()}
	if endpoint != "" {
		args = append(args, "--otlp-endpoint", endpoint)
	}
	args = append(args, "--", board) // flags first: runner-otel's flag parsing stops at the path
	ctx, cancel := context.WithTimeout(context.Background(), timeout+2*time.Second)
	defer cancel()
	if err := RunHelper(ctx, getenv, args, io.Discard, warn); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%s exited %d", Helper, ee.ExitCode())
		}
		fmt.Fprintf(warn, "runner: warning: trace not exported: %v\n", err)
	}
}

// RunHelper runs runner-otel (FindHelper) with args. Its own messages go
// to stderr (it masks the plan's secrets itself); the error says only
// that it failed: an *exec.ExitError after runner-otel has said why, or
// why it could not be started or was stopped when ctx ended.
func RunHelper(ctx context.Context, getenv func(string) string, args []string, stdout, stderr io.Writer) error {
	bin, err := FindHelper(getenv)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("%s did not finish in time and was stopped", Helper)
	}
	return err
}
