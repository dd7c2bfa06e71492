package agents

import (
	"sync"

	"github.com/planrunner/runner/internal/board"
)

// Reuse answers a run's model calls from earlier runs' recordings while
// each request is byte for byte the one recorded under the same step,
// visit and call number (runner run --reuse). From the first call that
// differs, or that no recording has, every call goes to the providers:
// what follows a changed answer cannot be trusted to match. Reused answers
// are recorded as live ones are, so the new run replays on its own.
type Reuse struct {
	sources []ReplaySource

	tools bool // MCP exchanges are reused too (ReuseTools)

	mu    sync.Mutex
	live  bool
	stats ReuseStats
}

// ReuseStats count what a run took from recordings and what it paid for.
type ReuseStats struct {
	ReusedCalls  int `json:"reused_calls"`
	ReusedTokens int `json:"reused_tokens"`
	LiveCalls    int `json:"live_calls"`
	LiveTokens   int `json:"live_tokens"`
}

// NewReuse reuses the model answers of the given saved runs, the first
// one that has a call winning.
func NewReuse(runs ...*board.Board) *Reuse {
	u := &Reuse{}
	for _, b := range runs {
		u.sources = append(u.sources, FromRecordings(b.RecordingsKeyed()))
	}
	return u
}

// SetReuse makes the set answer calls from recordings first (see Reuse).
// It is called before the run's first step.
func (s *Set) SetReuse(u *Reuse) { s.reuse = u }

// GoLive sends every later call to the providers, as after a request
// that differs (a run on Temporal tells each worker once a call of the
// run, anywhere, went live).
func (u *Reuse) GoLive() {
	u.mu.Lock()
	u.live = true
	u.mu.Unlock()
}

// StatsOf counts what a run's model-call recordings took from earlier
// runs (answers marked reused) and what they paid for.
func StatsOf(recs []board.Recording) ReuseStats {
	var st ReuseStats
	for _, r := range recs {
		resp, ok := llmAnswer(r)
		if !ok {
			continue
		}
		if resp.Reused {
			st.ReusedCalls++
			st.ReusedTokens += resp.Usage.Total()
		} else {
			st.LiveCalls++
			st.LiveTokens += resp.Usage.Total()
		}
	}
	return st
}

// WentLive reports whether r is a model call its model answered (not an
// answer reused from an earlier run): from there on a run goes live.
func WentLive(r board.Recording) bool {
	resp, ok := llmAnswer(r)
	return ok && !resp.Reused
}

func llmAnswer(r board.Recording) (*Response, bool) {
	if r.Kind != KindLLM {
		return nil, false
	}
	resp, err := decodeUsage(r.Response) // its usage and flags: not the text
	return resp, err == nil
}

// Stats returns the counts so far.
func (u *Reuse) Stats() ReuseStats {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.stats
}

// answer is the recorded answer to a call whose request has the sha256
// sum, or false once the run has gone live.
func (u *Reuse) answer(c *callInfo, sum string) (*Response, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.live {
		return nil, false
	}
	for _, s := range u.sources {
		rec, ok := s.Recording(c.label, c.visit, c.call)
		if !ok || rec.RequestSHA256 != sum {
			continue
		}
		resp, err := decodeRecorded(rec)
		if err != nil {
			continue
		}
		u.stats.ReusedCalls++
		u.stats.ReusedTokens += resp.Usage.Total()
		return resp, true
	}
	u.live = true
	c.log.Info().Int("call", c.call).Msg("the request differs from every recording: going live from here")
	return nil, false
}

func (u *Reuse) paid(usage Usage) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stats.LiveCalls++
	u.stats.LiveTokens += usage.Total()
}
