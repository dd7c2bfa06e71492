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

	"github.com/planrunner/runner/mcpserve"
)

// cmdMCP serves runner over MCP (package mcpserve): over stdin and
// stdout, as an MCP client starts it, or with --http over streamable HTTP
// on a loopback address, to clients that give the token it prints.
func cmdMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("mcp", stderr)
	dir := fs.String("dir", ".", "the directory whose runs the server lists and starts (they are under DIR/.runner/runs)")
	addr := fs.String("http", "", "serve streamable HTTP on `ADDR` (127.0.0.1:PORT, or :PORT for 127.0.0.1) instead of stdin and stdout")
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
	if fi, err := os.Stat(*dir); err != nil || !fi.IsDir() {
		return usageErr(stderr, fs, "--dir %s: not a directory", *dir)
	}
	// Logs go to stderr only: over stdio, stdout is the protocol.
	if g.logFormat == "" {
		g.logFormat = "json"
	}
	log, err := g.logger(stderr, false)
	if err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	srv := mcpserve.New(mcpserve.Options{Dir: *dir, Version: version, Log: log, Mask: g.mask})
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
		return usageErr(stderr, fs, "--http %v", err)
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
		fmt.Fprintf(stderr, "runner mcp: %v\n", err)
		return exitUsage
	}
	// Printed once, on stdout (never logged): a client needs the URL and
	// the token, nothing else shows them.
	fmt.Fprintf(stdout, "url:   http://%s/mcp\ntoken: %s\n", ln.Addr(), token)
	if f, ok := stdout.(interface{ Sync() error }); ok {
		f.Sync()
	}
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
