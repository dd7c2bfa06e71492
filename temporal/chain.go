package temporal

import (
	"encoding/json"
	"fmt"

	"github.com/planrunner/runner/internal/board"
	"go.temporal.io/sdk/workflow"
)

// The board's history travels as a chain of chunks in the Store. A chunk
// holds what changed since the previous one (the run description when it
// changed, new entries, step records, recordings) and names its
// predecessor, so a name (the head) stands for the whole board at one
// moment. The workflow adds a chunk before each activity that needs the
// board; a worker that saw an earlier head of the same chain reads only
// the chunks after it, so passing the board costs what changed, not the
// board's size.
type chunk struct {
	Prev       string             `json:"prev,omitempty"`
	Run        *board.Run         `json:"run,omitempty"`
	Entries    []board.Entry      `json:"entries,omitempty"`
	Steps      []board.StepRecord `json:"steps,omitempty"`
	Recordings []board.Recording  `json:"recordings,omitempty"`
	name       string             // its name in the Store, once read
}

func (c *chunk) empty() bool {
	return c.Run == nil && len(c.Entries) == 0 && len(c.Steps) == 0 && len(c.Recordings) == 0
}

// apply adds the chunk's records to b, keeping entry ids and times.
func (c *chunk) apply(b *board.Board) error {
	if c.Run != nil {
		run := *c.Run
		if err := b.UpdateRun(func(r *board.Run) { *r = run }); err != nil {
			return err
		}
	}
	for _, e := range c.Entries {
		if _, err := b.Append(e); err != nil {
			return fmt.Errorf("board chunk: entry %d: %w", e.Seq, err)
		}
	}
	for _, s := range c.Steps {
		if err := b.AddStep(s); err != nil {
			return err
		}
	}
	for _, r := range c.Recordings {
		if err := b.AddRecording(r); err != nil {
			return err
		}
	}
	return nil
}

func putChunk(s Store, c *chunk) (string, error) {
	data, err := encodeChunk(c)
	if err != nil {
		return "", err
	}
	return s.Put(data)
}

func getChunk(s Store, name string) (*chunk, error) {
	data, err := s.Get(name)
	if err != nil {
		return nil, err
	}
	c := &chunk{name: name}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("board chunk %s: %w", name, err)
	}
	return c, nil
}

// readChain returns the chunks from head back to stop (excluded), oldest
// first, and whether stop was met; stop "" reads the whole chain.
func readChain(s Store, head, stop string) ([]*chunk, bool, error) {
	var out []*chunk
	for name := head; name != ""; {
		if name == stop {
			reverse(out)
			return out, true, nil
		}
		c, err := getChunk(s, name)
		if err != nil {
			return nil, false, err
		}
		out = append(out, c)
		name = c.Prev
	}
	reverse(out)
	return out, stop == "", nil
}

func reverse(cs []*chunk) {
	for i, j := 0, len(cs)-1; i < j; i, j = i+1, j-1 {
		cs[i], cs[j] = cs[j], cs[i]
	}
}

// LoadBoard builds the board a chain's head stands for.
func LoadBoard(s Store, head string) (*board.Board, error) {
	cs, _, err := readChain(s, head, "")
	if err != nil {
		return nil, err
	}
	return buildBoard(head, cs)
}

// buildBoard builds the board of the chain cs (oldest first) ending at head.
func buildBoard(head string, cs []*chunk) (*board.Board, error) {
	if len(cs) == 0 || cs[0].Run == nil {
		return nil, fmt.Errorf("board chain %s does not start with the run", head)
	}
	b := board.New(*cs[0].Run)
	for _, c := range cs {
		if err := c.apply(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// ledger is the workflow's side of the chain: what changed on its board
// since the last chunk.
type ledger struct {
	io      storeIO
	head    string
	lastSeq int64
	run     *board.Run
	steps   []board.StepRecord
	// nrec is how many of the board's recordings are in the chain: the
	// next chunk takes the rest, whoever added them (an answer, a
	// worker's model calls, the interpreter's own: a for_each's items, a
	// sub-plan call's vars, which a worker running a callee step needs).
	nrec int
	// pending is the put of head under way (parallel branches flush
	// concurrently): a chunk is handed to a step only once it and every
	// chunk before it are in the store.
	pending workflow.Future
}

// flush writes what changed as a chunk and returns the new head, once
// that chunk (and every earlier one) is durable in the store.
func (l *ledger) flush(ctx workflow.Context, b *board.Board) (string, error) {
	// The put runs whatever becomes of the step that asked for it (a
	// sibling failing cancels it, the run being interrupted cancels all):
	// later chunks name this one.
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	for l.pending != nil {
		p := l.pending
		if err := p.Get(ctx, nil); err != nil {
			return "", err
		}
		if l.pending == p {
			l.pending = nil
		}
	}
	all := b.Recordings()
	c := &chunk{Prev: l.head, Run: l.run, Steps: l.steps}
	if l.nrec < len(all) {
		c.Recordings = all[l.nrec:]
	}
	c.Entries = b.Query(board.Filter{AfterSeq: l.lastSeq})
	if c.empty() {
		return l.head, nil
	}
	data, err := encodeChunk(c)
	if err != nil {
		return "", err
	}
	// What the chunk holds is taken now, so a branch flushing meanwhile
	// does not take it again; it waits for this put (pending) and chains
	// onto its name.
	l.advance(c, len(all))
	f, set := workflow.NewFuture(ctx)
	l.pending = f
	name, err := l.io.put(ctx, data)
	if err == nil {
		l.head = name
	}
	set.Set(nil, err)
	if l.pending == f {
		l.pending = nil
	}
	return name, err
}

// take is flush for a step that carries the chunk to its worker
// (StepInput.Chunk), which puts it and names it in its output: one
// store round trip and one history event fewer a step. It returns the
// chunk (nil: nothing changed since head) and the head it follows. Only
// a step that runs alone may take it: until landed, the chain's head is
// unknown, and a flush meanwhile would chain onto the one before.
func (l *ledger) take(ctx workflow.Context, b *board.Board) ([]byte, error) {
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	for l.pending != nil {
		p := l.pending
		if err := p.Get(ctx, nil); err != nil {
			return nil, err
		}
		if l.pending == p {
			l.pending = nil
		}
	}
	all := b.Recordings()
	c := &chunk{Prev: l.head, Run: l.run, Steps: l.steps}
	if l.nrec < len(all) {
		c.Recordings = all[l.nrec:]
	}
	c.Entries = b.Query(board.Filter{AfterSeq: l.lastSeq})
	if c.empty() {
		return nil, nil
	}
	data, err := encodeChunk(c)
	if err != nil {
		return nil, err
	}
	l.advance(c, len(all))
	return data, nil
}

// landed takes the name a step's worker gave the chunk it carried; ""
// (the worker never put it: the step failed first, or was canceled) puts
// it here.
func (l *ledger) landed(ctx workflow.Context, data []byte, name string) error {
	if name == "" {
		var err error
		ctx, _ = workflow.NewDisconnectedContext(ctx)
		if name, err = l.io.put(ctx, data); err != nil {
			return err
		}
	}
	l.head = name
	return nil
}

func (l *ledger) advance(c *chunk, nrec int) {
	if n := len(c.Entries); n > 0 {
		l.lastSeq = c.Entries[n-1].Seq
	}
	l.run, l.steps, l.nrec = nil, nil, nrec
}
