package liveboard

import (
	"strconv"
	"sync"

	"github.com/planrunner/runner/internal/sys/readlimit"
)

// AnswerChunk is a line of GET /v1/stream: a piece of the answer a
// running step's model is streaming (Text, of its Call-th model call),
// or (End) the step visit's end. The pieces are never saved: the run's
// recording holds the whole answer once the call is done.
type AnswerChunk struct {
	Label string `json:"label"`
	Visit int    `json:"visit"`
	Call  int    `json:"call,omitempty"`
	Text  string `json:"text,omitempty"`
	End   bool   `json:"end,omitempty"`
}

// answers holds what the running step visits' models have streamed so
// far, for the watchers of /v1/stream. A visit's text is dropped when it
// ends; what came past readlimit.Answer bytes of one visit is not kept.
type answers struct {
	mu    sync.Mutex
	live  map[string]*streaming
	ended map[string]int // a label's last visit that ended
	// lastVisit, when the source can say it (lastVisitSource), is the
	// last visit of a label that ended: ended then holds the labels
	// followed only (by followed watchers), not every label the run
	// ended (5 MB at 100k steps).
	lastVisit func(label string) int
	followed  map[string]int
	changed   chan struct{} // closed and replaced at every change
	closed    bool
}

// lastVisitSource is a Source that can say the last visit of a label
// that ended, from its step records.
type lastVisitSource interface {
	LastVisit(label string) int
}

// streaming is one visit's streamed text, in the pieces it came in.
type streaming struct {
	label  string
	visit  int
	pieces []AnswerChunk
	size   int
	ended  bool
}

func newAnswers() *answers {
	return &answers{live: map[string]*streaming{}, ended: map[string]int{}, followed: map[string]int{}, changed: make(chan struct{})}
}

// watch notes a watcher of label; the func it returns, its leaving.
// Under a.mu: ended holds label's last visit from here on.
func (a *answers) watch(label string) (leave func()) {
	a.followed[label]++
	if a.lastVisit != nil {
		a.ended[label] = max(a.ended[label], a.lastVisit(label))
	}
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.followed[label]--; a.followed[label] == 0 {
			delete(a.followed, label)
			if a.lastVisit != nil {
				delete(a.ended, label)
			}
		}
	}
}

func answerKey(label string, visit int) string { return label + "#" + strconv.Itoa(visit) }

// wake tells the watchers of a change; under mu.
func (a *answers) wake() {
	close(a.changed)
	a.changed = make(chan struct{})
}

func (a *answers) add(label string, visit, call int, text string) {
	if text == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	k := answerKey(label, visit)
	s := a.live[k]
	if s == nil {
		s = &streaming{label: label, visit: visit}
		a.live[k] = s
	}
	if s.size+len(text) > readlimit.Answer {
		return
	}
	s.size += len(text)
	s.pieces = append(s.pieces, AnswerChunk{Label: label, Visit: visit, Call: call, Text: text})
	a.wake()
}

func (a *answers) end(label string, visit int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := answerKey(label, visit)
	s := a.live[k]
	if s != nil {
		s.ended = true // a watcher holding it sends what it has not yet, then the end
		delete(a.live, k)
	}
	if a.lastVisit != nil && a.followed[label] == 0 {
		if s != nil {
			a.wake()
		}
		return // no watcher of it to tell
	}
	a.ended[label] = max(a.ended[label], visit)
	a.wake()
}

func (a *answers) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		a.wake()
	}
}

// follow sends the streamed answers of label's visit (0: of every visit
// of label streaming now or from now on), each from its start, and each
// visit's end, until that visit ends (visit given), stop closes, send
// fails or the server closes.
func (a *answers) follow(label string, visit int, send func(AnswerChunk) error, stop <-chan struct{}) error {
	sent := map[*streaming]int{} // the visits followed: pieces sent
	a.mu.Lock()
	defer a.watch(label)()
	lastEnded := a.ended[label] // visit 0: ends from now on only
	a.mu.Unlock()
	for {
		a.mu.Lock()
		var out []AnswerChunk
		for _, s := range a.live {
			if _, ok := sent[s]; !ok && s.label == label && (visit == 0 || s.visit == visit) {
				sent[s] = 0
			}
		}
		done, endSent := false, false
		for s, n := range sent {
			out = append(out, s.pieces[n:]...)
			sent[s] = len(s.pieces)
			if s.ended {
				out = append(out, AnswerChunk{Label: label, Visit: s.visit, End: true})
				delete(sent, s)
				done, endSent = done || visit != 0, true
			}
		}
		// A visit that ended without streaming, or before this watcher
		// saw it: its end alone.
		switch e := a.ended[label]; {
		case endSent || len(sent) > 0:
		case visit != 0 && visit <= e:
			out = append(out, AnswerChunk{Label: label, Visit: visit, End: true})
			done = true
		case visit == 0 && e > lastEnded:
			out = append(out, AnswerChunk{Label: label, Visit: e, End: true})
		}
		lastEnded = a.ended[label]
		changed, closed := a.changed, a.closed
		a.mu.Unlock()
		for _, c := range out {
			if err := send(c); err != nil {
				return err
			}
		}
		if done || closed {
			return nil
		}
		select {
		case <-changed:
		case <-stop:
			return nil
		}
	}
}
