package temporal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A store's identity is a small object, runner-store.json, written once
// when the store is first used and never changed: {"id": "<random>"}.
// A run records the id of the store its client used (StartOptions, the
// workflow's memo); a worker reads its own store's id when it starts and
// refuses to poll for runs of another store (CheckStoreID), and a step
// whose run names another store fails without retrying. Two hosts
// pointing at "the same" directory or bucket that is not the same (a
// local directory on each, a typo in a prefix) are told so at once, not
// minutes later as missing blobs.
const storeIDFile = "runner-store.json"

// storeIdentity is runner-store.json's content.
type storeIdentity struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

// timeNow is time.Now; a variable so gc's tests can age blobs.
var timeNow = time.Now

func newStoreIdentity() ([]byte, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	return json.Marshal(storeIdentity{ID: "rs-" + hex.EncodeToString(b[:]), Created: timeNow().UTC()})
}

func parseStoreIdentity(where string, data []byte) (string, error) {
	var id storeIdentity
	if err := json.Unmarshal(data, &id); err != nil || id.ID == "" {
		return "", fmt.Errorf("%s: not a store identity (want {\"id\": ...}); delete it only if the store is empty", where)
	}
	return id.ID, nil
}

// ID reads Dir/runner-store.json, creating it (and Dir) on first use. Two
// processes creating it at once agree: the file is linked into place only
// if absent, and whoever loses reads the winner's.
func (s DirStore) ID() (string, error) {
	path := filepath.Join(s.Dir, storeIDFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(s.Dir, 0o755); err != nil {
			return "", err
		}
		fresh, ferr := newStoreIdentity()
		if ferr != nil {
			return "", ferr
		}
		tmp := filepath.Join(s.Dir, fmt.Sprintf(".id-%d-%d", os.Getpid(), timeNow().UnixNano()))
		if err := writeDurably(tmp, fresh, ".id-*"); err != nil {
			return "", err
		}
		lerr := os.Link(tmp, path) // fails if another process won
		os.Remove(tmp)
		if lerr != nil && !errors.Is(lerr, os.ErrExist) {
			return "", fmt.Errorf("writing the store identity %s: %w", path, lerr)
		}
		if lerr == nil {
			if err := syncDir(s.Dir); err != nil {
				return "", err
			}
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("reading the store identity: %w", err)
	}
	return parseStoreIdentity(path, data)
}

// StoreIDMemo is the memo key a run's store id is recorded under (and
// Input.StoreID carries it to every step).
const StoreIDMemo = "runner.store_id"

// errStoreMismatch is the type of a step's error when the worker's store is
// not the run's: not retried (another attempt on this worker fails alike).
const errStoreMismatch = "runner.store-mismatch"

// hostname names this host in messages.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "(unknown host)"
	}
	return h
}

// storeMismatch says a worker's store is not a run's, naming both ids,
// both stores' places as far as known, and the host.
func storeMismatch(runStore, workerStore, where, run string) error {
	return fmt.Errorf("the worker on %s uses the store %s (id %s), but %s was started with the store id %s: "+
		"the worker and the client must give the same --store (a shared bucket or directory)", hostname(), where, workerStore, run, runStore)
}

// StoreIDOfMemo reads a run's store id from its workflow memo ("" if none).
func StoreIDOfMemo(dc converter.DataConverter, memo *commonpb.Memo) string {
	p := memo.GetFields()[StoreIDMemo]
	if p == nil {
		return ""
	}
	var id string
	if dc.FromPayload(p, &id) != nil {
		return ""
	}
	return id
}

// CheckWorkerStore is what a worker does before it polls: it reads its
// store's id (creating the store on first use) and refuses to start when
// that is not expect (--expect-store-id), or when a run still open on its
// task queue was started with another store: such a worker could only
// fail those runs' steps, or slow them to a crawl. It returns the id, for
// the worker's log and Activities.StoreID.
func CheckWorkerStore(ctx context.Context, c client.Client, namespace, queue string, store Store, expect string) (string, error) {
	id, err := store.ID()
	if err != nil {
		return "", fmt.Errorf("the store %s: %w", store, err)
	}
	if expect != "" && expect != id {
		return "", fmt.Errorf("the worker on %s uses the store %s (id %s), not the expected store %s: give the same --store as the clients", hostname(), store, id, expect)
	}
	if c == nil {
		return id, nil
	}
	if err := ClaimQueueStore(ctx, c, queue, store, id, "worker"); err != nil {
		return "", err
	}
	q := fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running'", strings.ReplaceAll(queue, "'", ""))
	dc := converter.GetDefaultDataConverter()
	var token []byte
	for range 10 { // the newest thousand open runs are enough to tell
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, Query: q, PageSize: 100, NextPageToken: token})
		if err != nil {
			return "", fmt.Errorf("listing the open runs of task queue %s to check their store: %w", queue, err)
		}
		for _, e := range resp.GetExecutions() {
			if rid := StoreIDOfMemo(dc, e.GetMemo()); rid != "" && rid != id {
				return "", storeMismatch(rid, id, store.String(), "the open run "+e.GetExecution().GetWorkflowId())
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return id, nil
}

// The store a task queue's runs use is recorded in Temporal itself, the
// one thing every worker and client of the queue already shares: a
// schedule, QueueStoreRecord(queue), created paused and with no spec (it
// never starts anything), whose memo holds the store's id and place. A
// schedule's creation fails when one of that id exists, so the first
// worker or client of the queue records its store and everyone after
// reads that record; a schedule stays until deleted, where a closed
// marker workflow would go with the namespace's retention and an open one
// would show among the runs; and the Web UI lists it under Schedules with
// a note saying what it is. Deriving the task queue's name from the store
// id would keep mismatched hosts apart too, but silently: runs would wait
// for workers that never come instead of a refusal that says why.

// StoreMemo is the memo key of the store's place (Store.String) in a
// queue's record.
const StoreMemo = "runner.store"

// QueueStoreRecord is the id of the schedule that records the store of
// task queue queue's runs.
func QueueStoreRecord(queue string) string { return "runner-store." + queue }

// ClaimQueueStore records store (whose id is id) as the store of queue's
// runs when nothing is recorded yet, and otherwise refuses another store,
// naming both: who ("worker", "client") says who is refused. Called by
// every worker before it polls and every client before it starts a run,
// so a mistyped --store is refused at once, run open or not.
func ClaimQueueStore(ctx context.Context, c client.Client, queue string, store Store, id, who string) error {
	sid := QueueStoreRecord(queue)
	var err error
	for attempt := 0; ; attempt++ {
		_, err = c.ScheduleClient().Create(ctx, client.ScheduleOptions{
			ID:     sid,
			Action: &client.ScheduleWorkflowAction{ID: sid, Workflow: "runner.store-record", TaskQueue: sid},
			Paused: true,
			Note: fmt.Sprintf("runner's record of the store the runs of task queue %s use (it never runs): "+
				"delete it only to move the queue to another store, once no run is open", queue),
			Memo: map[string]any{StoreIDMemo: id, StoreMemo: store.String()},
		})
		if err == nil {
			return nil
		}
		if errors.Is(err, temporal.ErrScheduleAlreadyRunning) || !again(ctx, err, attempt) {
			break
		}
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("recording the store of task queue %s (schedule %s): %w", queue, sid, err)
	}
	// Another worker or client recorded it: read its record. Just after
	// its creation a schedule may not be described yet.
	var desc *client.ScheduleDescription
	for attempt := 0; ; attempt++ {
		desc, err = c.ScheduleClient().GetHandle(ctx, sid).Describe(ctx)
		if err == nil || !again(ctx, err, attempt) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("reading the store of task queue %s (schedule %s): %w", queue, sid, err)
	}
	dc := converter.GetDefaultDataConverter()
	recID := StoreIDOfMemo(dc, desc.Memo)
	if recID == id {
		return nil
	}
	var where string
	if p := desc.Memo.GetFields()[StoreMemo]; p == nil || dc.FromPayload(p, &where) != nil {
		where = "(unknown)"
	}
	return fmt.Errorf("this task queue's (%s) runs use store %s (id %s); this %s on %s has %s (id %s): "+
		"give every worker and client of the queue the same --store (to move the queue to another store once no run is open: "+
		"temporal schedule delete --schedule-id %s)", queue, where, recID, who, hostname(), store, id, sid)
}

// again says whether a call to the server that failed with err is worth
// another try, after a pause: a schedule not described yet just after
// its creation, or a call the server dropped (a busy server answers a
// schedule's describe, a query of its workflow, with a cancelled stream)
// while ctx still has time; at most 20 tries.
func again(ctx context.Context, err error, attempt int) bool {
	if attempt >= 20 || ctx.Err() != nil {
		return false
	}
	code := status.Code(err) // a gRPC error as it came
	var se interface{ Status() *status.Status }
	if errors.As(err, &se) { // the Temporal client's own error types
		code = se.Status().Code()
	}
	switch code {
	case codes.NotFound, codes.Unavailable, codes.Canceled, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
	default:
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Duration(100*(attempt+1)) * time.Millisecond):
		return true
	}
}
