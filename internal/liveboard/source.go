package liveboard

import (
	"errors"
	"sync"

	"github.com/planrunner/runner/internal/board"
)

// boardSource serves a board this process owns.
type boardSource struct {
	b        *board.Board
	mu       sync.Mutex
	onWrite  func(board.Entry)
	onAnswer func(board.Answer) (AnswerReply, error)
}

func (s *boardSource) Ping() Ping { return Ping{Path: s.b.Path(), RunID: s.b.Run().ID} }

// Write makes the write with meta.via "socket", so a replay can tell it
// from the plan's own.
func (s *boardSource) Write(q WriteRequest) (board.Entry, error) {
	e, err := s.b.Write(q.Op(board.ViaSocket))
	if err != nil {
		return e, err
	}
	s.mu.Lock()
	f := s.onWrite
	s.mu.Unlock()
	if f != nil {
		f(e)
	}
	return e, nil
}

func (s *boardSource) Read(agent, key string) (board.Entry, bool, error) {
	return s.b.ReadAs(agent, key)
}

func (s *boardSource) Live(prefix, agent string) ([]board.Entry, error) {
	return Live(s.b, prefix, agent), nil
}

func (s *boardSource) Encode() ([]byte, error) { return s.b.Encode() }

// LastVisit is the last visit of label that ended (lastVisitSource).
func (s *boardSource) LastVisit(label string) int { return s.b.LastVisit(label) }

func (s *boardSource) Stream(f Filter, send func(Change) error, stop <-chan struct{}) error {
	return stream(s.b, f, send, stop)
}

// Answer hands the answer to the function set with OnAnswer; without one
// the run takes answers once it has stopped (`runner answer` on the file).
func (s *boardSource) Answer(a board.Answer) (AnswerReply, error) {
	s.mu.Lock()
	f := s.onAnswer
	s.mu.Unlock()
	if f == nil {
		return AnswerReply{}, errors.New("this run answers its inputs once it has stopped, not while it runs")
	}
	return f(a)
}
