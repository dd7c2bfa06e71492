package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
)

// errContactLost is the cause a step is stopped with when its worker has
// not reached the Temporal server for longer than the heartbeat timeout.
var errContactLost = errors.New("this worker lost contact with the Temporal server")

// contact tells whether a running step's worker still reaches the server.
// The SDK records heartbeats in the background and says nothing when they
// fail; it stops the step only when the server answers again (the attempt
// has timed out) or when a call fails with Unavailable. A partition where
// calls just hang (a network cut, a firewall dropping packets) is neither:
// the step would run on beside its retry on another host, both writing
// the workspace the run's files come back from. So beside each heartbeat
// the worker checks the server's health endpoint (no database write); once
// no check has succeeded for half the heartbeat timeout, the step is
// stopped (its process group ended). Half: the SDK sends heartbeats at
// most every 0.8 of the timeout, so the server may time the attempt out
// sooner than a full timeout after the last check that succeeded; its
// retry also waits a retry interval (1 s), and on a pinned run the host
// timeout, before it starts.
type contact struct {
	check   func(context.Context) error
	timeout time.Duration // the activity's heartbeat timeout
	lastOK  time.Time
}

func newContact(ctx context.Context, now time.Time, check func(context.Context) error) *contact {
	ht := activity.GetInfo(ctx).HeartbeatTimeout
	if ht <= 0 || check == nil {
		return nil // nothing to lose, or no server to ask (the SDK's test environment)
	}
	return &contact{timeout: ht, lastOK: now, check: check}
}

// healthCheck asks c's server whether it is up. The worker's own client
// is used, not activity.GetClient: in the SDK's test environment that is
// a mock whose unexpected call ends the test process.
func healthCheck(c client.Client) func(context.Context) error {
	if c == nil {
		return nil
	}
	return func(ctx context.Context) error {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}
}

// beat checks the server once (for at most wait) and returns the cause to
// stop the step with, or nil.
func (c *contact) beat(ctx context.Context, wait time.Duration, now func() time.Time) error {
	if c == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, wait)
	err := c.check(cctx)
	cancel()
	if err == nil {
		c.lastOK = now()
		return nil
	}
	if ctx.Err() != nil {
		return nil
	}
	if lost := now().Sub(c.lastOK); lost >= c.timeout/2 {
		return fmt.Errorf("%w for %s (heartbeat timeout %s): the step runs again on another worker: %v",
			errContactLost, lost.Round(time.Millisecond), c.timeout, err)
	}
	return nil
}
