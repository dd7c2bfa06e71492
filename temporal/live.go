package temporal

import (
	"errors"
	"fmt"
	"strings"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/steps"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The live board of a run on Temporal: writes and answers are updates
// (each is in the workflow's history, so a replay of the workflow makes
// it again at the same point), reads are queries.
const (
	WriteUpdate  = "runner.board.write"
	AnswerUpdate = "runner.answer"
	ReadQuery    = "runner.board.read"
	LiveQuery    = "runner.board.live"
	ChangesQuery = "runner.board.changes"
	BoardQuery   = "runner.board"
	RunQuery     = "runner.run"
)

// ReadArgs are a read query's arguments.
type ReadArgs struct{ Agent, Key string }

// LiveArgs are a live query's arguments.
type LiveArgs struct{ Prefix, Agent string }

// ChangesArgs ask for the entries after seq After matching the filter,
// at most Limit of them.
type ChangesArgs struct {
	Filter liveboard.Filter
	Limit  int
}

// Changes is a page of a watch.
type Changes struct {
	Changes []liveboard.Change
	Next    int64 // the seq to ask after next time
	More    bool  // Limit was reached: ask again at once
	Ended   bool  // the run has its final status: no change will follow
}

// refusal is err as an application error whose type names its kind
// (liveboard.KindOf), so the client gets the same error back (Refused).
func refusal(err error) error {
	kind, _ := liveboard.KindOf(err)
	return temporal.NewNonRetryableApplicationError(err.Error(), "runner."+kind, nil)
}

// Refused maps an update's or query's error back onto board's sentinels.
func Refused(err error) error {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		return err
	}
	return liveboard.ErrorOf(strings.TrimPrefix(app.Type(), "runner."), app.Message())
}

// serve registers the live board's handlers.
func (it *interp) serve(ctx workflow.Context) error {
	err := workflow.SetUpdateHandlerWithOptions(ctx, WriteUpdate, it.write,
		workflow.UpdateHandlerOptions{Validator: func(q liveboard.WriteRequest) error {
			if it.ended {
				return errors.New("the run has ended")
			}
			return q.Check()
		}})
	if err == nil {
		err = workflow.SetUpdateHandlerWithOptions(ctx, AnswerUpdate, it.answer,
			workflow.UpdateHandlerOptions{Validator: func(a board.Answer) error {
				if it.ended {
					return errors.New("the run has ended")
				}
				if _, _, err := steps.Settle(it.b.Run(), it.b.Recordings(), a); err != nil {
					return refusal(err)
				}
				return nil
			}})
	}
	for name, h := range map[string]any{
		ReadQuery: func(a ReadArgs) (liveboard.ReadReply, error) {
			e, ok, err := it.b.ReadAs(a.Agent, a.Key)
			if err != nil {
				return liveboard.ReadReply{}, refusal(err)
			}
			if !ok {
				return liveboard.ReadReply{}, nil
			}
			return liveboard.ReadReply{Found: true, Entry: &e}, nil
		},
		LiveQuery:    func(a LiveArgs) ([]board.Entry, error) { return liveboard.Live(it.b, a.Prefix, a.Agent), nil },
		ChangesQuery: it.changes,
		BoardQuery:   func() ([]byte, error) { return it.b.Encode() },
		RunQuery:     func() (board.Run, error) { return it.b.Run(), nil },
	} {
		if err == nil {
			err = workflow.SetQueryHandler(ctx, name, h)
		}
	}
	return err
}

// write is an outside write: made on the board with meta.via "temporal"
// and recorded, so an offline replay of the saved run makes it again
// between the same two steps.
func (it *interp) write(ctx workflow.Context, q liveboard.WriteRequest) (board.Entry, error) {
	e, err := it.b.Write(q.Op(board.ViaTemporal))
	if err != nil {
		return e, refusal(err)
	}
	rec, err := replay.External(it.b, e)
	if err != nil {
		return e, refusal(err)
	}
	it.addRecording(rec)
	return e, nil
}

// answer records a person's answer to an input step; the step, waiting
// in the workflow, takes it at once.
func (it *interp) answer(ctx workflow.Context, a board.Answer) (liveboard.AnswerReply, error) {
	a, already, err := steps.Settle(it.b.Run(), it.b.Recordings(), a)
	if err != nil {
		return liveboard.AnswerReply{}, refusal(err)
	}
	if !already {
		it.addRecording(steps.AnswerRecording(a))
		it.answered[visitKey(a.Label, a.Visit)] = true
	}
	return liveboard.AnswerReply{Label: a.Label, Visit: a.Visit, Already: already}, nil
}

// addRecording puts r on the board and in the next chunk, as the board
// keeps it (masked).
func (it *interp) addRecording(r board.Recording) {
	if err := it.b.AddRecording(r); err != nil {
		panic(err) // an in-memory board does not refuse a recording
	}
	kept, _ := it.b.LastRecording() // the ledger's next flush takes it from the board
	it.live = it.live || agents.WentLive(kept)
}

func (it *interp) changes(a ChangesArgs) (Changes, error) {
	if a.Limit <= 0 || a.Limit > 1000 {
		a.Limit = 1000
	}
	last := a.Filter.After
	if last < 0 {
		last = int64(it.b.Len())
	}
	out := Changes{Next: last, Ended: it.ended}
	for _, e := range it.b.Query(board.Filter{AfterSeq: last}) {
		out.Next = e.Seq
		if a.Filter.Match(&e) {
			out.Changes = append(out.Changes, liveboard.ChangeOf(e))
			if len(out.Changes) >= a.Limit {
				out.More = true
				break
			}
		}
	}
	return out, nil
}

func visitKey(label string, visit int) string { return fmt.Sprintf("%s#%d", label, visit) }
