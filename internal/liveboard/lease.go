package liveboard

import (
	"context"
	"errors"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// Lock takes the lease q names (q.Lease is set to lock), trying again
// while another owner holds it, until wait has passed or ctx ends; wait
// 0 tries once. Each try opens its own access with open and closes it
// before waiting: on a board no process owns the access holds the run's
// file lock, which the lease's holder needs to renew or release it.
func Lock(ctx context.Context, open func() (Access, error), q WriteRequest, wait time.Duration) (board.Entry, error) {
	q.Lease = board.LeaseLock
	if err := q.Check(); err != nil {
		return board.Entry{}, err
	}
	deadline := time.Now().Add(wait)
	delay := 10 * time.Millisecond
	for {
		a, err := open()
		if err != nil {
			return board.Entry{}, err
		}
		e, err := a.Write(q)
		a.Close()
		if err == nil || !errors.Is(err, board.ErrHeld) || !time.Now().Before(deadline) {
			return e, err
		}
		select {
		case <-ctx.Done():
			return board.Entry{}, err
		case <-time.After(min(delay, time.Until(deadline))):
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}
