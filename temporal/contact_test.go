package temporal

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A step's worker that cannot reach the server stops the step once half
// the heartbeat timeout has passed since its last successful check; a
// check that succeeds starts the count again; a step already ending
// (its context done) is not blamed on the server.
func TestContactLost(t *testing.T) {
	down := errors.New("context deadline exceeded")
	t0 := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		checks []error         // one per beat
		at     []time.Duration // when each beat ends, after t0
		lostAt int             // the beat that stops the step; -1: none
	}{
		{"reachable", []error{nil, nil, nil}, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, -1},
		{"cut off", []error{down, down, down}, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, 1},
		{"a blip shorter than half the timeout", []error{down, nil, down, down}, []time.Duration{time.Second, 1500 * time.Millisecond, 2500 * time.Millisecond, 3 * time.Second}, -1},
		{"back, then cut off again", []error{down, nil, down, down, down}, []time.Duration{time.Second, 1500 * time.Millisecond, 2500 * time.Millisecond, 3 * time.Second, 3500 * time.Millisecond}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := 0
			c := &contact{timeout: 4 * time.Second, lastOK: t0, check: func(context.Context) error { return tc.checks[i] }}
			for i = range tc.checks {
				err := c.beat(context.Background(), time.Second, func() time.Time { return t0.Add(tc.at[i]) })
				switch {
				case i == tc.lostAt && !errors.Is(err, errContactLost):
					t.Fatalf("beat %d: %v; want the step stopped for lost contact", i, err)
				case i != tc.lostAt && err != nil:
					t.Fatalf("beat %d: %v; want the step to go on", i, err)
				}
				if err != nil {
					return
				}
			}
		})
	}
	var c *contact // no heartbeat timeout: nothing to lose
	if err := c.beat(context.Background(), time.Second, time.Now); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c = &contact{timeout: time.Second, lastOK: t0, check: func(context.Context) error { return down }}
	if err := c.beat(ctx, time.Second, func() time.Time { return t0.Add(time.Hour) }); err != nil {
		t.Fatalf("a step already canceled: %v; want no blame on the server", err)
	}
}
