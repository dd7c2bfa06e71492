package runs

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/sys/mask"
)

// BoardOptions say how OpenBoard opens a run's board.
type BoardOptions struct {
	// ReadOnly: the caller only reads (liveboard.Options.ReadOnly).
	ReadOnly bool
	// KeysOnly: the caller reads live keys (liveboard.Options.KeysOnly):
	// the saved plan is parsed only for a read as a named agent.
	KeysOnly bool
	// Mask learns the saved plan's secrets and masks them in what is
	// written to a file no one owns; nil: a mask of its own.
	Mask *mask.Masker
	// Now replaces the clock on a run no one owns (tests move it past a
	// TTL); nil: the system clock.
	Now func() time.Time
	// Stderr receives a Temporal bridge's own messages; nil: dropped.
	Stderr io.Writer
}

// OpenBoard gives access to the board of the run at path as `runner
// board` has it, for any caller (the CLI, the MCP server): through the
// socket of the process running it, through a bridge to a run on Temporal
// still running, or on the saved file under the run's lock. On a file no
// one owns, the saved plan's key patterns apply, its secrets are masked in
// what is written, and each write is recorded for replay (as the live
// board's owner records those it takes), so a replay still matches. The
// path returned is the file worked on (for an ended run on Temporal, the
// blackboard.json it was saved to).
func OpenBoard(path string, o BoardOptions) (liveboard.Access, string, error) {
	if o.Mask == nil {
		o.Mask = mask.New()
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	remote, path, err := OpenRemote(path, o.Mask.Writer(o.Stderr))
	if err != nil {
		return nil, path, err
	}
	if remote != nil {
		return remote, path, nil
	}
	a, err := liveboard.Open(path, o.liveOptions())
	if err != nil {
		return nil, path, err
	}
	if _, live := a.(*liveboard.Client); live {
		return &reopening{Access: a, path: path, o: o}, path, nil
	}
	if !o.ReadOnly {
		a = afterRun{a}
	}
	return a, path, nil
}

// reopening is the access to a live run's board through the socket of
// the process running it. A run that ends between the open and a request
// takes its socket away: the request, which never reached it, is made
// again on the file the run has just saved, rather than failing with
// "dial unix …: no such file or directory". Only a request that provably
// never left (the dial failed) is made again, so no write is made twice.
type reopening struct {
	liveboard.Access // the socket's client; after the run ended, the file's
	path             string
	o                BoardOptions
}

// again reopens the board when err says the socket was gone, and says
// whether the request should be made again.
func (r *reopening) again(err error, tries int) bool {
	if _, live := r.Access.(*liveboard.Client); !live || tries >= 3 || !unreached(err) {
		return false
	}
	a, oerr := liveboard.Open(r.path, r.o.liveOptions())
	if oerr != nil {
		return false
	}
	r.Access.Close()
	if _, live := a.(*liveboard.Client); !live && !r.o.ReadOnly {
		a = afterRun{a}
	}
	r.Access = a
	return true
}

// unreached says whether err is a request that never reached the process
// it was for (its socket was gone).
func unreached(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (r *reopening) Write(q liveboard.WriteRequest) (board.Entry, error) {
	for tries := 0; ; tries++ {
		e, err := r.Access.Write(q)
		if err == nil || !r.again(err, tries) {
			return e, err
		}
	}
}

func (r *reopening) Read(agent, key string) (board.Entry, bool, error) {
	for tries := 0; ; tries++ {
		e, ok, err := r.Access.Read(agent, key)
		if err == nil || !r.again(err, tries) {
			return e, ok, err
		}
	}
}

func (r *reopening) Live(prefix, agent string) ([]board.Entry, error) {
	for tries := 0; ; tries++ {
		es, err := r.Access.Live(prefix, agent)
		if err == nil || !r.again(err, tries) {
			return es, err
		}
	}
}

func (r *reopening) Board() (*board.Board, error) {
	for tries := 0; ; tries++ {
		b, err := r.Access.Board()
		if err == nil || !r.again(err, tries) {
			return b, err
		}
	}
}

// Live says whether a is (still) the access through a live run's socket,
// not its saved file.
func Live(a liveboard.Access) bool {
	if r, ok := a.(*reopening); ok {
		a = r.Access
	}
	_, live := a.(*liveboard.Client)
	return live
}

// liveOptions are the liveboard options OpenBoard opens a file with.
func (o BoardOptions) liveOptions() liveboard.Options {
	m := o.Mask
	return liveboard.Options{Redact: m.String, Now: o.Now, ReadOnly: o.ReadOnly, KeysOnly: o.KeysOnly, Perms: func(run board.Run) map[string]board.Perms {
		p := SavedPlan(run)
		if p == nil {
			return nil
		}
		LearnSecrets(m, p)
		return engine.PlanPerms(p)
	}}
}

// LiveOptions are the liveboard options OpenBoard would open path's file
// with, for a caller that opens it itself (a watch, which reopens it as
// the run's owner comes and goes).
func LiveOptions(o BoardOptions) liveboard.Options { return o.liveOptions() }

// afterRun records each write made on the saved file of a run no process
// owns (it has ended, or stopped before a resume), as the live board's
// owner records the writes it takes, so that `runner replay` makes it
// again where it came and still matches the recording.
type afterRun struct{ liveboard.Access }

func (a afterRun) Write(q liveboard.WriteRequest) (board.Entry, error) {
	e, err := a.Access.Write(q)
	if err != nil {
		return e, err
	}
	b, err := a.Board()
	if err == nil {
		err = replay.RecordAfterRun(b, e)
	}
	if err != nil {
		return e, fmt.Errorf("%s was written (version %d), but recording the write for replay failed: %w", e.Key, e.Version, err)
	}
	return e, nil
}
