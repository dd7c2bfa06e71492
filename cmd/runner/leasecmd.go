package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/runs"
)

// leaseCall is `runner board FILE lock KEY` and `unlock KEY`: a lease
// taken (waiting --wait for it), renewed while a command given after --
// runs, and released.
type leaseCall struct {
	path   string
	bo     runs.BoardOptions
	f      *boardFlags
	key    string
	cmd    []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func (l *leaseCall) open() (liveboard.Access, error) {
	a, _, err := runs.OpenBoard(l.path, l.bo)
	return a, err
}

func (l *leaseCall) request() liveboard.WriteRequest {
	return liveboard.WriteRequest{Key: l.key, TTL: l.f.ttl.Seconds(), Agent: l.f.agent, Owner: l.f.owner}
}

func (l *leaseCall) fail(err error) int {
	fmt.Fprintf(l.stderr, "runner board: %s\n", trimBoard(err))
	return exitFailed
}

func trimBoard(err error) string {
	s := err.Error()
	if len(s) > 7 && s[:7] == "board: " {
		return s[7:]
	}
	return s
}

// unlock releases the lease.
func (l *leaseCall) unlock() int {
	q := l.request()
	q.Lease, q.TTL = board.LeaseUnlock, 0
	if err := q.Check(); err != nil {
		fmt.Fprintf(l.stderr, "runner board: %s\n", trimBoard(err))
		return exitUsage
	}
	a, err := l.open()
	if err != nil {
		return l.fail(err)
	}
	e, err := a.Write(q)
	a.Close()
	if err != nil {
		return l.fail(err)
	}
	fmt.Fprintf(l.stdout, "unlocked %s (version %d)\n", e.Key, e.Version)
	return exitOK
}

// lock takes the lease; with a command, holds it (renewed every third of
// its TTL) while the command runs, then releases it and exits as the
// command did.
func (l *leaseCall) lock() int {
	if l.f.ttl <= 0 {
		fmt.Fprintln(l.stderr, "runner board: lock needs --ttl: a lease held by a process that died would never be released")
		return exitUsage
	}
	q := l.request()
	q.Lease = board.LeaseLock
	if err := q.Check(); err != nil {
		fmt.Fprintf(l.stderr, "runner board: %s\n", trimBoard(err))
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e, err := liveboard.Lock(ctx, l.open, q, l.f.wait)
	if err != nil {
		return l.fail(err)
	}
	if len(l.cmd) == 0 {
		fmt.Fprintf(l.stdout, "locked %s (version %d)\n", e.Key, e.Version)
		return exitOK
	}
	// The command's output is its own: what runner says goes to stderr.
	owner, _ := board.LeaseOwner(e)
	fmt.Fprintf(l.stderr, "runner board: %s locked by %s for %s (version %d), renewed while %s runs\n", e.Key, owner, time.Duration(l.f.ttl), e.Version, l.cmd[0])
	return l.hold(ctx, q)
}

// hold runs the command while renewing the lease. A renewal refused
// (the lease expired and another owner took it) stops the command: it
// no longer holds what it was started to hold.
func (l *leaseCall) hold(ctx context.Context, q liveboard.WriteRequest) int {
	cmd := exec.Command(l.cmd[0], l.cmd[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = l.stdin, l.stdout, l.stderr
	if err := cmd.Start(); err != nil {
		l.release(q)
		return l.fail(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	every := time.Duration(l.f.ttl) / 3
	tick := time.NewTicker(every)
	defer tick.Stop()
	lost := false
	var werr error
	interrupted := ctx.Done()
wait:
	for {
		select {
		case werr = <-done:
			break wait
		case <-interrupted:
			interrupted = nil
			cmd.Process.Signal(syscall.SIGTERM)
		case <-tick.C:
			if _, err := liveboard.Lock(ctx, l.open, q, 0); err != nil {
				fmt.Fprintf(l.stderr, "runner board: renewing %s: %s; stopping the command\n", q.Key, trimBoard(err))
				if errors.Is(err, board.ErrHeld) || errors.Is(err, board.ErrAbsent) {
					lost = true
					cmd.Process.Kill()
				}
			}
		}
	}
	if !lost {
		l.release(q)
	}
	var ee *exec.ExitError
	switch {
	case lost:
		return exitFailed
	case errors.As(werr, &ee):
		if code := ee.ExitCode(); code > 0 {
			return code
		}
		return exitFailed
	case werr != nil:
		return l.fail(werr)
	}
	return exitOK
}

func (l *leaseCall) release(q liveboard.WriteRequest) {
	q.Lease, q.TTL = board.LeaseUnlock, 0
	a, err := l.open()
	if err == nil {
		_, err = a.Write(q)
		a.Close()
	}
	if err != nil {
		fmt.Fprintf(l.stderr, "runner board: releasing %s: %s (it expires on its own)\n", q.Key, trimBoard(err))
	}
}
