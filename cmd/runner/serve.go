package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/planrunner/runner/internal/bigjson"
	"github.com/planrunner/runner/internal/server/web"
)

const serveUsage = "serve [--addr 127.0.0.1:0] [--dir DIR] [--allow-remote] [--people FILE] [--user-header NAME] [--stream-write-timeout 10s]"

// cmdServe serves the live web UI (package serve) until Ctrl-C.
func cmdServe(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("serve", stdout, stderr)
	addr := fs.String("addr", "127.0.0.1:0", "the address to listen on (port 0: any free port)")
	dir := fs.String("dir", ".", "the directory whose runs to show (they are under DIR/.runner/runs)")
	remote := fs.Bool("allow-remote", false, "listen on an address other than loopback: anyone who can reach it and learns the URL's token can read every run, answer its inputs, and start, stop, resume and fork runs")
	streamWrite := fs.Duration("stream-write-timeout", web.DefaultStreamWriteTimeout, "drop a page's event stream when its client takes none of a write for this long (the page opens it again)")
	peopleFile := fs.String("people", "", "a JSON file of per-person tokens, {\"NAME\": \"TOKEN\"}: each opens the server as its own token does and answers as NAME (answerers: checks it)")
	userHeader := fs.String("user-header", "", "trust this request header (set by an authenticating proxy in front of the server) as the name of who asks; off by default")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	people, err := readPeople(*peopleFile)
	if err != nil {
		return usageErr(stderr, fs, "--people: %v", err)
	}
	if len(pos) != 0 {
		return usageErr(stderr, fs, "serve takes no arguments (got %q): use --dir for another directory", pos[0])
	}
	if code, ok := dirFlag(stderr, fs, "dir", *dir); !ok {
		return code
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usageErr(stderr, fs, "--addr %q: want HOST:PORT, e.g. 127.0.0.1:8080", *addr)
	}
	loop := isLoopback(host)
	if !loop && !*remote {
		return usageErr(stderr, fs, "--addr %s is not a loopback address: the runs and their inputs would be open to the network; add --allow-remote if that is what you want", *addr)
	}
	log, err := g.logger(stderr, false)
	if err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "runner serve: %v\n", err)
		return exitFailed
	}
	srv, err := web.New(web.Options{
		Dir: *dir, By: whoAnswers(), Remote: !loop, Log: log, People: people, UserHeader: *userHeader, Stderr: g.mask.Writer(stderr), StreamWriteTimeout: *streamWrite,
		Resume: func(path string) error {
			// A run of its own, as `runner resume` in a terminal: the
			// server stays a viewer, and the run goes on if it stops.
			cmd := exec.Command(self, "resume", path, "-q")
			cmd.Stdout, cmd.Stderr = io.Discard, g.mask.Writer(stderr)
			if err := cmd.Start(); err != nil {
				return err
			}
			go cmd.Wait()
			return nil
		},
		Launch: func(dir string, args ...string) error {
			// A run or fork of its own, as typed in a terminal in dir.
			cmd := exec.Command(self, args...)
			cmd.Dir, cmd.Stdout, cmd.Stderr = dir, io.Discard, g.mask.Writer(stderr)
			if err := cmd.Start(); err != nil {
				return err
			}
			go cmd.Wait()
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "runner serve: %v\n", err)
		return exitFailed
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "runner serve: %v\n", err)
		return exitUsage
	}
	if !loop {
		fmt.Fprintf(stderr, "runner serve: warning: listening on %s, beyond this machine: whoever reaches it with the token below reads every run (outputs, prompts, board values), answers its inputs and starts, stops, resumes and forks runs; the connection is not encrypted\n", ln.Addr())
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintln(stdout, srv.URL(base))
	if f, ok := stdout.(interface{ Sync() error }); ok {
		f.Sync()
	}
	hs := srv.HTTPServer()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		hs.Close() // event streams do not end by themselves
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "runner serve: %v\n", err)
		return exitFailed
	}
	return exitOK
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readPeople reads serve's per-person tokens: a JSON object of name to
// token, each token long enough not to be guessed.
func readPeople(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var byName map[string]string
	if err := json.Unmarshal(b, &byName); err != nil {
		return nil, fmt.Errorf("%s: want a JSON object of name to token: %v", path, bigjson.Explain(b, err))
	}
	people := map[string]string{}
	for name, tok := range byName {
		if len(tok) < 16 {
			return nil, fmt.Errorf("%s: the token of %s is shorter than 16 characters", path, name)
		}
		if other, dup := people[tok]; dup {
			return nil, fmt.Errorf("%s: %s and %s have the same token", path, other, name)
		}
		people[tok] = name
	}
	return people, nil
}
