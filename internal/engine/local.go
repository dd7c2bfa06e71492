package engine

import (
	"context"
	"sync"
	"time"
)

// local drives a plan in this process: goroutines for a group's children,
// real timers (or Runner.Sleep), each step's Run here. A replay's hooks
// (Runner.Script) are the interpreter's; they need nothing of the driver.
type local struct{ r *Runner }

func (local) Cause(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return context.Cause(ctx)
}

func (local) WithCancel(ctx context.Context) (context.Context, func(error)) {
	c, cancel := context.WithCancelCause(ctx)
	return c, cancel
}

func (local) Now(context.Context) time.Time { return time.Now().UTC() }

func (d local) Sleep(ctx context.Context, dur time.Duration) error { return d.r.sleep(ctx, dur) }

// Await waits on the runner's condition, broadcast when a child of
// Parallel returns.
func (d local) Await(_ context.Context, ready func() bool) {
	d.r.waitMu.Lock()
	defer d.r.waitMu.Unlock()
	for !ready() {
		d.r.waitCond.Wait()
	}
}

func (d local) Parallel(ctx context.Context, n, limit int, child func(context.Context, int, bool)) {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		started := true
		select {
		case sem <- struct{}{}:
			if ctx.Err() != nil {
				<-sem
				started = false
			}
		case <-ctx.Done():
			started = false
		}
		if !started {
			child(ctx, i, false)
			d.r.wake()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer d.r.wake()
			child(ctx, i, true)
		}()
	}
	wg.Wait()
}

func (local) Leaf(ctx context.Context, a Attempt) (Result, error) { return a.Run(ctx) }

func (local) BeforeTop(context.Context, int) error { return nil }
func (local) Visiting(string, string, int)         {}
func (local) Visited(string, int)                  {}
func (local) Recorded(*Node)                       {}
