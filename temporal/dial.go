package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/planrunner/runner/internal/sys/boot"
)

// Dial connects to the Temporal server o.HostPort and waits for its first
// answer, for at most timeout (0: boot.DefaultDialTimeout): a server
// that accepts the connection and then says nothing fails the dial, with
// an error naming the address, the wait and the flag that changes it.
func Dial(o client.Options, timeout time.Duration) (client.Client, error) {
	if timeout <= 0 {
		timeout = boot.DefaultDialTimeout
	}
	o.ConnectionOptions.GetSystemInfoTimeout = timeout
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := client.DialContext(ctx, o)
	var late *serviceerror.DeadlineExceeded
	switch {
	case err == nil:
		return c, nil
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &late):
		return nil, fmt.Errorf("reaching the Temporal server at %s: no answer within %s (--temporal-dial-timeout): %w", o.HostPort, timeout, err)
	}
	return nil, fmt.Errorf("reaching the Temporal server at %s: %w", o.HostPort, err)
}
