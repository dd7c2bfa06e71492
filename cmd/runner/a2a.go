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

	"github.com/planrunner/runner/internal/server/a2aserve"
	"github.com/planrunner/runner/internal/server/mcpserve"
	"github.com/planrunner/runner/internal/sys/boot"
)

const a2aUsage = "a2a PLAN... [--http 127.0.0.1:PORT [--listen-any]] [--workdir DIR] [--base-url URL] [--no-token]"

// `runner a2a` serves plans as A2A agents (package a2aserve) in this
// process, their runs too: a task's progress is the run's, as it goes.

func cmdA2A(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("a2a", stdout, stderr)
	addr := fs.String("http", "127.0.0.1:8765", "listen on `ADDR` (127.0.0.1:PORT, or :PORT for 127.0.0.1; port 0 picks one)")
	anyHost := fs.Bool("listen-any", false, "allow an address other than loopback (the token then crosses the network in clear)")
	workdir := fs.String("workdir", ".", "the directory the runs' steps run in (runs are saved under DIR/.runner/runs)")
	base := fs.String("base-url", "", "the server's URL as clients reach it, named in the agent cards (default: http://ADDR)")
	noToken := fs.Bool("no-token", false, "take protocol calls without a token (behind a proxy that authenticates)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) == 0 {
		return usageErr(stderr, fs, "give the plans to serve")
	}
	if code, ok := dirFlag(stderr, fs, "workdir", *workdir); !ok {
		return code
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
	log, err := boot.Log{Format: g.logFormat, Level: g.logLevel, Quiet: g.quiet}.Logger(g.mask.Writer(stderr), "console")
	if err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	token := ""
	if !*noToken {
		if token, err = mcpserve.NewToken(); err != nil {
			fmt.Fprintf(stderr, "runner a2a: making the token: %v\n", err)
			return exitFailed
		}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return usageErr(stderr, fs, "--http %s: %v", *addr, err)
	}
	defer ln.Close()
	url := strings.TrimRight(*base, "/")
	if url == "" {
		url = "http://" + ln.Addr().String()
	}
	srv, err := a2aserve.New(a2aserve.Options{Plans: pos, Workdir: *workdir, BaseURL: url, Token: token,
		Version: version, Log: log, Mask: g.mask})
	if err != nil {
		fmt.Fprintf(stderr, "runner a2a: %v\n", err)
		return exitFailed
	}
	// Printed once, on stdout, never logged: a client needs the URLs and
	// the token, and nothing else shows the token.
	for _, n := range srv.Names() {
		fmt.Fprintf(stdout, "agent: %s/%s\n", url, n)
	}
	if token != "" {
		fmt.Fprintf(stdout, "token: %s\n", token)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		// Streams of runs under way are cut; their runs end interrupted,
		// saved, as a run in a shell ends on Ctrl-C.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	log.Info().Str("url", url).Strs("agents", srv.Names()).Msg("serving A2A")
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "runner a2a: %v\n", err)
		return exitFailed
	}
	return exitOK
}
