package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/rs/zerolog"
)

// Batch APIs: the first model call of each item of a for_each visit
// (an llm step with batch: true) sent as one batch (OpenAI's Batch API,
// Anthropic's Message Batches) at the provider's batch price, polled
// until it ends. Each answer is then recorded as its item's call, as an
// ordinary answer is, so a replay needs no server.
//
// A batch outlives the process: its id goes on the board (board.Run's
// Batches) the moment the provider gives it, and before it is submitted
// the intent goes there with a key the batch carries (OpenAI: in its
// metadata; Anthropic, which keeps none: in each custom_id), so a resumed
// run finds the batch again rather than paying for a second.

// DefaultBatchPoll is how often a batch is polled when the step says
// nothing.
const DefaultBatchPoll = 30 * time.Second

// batchKeyMeta is the metadata field that carries a batch's key.
const batchKeyMeta = "runner_batch_key"

// BatchCall is one item's model call, waiting to go into a batch.
type BatchCall struct {
	agent *Agent
	req   *Request
}

// BatchOutcome is what a batch says of one call: its answer, or why it
// has none (the item failed, expired or was cancelled).
type BatchOutcome struct {
	Resp   *Response
	Reason string
}

// BatchOptions say which batch a step's calls make.
type BatchOptions struct {
	// Key names the batch across resumes (engine.Gather.Key).
	Key   string
	Label string // the for_each step
	Visit int
	// Poll is the wait between two polls (0: DefaultBatchPoll).
	Poll time.Duration
	Log  zerolog.Logger
}

// batcher is a provider with a batch API.
type batcher interface {
	// submit sends the calls (by custom_id) as one batch carrying key.
	// Before it retries the create, it asks adopt for the batch an
	// attempt whose answer was lost may have made, and takes it if found.
	submit(ctx context.Context, log zerolog.Logger, key string, calls map[string]*Request, adopt func(context.Context) (string, error)) (string, error)
	// find is the id of the batch carrying key, made since since with n
	// calls ("" when there is none).
	find(ctx context.Context, log zerolog.Logger, key string, since time.Time, n int) (string, error)
	// poll reads the batch's state.
	poll(ctx context.Context, log zerolog.Logger, id string) (batchState, error)
	// results reads an ended batch's outcomes by custom_id.
	results(ctx context.Context, log zerolog.Logger, st batchState) (map[string]BatchOutcome, error)
	cancel(ctx context.Context, log zerolog.Logger, id string) error
}

// batchState is a batch as a poll found it.
type batchState struct {
	ID     string
	Status string // the provider's word
	Ended  bool   // no call of it will change any more
	Reason string // why the whole batch failed, when it did
	// The provider's handles on its results.
	OutputFile, ErrorFile, ResultsURL string
}

// Batchable reports whether calls of agent name can go into a batch now:
// its provider has a batch API and the call would go to it (not a
// replay's recording).
func (s *Set) Batchable(name string, label string, visit int) bool {
	a, ok := s.agents[name]
	if !ok {
		return false
	}
	if _, ok := a.p.(batcher); !ok {
		return false
	}
	if s.replay != nil {
		f, fork := s.replay.(ForkSource)
		return fork && f.Live(label, visit)
	}
	return true
}

// batchCost is what a batched answer cost: at the batch price.
func batchCost(a *Agent, req *Request, resp *Response) (float64, bool) {
	model := resp.Model
	if model == "" {
		model = req.Model
	}
	p, ok := batchPrice(a, model)
	if !ok {
		if p, ok = batchPrice(a, req.Model); !ok {
			return 0, false
		}
	}
	return p.Cost(resp.Usage), true
}

// customID is the batch's name for item index: the key's head and the
// index, which Anthropic's custom_id pattern allows and which lets a
// batch found again be told from another's.
func customID(key string, index int) string {
	return key[:min(16, len(key))] + "-" + strconv.Itoa(index)
}

// RunBatch sends calls (by item index) as one batch of their agent's
// provider, or takes up the batch an earlier process of the run sent,
// waits for it to end, and returns each call's outcome. A cancelled ctx
// cancels the batch at the provider.
func (s *Set) RunBatch(ctx context.Context, b *board.Board, opt BatchOptions, calls map[int]*BatchCall) (map[int]BatchOutcome, error) {
	if len(calls) == 0 {
		return map[int]BatchOutcome{}, nil
	}
	var a *Agent
	idx := make([]int, 0, len(calls))
	for i, c := range calls {
		idx = append(idx, i)
		a = c.agent
	}
	sort.Ints(idx)
	p, ok := a.p.(batcher)
	if !ok {
		return nil, fmt.Errorf("agent %s: provider %s has no batch API", a.Name, a.Provider)
	}
	poll := opt.Poll
	if poll <= 0 {
		poll = DefaultBatchPoll
	}
	log := opt.Log.With().Str("agent", a.Name).Str("batch_key", opt.Key).Int("items", len(calls)).Logger()
	var saved *board.WaitingBatch
	if b != nil {
		for _, w := range b.Run().Batches {
			if w.Key == opt.Key {
				saved = &w
				break
			}
		}
	}
	id := ""
	if saved != nil {
		id = saved.ID
		if id == "" { // stopped between the intent and the provider's answer
			var err error
			if id, err = p.find(ctx, log, opt.Key, saved.Since.Add(-time.Minute), len(calls)); err != nil {
				return nil, fmt.Errorf("agent %s: finding the batch this run sent: %w", a.Name, err)
			}
			if id != "" {
				log.Info().Str("batch", id).Msg("found the batch the run sent before it stopped")
			}
		} else {
			log.Info().Str("batch", id).Msg("taking up the batch the run sent before it stopped")
		}
	}
	if id == "" {
		w := board.WaitingBatch{Label: opt.Label, Visit: opt.Visit, Agent: a.Name, Provider: a.Provider,
			Key: opt.Key, Items: len(calls), Since: time.Now().UTC()}
		if err := setBatch(b, w); err != nil {
			return nil, err
		}
		reqs := make(map[string]*Request, len(calls))
		for _, i := range idx {
			reqs[customID(opt.Key, i)] = calls[i].req
		}
		// A create whose answer is lost (a 5xx, a reset, a timeout) may
		// have made the batch: it is looked for before any new attempt,
		// and once more when the create gives up, so that one batch is
		// ever paid for.
		since := w.Since.Add(-time.Minute) // the provider's clock may lag ours
		adopt := func(ctx context.Context) (string, error) {
			found, err := p.find(ctx, log, opt.Key, since, len(calls))
			if found != "" {
				log.Info().Str("batch", found).Msg("the create's answer was lost; taking up the batch it made")
			}
			return found, err
		}
		var err error
		if id, err = p.submit(ctx, log, opt.Key, reqs, adopt); err != nil {
			if ctx.Err() != nil {
				// Cancelled: the intent stays for a resume to look for.
				return nil, fmt.Errorf("agent %s: submitting the batch: %w", a.Name, err)
			}
			var apiErr *APIError
			if errors.As(err, &apiErr) && !retryableStatus(apiErr.Status) {
				// Refused (not lost): a resume need not look for it.
				_ = dropBatch(b, opt.Key)
				return nil, fmt.Errorf("agent %s: submitting the batch: %w", a.Name, err)
			}
			found, ferr := adopt(ctx)
			switch {
			case ferr != nil:
				// Unknown: the intent stays for a resume to look again.
				return nil, fmt.Errorf("agent %s: submitting the batch: %w (and looking for it: %v)", a.Name, err, ferr)
			case found == "":
				_ = dropBatch(b, opt.Key)
				return nil, fmt.Errorf("agent %s: submitting the batch: %w", a.Name, err)
			}
			id = found
		}
		w.ID = id
		if err := setBatch(b, w); err != nil {
			return nil, err
		}
		log.Info().Str("batch", id).Msg("batch submitted")
	}
	log = log.With().Str("batch", id).Logger()
	st, err := s.waitBatch(ctx, b, log, p, opt.Key, id, poll)
	if err != nil {
		return nil, fmt.Errorf("agent %s: batch %s: %w", a.Name, id, err)
	}
	var got map[string]BatchOutcome
	if st.Reason == "" || st.OutputFile != "" || st.ErrorFile != "" || st.ResultsURL != "" {
		if got, err = p.results(ctx, log, st); err != nil {
			return nil, fmt.Errorf("agent %s: batch %s: reading its results: %w", a.Name, id, err)
		}
	}
	out := make(map[int]BatchOutcome, len(calls))
	failed := 0
	for _, i := range idx {
		o, ok := got[customID(opt.Key, i)]
		switch {
		case ok && o.Resp != nil:
			o.Resp.Batch = id
		case ok:
			failed++
		default:
			failed++
			o.Reason = "the batch ended " + st.Status + " without answering it"
			if st.Reason != "" {
				o.Reason += ": " + st.Reason
			}
		}
		out[i] = o
	}
	if err := dropBatch(b, opt.Key); err != nil {
		return nil, err
	}
	log.Info().Str("status", st.Status).Int("answered", len(calls)-failed).Int("failed", failed).Msg("batch ended")
	return out, nil
}

// waitBatch polls batch id until it ends, keeping the board's entry's
// status. A cancelled ctx cancels the batch and drops the entry.
func (s *Set) waitBatch(ctx context.Context, b *board.Board, log zerolog.Logger, p batcher, key, id string, poll time.Duration) (batchState, error) {
	last := ""
	for {
		st, err := p.poll(ctx, log, id)
		if err == nil && st.Ended {
			return st, nil
		}
		if err == nil && st.Status != last {
			last = st.Status
			log.Debug().Str("status", st.Status).Msg("batch polled")
			_ = updateBatch(b, key, func(w *board.WaitingBatch) { w.Status = st.Status })
		}
		if err == nil {
			err = sleepCtx(ctx, poll)
		}
		if err != nil {
			if ctx.Err() == nil {
				return batchState{}, err // the run stops; its resume polls again
			}
			// Cancelled (Ctrl-C): the batch is not left running for
			// nobody. Bounded: a run that stops does not hang on it.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if cerr := p.cancel(cctx, log, id); cerr != nil {
				log.Warn().Str("error", cerr.Error()).Msg("cancelling the batch")
			} else {
				log.Info().Msg("batch cancelled")
				_ = dropBatch(b, key)
			}
			return batchState{}, context.Cause(ctx)
		}
	}
}

// adoptBody is a create's beforeRetry: the batch adopt finds, as the
// create's answer would name it.
func adoptBody(adopt func(context.Context) (string, error)) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		id, err := adopt(ctx)
		if err != nil || id == "" {
			return nil, err
		}
		return json.Marshal(map[string]string{"id": id})
	}
}

// setBatch saves w on the board, in place of its key's entry.
func setBatch(b *board.Board, w board.WaitingBatch) error {
	if b == nil {
		return nil
	}
	return b.UpdateRun(func(r *board.Run) {
		r.Batches = slices.Clone(r.Batches)
		for i := range r.Batches {
			if r.Batches[i].Key == w.Key {
				r.Batches[i] = w
				return
			}
		}
		r.Batches = append(r.Batches, w)
	})
}

func updateBatch(b *board.Board, key string, f func(*board.WaitingBatch)) error {
	if b == nil {
		return nil
	}
	return b.UpdateRun(func(r *board.Run) {
		r.Batches = slices.Clone(r.Batches)
		for i := range r.Batches {
			if r.Batches[i].Key == key {
				f(&r.Batches[i])
			}
		}
	})
}

// dropBatch takes key's entry off the board: its batch ended.
func dropBatch(b *board.Board, key string) error {
	if b == nil {
		return nil
	}
	return b.UpdateRun(func(r *board.Run) {
		r.Batches = slices.DeleteFunc(slices.Clone(r.Batches), func(w board.WaitingBatch) bool { return w.Key == key })
		if len(r.Batches) == 0 {
			r.Batches = nil
		}
	})
}

// getJSON is a GET of a batch endpoint, with the provider's retries.
func (t *transport) get(ctx context.Context, x *exchange) ([]byte, error) {
	x.method = "GET"
	body, _, err := t.post(ctx, x)
	return body, err
}

// decodeBatchJSON decodes a batch endpoint's answer into v.
func decodeBatchJSON(provider, what string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: malformed %s (%v): %s", provider, what, err, errorBody(200, data))
	}
	return nil
}

// jsonLines calls f with each non-blank line of a JSONL file.
func jsonLines(data []byte, f func(line []byte) error) error {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := f(line); err != nil {
			return err
		}
	}
	return nil
}
