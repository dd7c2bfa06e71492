package main

import (
	"context"
	"errors"
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

	"github.com/planrunner/runner/internal/server/mcpserve"
	"github.com/planrunner/runner/internal/sys/boot"
)

// `runner mcp` serves runner over the Model Context Protocol (package
// mcpserve) in this process: linking the MCP SDK costs runner little
// (docs/mcp.md, "Cost"), and one binary installs with one command.

func cmdMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("mcp", stdout, stderr)
	dir := fs.String("dir", ".", "the directory whose runs the server lists and starts (they are under DIR/.runner/runs)")
	addr := fs.String("http", "", "serve streamable HTTP on `ADDR` (127.0.0.1:PORT, or :PORT for 127.0.0.1) instead of stdin and stdout; the token to give is printed once")
	anyHost := fs.Bool("listen-any", false, "with --http: allow an address other than loopback (the token then crosses the network in clear)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 0 {
		return usageErr(stderr, fs, "mcp takes no arguments (got %q): use --dir for another directory", pos[0])
	}
	if *anyHost && *addr == "" {
		return usageErr(stderr, fs, "--listen-any goes with --http ADDR")
	}
	if code, ok := dirFlag(stderr, fs, "dir", *dir); !ok {
		return code
	}
	// Logs go to stderr only, as JSON lines unless asked otherwise: over
	// stdio, stdout is the protocol, and an MCP host keeps stderr as the
	// server's log.
	log, err := boot.Log{Format: g.logFormat, Level: g.logLevel, Quiet: g.quiet}.Logger(g.mask.Writer(stderr), "json")
	if err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	listen := *addr
	if listen != "" {
		if !strings.Contains(listen, ":") {
			listen = ":" + listen // a bare port
		}
		if strings.HasPrefix(listen, ":") && !*anyHost {
			listen = "127.0.0.1" + listen
		}
		if err := mcpserve.CheckAddr(listen, *anyHost); err != nil {
			return usageErr(stderr, fs, "--http %v", err)
		}
	}
	// The runs it starts are runs of this runner, in processes of their own.
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "runner mcp: finding this runner, which starts the runs: %v\n", err)
		return exitFailed
	}
	srv := mcpserve.New(mcpserve.Options{Dir: *dir, Runner: self, Version: version, Log: log, Mask: g.mask})
	defer srv.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if listen == "" {
		err := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			fmt.Fprintf(stderr, "runner mcp: %v\n", err)
			return exitFailed
		}
		return exitOK
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
		return usageErr(stderr, fs, "--http %s: %v", *addr, err)
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
