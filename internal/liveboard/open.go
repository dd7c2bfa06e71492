package liveboard

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
)

// Access reads and writes one run's board: through its owner's socket
// while the run is live, else on the file under the run's lock.
type Access interface {
	Write(q WriteRequest) (board.Entry, error)
	Read(agent, key string) (board.Entry, bool, error)
	Live(prefix, agent string) ([]board.Entry, error)
	Board() (*board.Board, error)
	Close() error
}

// Options tune Open.
type Options struct {
	// Wait is how long to wait for one holder of the lock (a CLI write, a
	// run starting up) before giving up; default 30s. While the lock keeps
	// changing hands (many writers queue), Open waits on.
	Wait time.Duration
	// Perms gives the agents' key patterns of a run that no one owns (from
	// its plan), so they are enforced on the file as the owner would.
	Perms func(board.Run) map[string]board.Perms
	// Now replaces the clock when working on the file (tests).
	Now func() time.Time
	// ReadOnly: the caller only reads. When the lock file cannot be made
	// (a directory this user may not write), the file is read without it.
	ReadOnly bool
	// Redact masks secrets in what is written to the file (a live run's
	// owner masks with its own).
	Redact board.Redact
	// KeysOnly (with ReadOnly): the caller reads live keys (Read, Live)
	// and seldom the whole board. A file no one owns is read for its keys
	// only (board.LoadLive), and Perms is called on the first read as a
	// named agent (an agent's key patterns are the only ones a read
	// obeys): `runner board FILE get` on a 100k-step run's file built its
	// step records and parsed its plan for nothing. Board then reads the
	// whole file.
	KeysOnly bool
}

// Open gives access to the board of the blackboard file at path. When a
// run owns it and serves it, the access goes through the socket; when no
// one owns it, Open takes the lock (Close releases it). A run that owns
// the lock but does not serve (yet) is waited for, up to o.Wait.
func Open(path string, o Options) (Access, error) {
	if err := board.CheckSaved(path); err != nil {
		return nil, err
	}
	if o.Wait == 0 {
		o.Wait = 30 * time.Second
	}
	deadline := time.Now().Add(o.Wait)
	delay := 500 * time.Microsecond
	var holder boardlock.Owner
	for {
		l, err := boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerCLI})
		if err == nil {
			var b *board.Board
			switch {
			case o.ReadOnly && o.KeysOnly:
				b, err = board.LoadLive(path)
			case o.ReadOnly:
				// A read decodes the values it hands out only: a get
				// on a 100 MB board no longer builds every entry.
				b, err = board.LoadForRead(path)
			default:
				b, err = board.OpenAppend(path, board.Options{Redact: o.Redact})
			}
			if err != nil {
				l.Unlock()
				return nil, err
			}
			if o.Now != nil {
				b.SetClock(o.Now)
			}
			a := &local{b: b, lock: l, path: path, o: o, keysOnly: o.ReadOnly && o.KeysOnly}
			if !a.keysOnly {
				a.setPerms()
			}
			return a, nil
		}
		var owned *boardlock.OwnedError
		if !errors.As(err, &owned) {
			if o.ReadOnly && (errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS)) {
				// A run in a directory this user may not write (someone
				// else's, a read-only mount) is still readable; no one
				// can be writing it through us.
				load := board.LoadForRead
				if o.KeysOnly {
					load = board.LoadLive
				}
				b, lerr := load(path)
				if lerr != nil {
					return nil, lerr
				}
				return &local{b: b, path: path, o: o, keysOnly: o.KeysOnly}, nil
			}
			return nil, err
		}
		if owned.Owner.Kind == boardlock.OwnerRun && owned.Owner.Socket != "" {
			if c, err := Dial(owned.Owner.Socket, path); err == nil {
				return c, nil
			}
		}
		if owned.Owner != holder {
			// Another holder: the lock is changing hands, so this is a
			// queue of short writes, not a stuck process. Wait on.
			holder, deadline = owned.Owner, time.Now().Add(o.Wait)
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(delay)
		delay = min(delay*2, 5*time.Millisecond)
	}
}

// local is access to a board no one else owns, under its lock.
type local struct {
	b    *board.Board
	lock *boardlock.Lock // nil: read without the lock (and without Perms)
	path string
	o    Options
	// keysOnly: b holds the live keys only (board.LoadLive), the agents'
	// key patterns not set yet (permsSet says when they are).
	keysOnly, permsSet bool
}

// setPerms sets the agents' key patterns on the board, once (on a board
// read under the lock, as before).
func (l *local) setPerms() {
	if l.permsSet || l.lock == nil || l.o.Perms == nil {
		return
	}
	l.permsSet = true
	l.b.SetPerms(l.o.Perms(l.b.Run()))
}

// as prepares a read by agent: its key patterns, when it has a name (the
// default reader, cli, has none: no agent of a plan is named "").
func (l *local) as(agent string) {
	if agent != "" {
		l.setPerms()
	}
}

func (l *local) Write(q WriteRequest) (board.Entry, error) {
	if l.lock == nil {
		return board.Entry{}, errors.New("board: opened read-only")
	}
	if err := q.Check(); err != nil {
		return board.Entry{}, err
	}
	return l.b.Write(q.Op(board.ViaCLI))
}
func (l *local) Read(agent, key string) (board.Entry, bool, error) {
	if err := board.CheckOutsideAuthor(agent); err != nil {
		return board.Entry{}, false, err
	}
	l.as(agent)
	return l.b.ReadAs(agent, key)
}
func (l *local) Live(prefix, agent string) ([]board.Entry, error) {
	if err := board.CheckOutsideAuthor(agent); err != nil {
		return nil, err
	}
	l.as(agent)
	return Live(l.b, prefix, agent), nil
}

// Board is the whole board: on a board read for its keys only, the file
// is read whole now (still under the lock).
func (l *local) Board() (*board.Board, error) {
	if !l.keysOnly {
		return l.b, nil
	}
	b, err := board.LoadForRead(l.path)
	if err != nil {
		return nil, err
	}
	if l.lock != nil && l.o.Now != nil {
		b.SetClock(l.o.Now)
	}
	l.b, l.keysOnly, l.permsSet = b, false, false
	l.setPerms()
	return b, nil
}

func (l *local) Close() error {
	if l.lock == nil {
		return nil
	}
	err := l.b.Close()
	if uerr := l.lock.Unlock(); err == nil {
		err = uerr
	}
	return err
}

// Watch streams the changes of the board at path that match f, as they
// are written, until ctx ends. While a run owns the board, they come from
// its socket; while no one does, the file is read again every poll (the
// lock is held only for each read, so writers go on).
func Watch(ctx context.Context, path string, f Filter, o Options, poll time.Duration, fn func(Change) error) error {
	last := f.After
	o.ReadOnly = true
	for ctx.Err() == nil {
		a, err := Open(path, o)
		if err != nil {
			return err
		}
		if c, ok := a.(*Client); ok {
			err := c.Watch(ctx, Filter{Prefix: f.Prefix, Topic: f.Topic, After: last}, func(ch Change) error {
				last = ch.Seq
				return fn(ch)
			})
			c.Close()
			if err != nil && ctx.Err() == nil {
				return err
			}
			if last < 0 {
				// The run ended before anything matched: go on from where
				// its board ends.
				if b, err := board.Load(path); err == nil {
					last = int64(b.Len())
				}
			}
			continue
		}
		b, _ := a.Board()
		if last < 0 {
			last = int64(b.Len())
		}
		var sendErr error
		for _, e := range b.Query(board.Filter{AfterSeq: last}) {
			last = e.Seq
			if f.Match(&e) {
				if sendErr = fn(ChangeOf(e)); sendErr != nil {
					break
				}
			}
		}
		a.Close()
		if sendErr != nil {
			return sendErr
		}
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		}
	}
	return nil
}
