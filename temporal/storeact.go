package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/planrunner/runner/internal/board"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// storeActivities versions the change that took every Store read and
// write out of workflow code into local activities: histories recorded
// before it read and wrote the Store in the workflow task itself (a store
// failure panicked the task), and replay that way.
const storeActivities = "store-io-in-activities"

// storeActs are the Store's local activities: they run on the worker that
// runs the workflow task, in its process, and their results are recorded
// in the history (as markers), so workflow code stays deterministic and
// does no I/O. A store that fails is retried with backoff like any
// activity, rather than panicking the workflow task.
type storeActs struct{ store Store }

// PutBlob writes data and returns its name: durable (Store.Put's
// contract) before the name is handed to any step.
func (s storeActs) PutBlob(_ context.Context, data []byte) (string, error) {
	return s.store.Put(data)
}

// ReadChain returns the chunks of a board chain, oldest first: what a
// continued run starts from. A large result travels as a Store name
// (the blob codec), not in the history.
func (s storeActs) ReadChain(_ context.Context, head string) ([]*chunk, error) {
	cs, _, err := readChain(s.store, head, "")
	return cs, err
}

// storeOptions: a local activity per put, retried for as long as the store
// is down (with backoff up to a minute; the SDK turns a long wait into
// timers, so no workflow task is held). A local activity cannot
// heartbeat, so its timeout must be one a working store never reaches:
// past one S3 request's own bound (s3OpTimeout; a put is one request), or
// a slow but working put (a 3 MB chunk on a far link) would be cut and
// tried again for ever. A worker that dies meanwhile is noticed by its
// workflow task's timeout, not by this one.
var storeOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout: s3OpTimeout + time.Minute,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
		MaximumInterval: time.Minute},
}

// storeIO is how the interpreter reaches the Store: through local
// activities (the current workflow) or, replaying a history recorded
// before storeActivities, directly as that workflow did.
type storeIO struct {
	acts   storeActs
	direct bool
}

// put writes data and returns its name. ctx is disconnected from the
// run's cancellation: an interrupted run still writes its last chunk.
func (s storeIO) put(ctx workflow.Context, data []byte) (string, error) {
	if s.direct {
		return s.acts.store.Put(data)
	}
	var name string
	lctx := workflow.WithLocalActivityOptions(ctx, storeOptions)
	if err := workflow.ExecuteLocalActivity(lctx, s.acts.PutBlob, data).Get(lctx, &name); err != nil {
		return "", fmt.Errorf("writing a blob to the store: %w", err)
	}
	// The name is the history's, not Sum(data): replayed, a chunk may
	// differ in what no step reads (its entries' ids are random), and the
	// store holds the chunk the history named.
	return name, nil
}

// loadBoard builds the board a chain's head stands for.
func (s storeIO) loadBoard(ctx workflow.Context, head string) (*board.Board, error) {
	if s.direct {
		return LoadBoard(s.acts.store, head)
	}
	var cs []*chunk
	lctx := workflow.WithLocalActivityOptions(ctx, storeOptions)
	if err := workflow.ExecuteLocalActivity(lctx, s.acts.ReadChain, head).Get(lctx, &cs); err != nil {
		return nil, fmt.Errorf("reading board chain %s from the store: %w", head, err)
	}
	return buildBoard(head, cs)
}

func encodeChunk(c *chunk) ([]byte, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding a board chunk: %w", err)
	}
	return data, nil
}
