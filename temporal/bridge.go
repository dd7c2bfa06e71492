package temporal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/sys/mask"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Bridge is the live board of a run on Temporal as a liveboard.Source:
// `runner board` and `runner answer` speak the liveboard protocol to it
// (served on a private socket by `runner-temporal bridge`), and it turns
// each call into an update (writes, answers) or a query (reads).
type Bridge struct {
	C          client.Client
	WorkflowID string
	RunID      string
	Board      string        // where the run's blackboard.json is (or will be) saved
	Store      Store         // to save the board when the run has ended
	Mask       *mask.Masker  // secrets of this environment, masked in what is sent
	Poll       time.Duration // how often a watch asks for changes (default 200ms)
	Timeout    time.Duration // one call's limit (default 30s)
}

// ErrEnded says the run has ended: its board is the saved blackboard.json.
var ErrEnded = errors.New("the run on Temporal has ended")

// Running reports whether the bridge's workflow still runs.
func (b *Bridge) Running(ctx context.Context) (bool, error) {
	d, err := b.C.DescribeWorkflowExecution(ctx, b.WorkflowID, "")
	if err != nil {
		return false, err
	}
	return d.WorkflowExecutionInfo.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// SaveEnded writes the ended run's board to b.Board unless it is there
// (the process that started the run normally writes it; this covers one
// that was killed).
func (b *Bridge) SaveEnded(ctx context.Context) error {
	var out Output
	if err := OutputOf(b.C.GetWorkflow(ctx, b.WorkflowID, "").Get(ctx, &out), &out); err != nil {
		return fmt.Errorf("the run's result: %w", err)
	}
	return SaveOnce(b.Store, out.Head, b.Board)
}

// SaveOnce writes the board a chain head stands for at path, under the
// run's lock, unless a complete file is there already: of two processes
// saving one run, one writes.
func SaveOnce(store Store, head, path string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerCLI})
		if err == nil {
			defer l.Unlock()
			break
		}
		var owned *boardlock.OwnedError
		if !errors.As(err, &owned) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := board.Load(path); err == nil {
		return nil
	}
	_, err := Save(store, head, path)
	return err
}

func (b *Bridge) ctx() (context.Context, context.CancelFunc) {
	t := b.Timeout
	if t <= 0 {
		t = 30 * time.Second
	}
	return context.WithTimeout(context.Background(), t)
}

func (b *Bridge) Ping() liveboard.Ping { return liveboard.Ping{Path: b.Board, RunID: b.RunID} }

// Write sends the write as an update with an id of its own, so a retry
// after a lost reply is not a second write.
func (b *Bridge) Write(q liveboard.WriteRequest) (board.Entry, error) {
	if err := b.masked(&q.Value); err != nil {
		return board.Entry{}, err
	}
	var e board.Entry
	err := b.update(WriteUpdate, q, &e)
	return e, err
}

func (b *Bridge) Answer(a board.Answer) (liveboard.AnswerReply, error) {
	var rep liveboard.AnswerReply
	if err := b.masked(&a.Answer); err != nil {
		return rep, err
	}
	err := b.update(AnswerUpdate, a, &rep)
	return rep, err
}

// masked replaces *v by itself with this environment's secrets masked in
// it, as runner masks what it writes to a board.
func (b *Bridge) masked(v any) error {
	if b.Mask == nil || b.Mask.Empty() {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b.Mask.Bytes(data), v)
}

func (b *Bridge) update(name string, arg, out any) error {
	ctx, cancel := b.ctx()
	defer cancel()
	id := make([]byte, 12)
	rand.Read(id)
	opt := client.UpdateWorkflowOptions{UpdateID: hex.EncodeToString(id), WorkflowID: b.WorkflowID, UpdateName: name,
		Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted}
	for {
		h, err := b.C.UpdateWorkflow(ctx, opt)
		if err == nil {
			err = h.Get(ctx, out)
			if err == nil {
				return nil
			}
		}
		var app *temporal.ApplicationError
		if errors.As(err, &app) { // refused by the run: a version mismatch, a bad answer...
			return Refused(err)
		}
		if running, derr := b.Running(ctx); derr == nil && !running {
			// Ended between the start of this command and now: save the
			// board so the command, run again, works on the file.
			if serr := b.SaveEnded(ctx); serr != nil {
				return fmt.Errorf("%w, and saving its board failed: %v", ErrEnded, serr)
			}
			return fmt.Errorf("%w: its board is saved at %s; run the command again to use it", ErrEnded, b.Board)
		}
		if !transient(err) || ctx.Err() != nil {
			return Refused(err)
		}
		time.Sleep(200 * time.Millisecond) // the server is away: the same update id again
	}
}

func (b *Bridge) query(name string, out any, args ...any) error {
	ctx, cancel := b.ctx()
	defer cancel()
	v, err := b.C.QueryWorkflow(ctx, b.WorkflowID, "", name, args...)
	if err != nil {
		return Refused(err)
	}
	return v.Get(out)
}

// QueryRun reads the run's description (its plan, vars, status, waiting
// inputs).
func (b *Bridge) QueryRun(run *board.Run) error { return b.query(RunQuery, run) }

func (b *Bridge) Read(agent, key string) (board.Entry, bool, error) {
	var rep liveboard.ReadReply
	if err := b.query(ReadQuery, &rep, ReadArgs{Agent: agent, Key: key}); err != nil || !rep.Found {
		return board.Entry{}, false, err
	}
	return *rep.Entry, true, nil
}

func (b *Bridge) Live(prefix, agent string) ([]board.Entry, error) {
	var es []board.Entry
	err := b.query(LiveQuery, &es, LiveArgs{Prefix: prefix, Agent: agent})
	return es, err
}

func (b *Bridge) Encode() ([]byte, error) {
	var data []byte
	err := b.query(BoardQuery, &data)
	return data, err
}

// Stream asks for the changes every Poll until stop closes; once the run
// has ended and every change was sent, it saves the board (if no one
// has) and returns, so a watch goes on on the file.
func (b *Bridge) Stream(f liveboard.Filter, send func(liveboard.Change) error, stop <-chan struct{}) error {
	poll := b.Poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	last := f.After
	for {
		var page Changes
		err := b.query(ChangesQuery, &page, ChangesArgs{Filter: liveboard.Filter{Prefix: f.Prefix, Topic: f.Topic, After: last}})
		if err == nil {
			for _, c := range page.Changes {
				if err := send(c); err != nil {
					return err
				}
			}
			last = page.Next
			if page.More {
				continue
			}
			if page.Ended {
				ctx, cancel := b.ctx()
				defer cancel()
				return b.SaveEnded(ctx)
			}
		} else if !transient(err) {
			return err
		}
		select {
		case <-stop:
			return nil
		case <-time.After(poll):
		}
	}
}
