// Command runner-mcp serves runner over the Model Context Protocol
// (package mcpserve). Users start it as `runner mcp` (docs/mcp.md), which
// checks the flags and gives it the runner binary that starts runs; it is
// a binary of its own so that runner stays free of the MCP SDK.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/planrunner/runner/internal/server/mcpserve"
	"github.com/planrunner/runner/internal/sys/harden"
	"github.com/planrunner/runner/internal/sys/mask"
)

func main() {
	// As runner does: API keys leave the environment block others can
	// read, and the process is not dumpable (docs/safety.md, "Secrets");
	// the runs it starts still get them.
	if err := harden.ScrubEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "runner mcp: warning: %v\n", err)
	}
	if err := harden.Process(); err != nil {
		fmt.Fprintf(os.Stderr, "runner mcp: warning: %v\n", err)
	}
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) // a client gone is an error, not death
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runner := fs.String("runner", "", "the runner binary runs are started with (runner mcp gives itself)")
	version := fs.String("version", "dev", "the version told to clients")
	dir := fs.String("dir", ".", "the directory whose runs the server lists and starts")
	addr := fs.String("http", "", "serve streamable HTTP on ADDR instead of stdin and stdout")
	anyHost := fs.Bool("listen-any", false, "with --http: allow an address other than loopback")
	logFormat := fs.String("log-format", "json", "json or console, on stderr (stdout is the protocol)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	quiet := fs.Bool("q", false, "errors only")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "runner mcp: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() != 0 {
		return usage("no arguments wanted (got %q)", fs.Arg(0))
	}
	if *runner == "" {
		return usage("--runner: the runner binary to start runs with is required (start the server as `runner mcp`)")
	}
	if *logFormat != "json" && *logFormat != "console" {
		return usage("--log-format %q: want console or json", *logFormat)
	}
	level, err := zerolog.ParseLevel(strings.ToLower(*logLevel))
	if err != nil || *logLevel == "" {
		return usage("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	if *quiet {
		level = zerolog.ErrorLevel
	}
	m := mask.New()
	// Logs go to stderr only, as JSON lines: over stdio, stdout is the
	// protocol, and an MCP host keeps stderr as the server's log.
	var w io.Writer = m.Writer(stderr)
	if *logFormat == "console" {
		w = zerolog.ConsoleWriter{Out: w, NoColor: true, TimeFormat: "15:04:05"}
	}
	log := zerolog.New(w).Level(level).With().Timestamp().Logger()
	srv := mcpserve.New(mcpserve.Options{Dir: *dir, Runner: *runner, Version: *version, Log: log, Mask: m})
	defer srv.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *addr == "" {
		err := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			fmt.Fprintf(stderr, "runner mcp: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	listen := *addr
	if !strings.Contains(listen, ":") {
		listen = ":" + listen // a bare port
	}
	if strings.HasPrefix(listen, ":") && !*anyHost {
		listen = "127.0.0.1" + listen
	}
	if err := mcpserve.CheckAddr(listen, *anyHost); err != nil {
		return usage("--http %v", err)
	}
	token, err := mcpserve.NewToken()
	if err != nil {
		fmt.Fprintf(stderr, "runner mcp: making the token: %v\n", err)
		return exitFailed
	}
	h, err := srv.Handler(token)
	if err != nil {
		fmt.Fprintf(stderr, "runner mcp: %v\n", err)
		return exitFailed
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return usage("--http %s: %v", *addr, err)
	}
	// Printed once, on stdout, never logged: a client needs the URL and
	// the token, and nothing else shows them.
	fmt.Fprintf(stdout, "url:   http://%s/mcp\ntoken: %s\n", ln.Addr(), token)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	log.Info().Str("addr", ln.Addr().String()).Msg("serving MCP over HTTP")
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "runner mcp: %v\n", err)
		return exitFailed
	}
	return exitOK
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
