package temporal

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"
)

// Garbage collection: a blob is kept while some run Temporal still knows
// (open, or closed but within the namespace's retention) references it,
// directly in its history or through another kept blob (a board chunk
// names its predecessor; a payload moved to the store names the chain
// heads inside it). Everything else older than the grace period goes.
//
// The order makes it safe beside running workflows: references are
// collected (mark) before the store is listed (sweep), and only blobs
// last written before now-Grace are deleted. A run that starts while gc
// runs writes its blobs (or rewrites them: Put refreshes a present blob's
// time) after gc began, so they are younger than the grace period.

// GCOptions tune GC.
type GCOptions struct {
	Namespace string
	// Grace: blobs written more recently than this are kept, referenced
	// or not (default DefaultGCGrace). It must exceed the longest time
	// between a blob's Put and the history event naming it: a workflow
	// task, a start.
	Grace  time.Duration
	DryRun bool // count, delete nothing
}

// DefaultGCGrace is GC's default grace period.
const DefaultGCGrace = time.Hour

// GCReport is what GC found and did.
type GCReport struct {
	Runs          int   // workflow executions whose histories were read
	Referenced    int   // blobs kept because a run references them
	Young         int   // unreferenced blobs kept as younger than the grace period
	Deleted       int   // unreferenced blobs deleted (or, with DryRun, that would be)
	DeletedBytes  int64 //
	Kept, Scanned int   // blobs left, blobs listed
}

// nameRE finds blob names in history events and blobs: any sha256 in hex.
// A string that only looks like one keeps a blob alive, never the reverse.
var nameRE = regexp.MustCompile(`[0-9a-f]{64}`)

// GC deletes the blobs of store no run in Temporal references any longer.
func GC(ctx context.Context, c client.Client, store Sweeper, o GCOptions) (GCReport, error) {
	var rep GCReport
	if o.Grace <= 0 {
		o.Grace = DefaultGCGrace
	}
	began := timeNow()
	marked := map[string]bool{}
	var queue []string
	mark := func(data []byte) {
		for _, m := range nameRE.FindAll(data, -1) {
			if n := string(m); !marked[n] {
				marked[n] = true
				queue = append(queue, n)
			}
		}
	}
	// Every execution of the plan workflow visibility still lists, open
	// or closed, continued-as-new parts included.
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: o.Namespace, Query: fmt.Sprintf("WorkflowType = '%s'", WorkflowName), PageSize: 500, NextPageToken: token})
		if err != nil {
			return rep, fmt.Errorf("listing the runs of namespace %s: %w", o.Namespace, err)
		}
		for _, e := range resp.GetExecutions() {
			ex := e.GetExecution()
			it := c.GetWorkflowHistory(ctx, ex.GetWorkflowId(), ex.GetRunId(), false, 0)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					return rep, fmt.Errorf("reading the history of %s: %w (no blob deleted)", ex.GetWorkflowId(), err)
				}
				data, err := proto.Marshal(ev)
				if err != nil {
					return rep, err
				}
				mark(data)
			}
			rep.Runs++
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	// What the referenced blobs reference in turn.
	for len(queue) > 0 {
		n := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		data, err := store.Get(n)
		if err != nil {
			continue // not a blob of this store (a plan's sha256, another store's), or gone
		}
		mark(data)
	}
	// Sweep.
	cutoff := began.Add(-o.Grace)
	var doomed []BlobInfo
	err := store.List(ctx, func(b BlobInfo) error {
		rep.Scanned++
		switch {
		case marked[b.Name]:
			rep.Referenced++
		case !b.Modified.Before(cutoff):
			rep.Young++
		default:
			doomed = append(doomed, b)
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	for _, b := range doomed {
		if !o.DryRun {
			if err := store.Delete(ctx, b.Name); err != nil {
				return rep, err
			}
		}
		rep.Deleted++
		rep.DeletedBytes += b.Size
	}
	rep.Kept = rep.Scanned - rep.Deleted
	return rep, nil
}
