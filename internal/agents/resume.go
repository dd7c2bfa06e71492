package agents

import "github.com/planrunner/runner/internal/board"

// Resume gives the set the model calls that a lost attempt of a step
// already made and recorded (on Temporal, checkpointed in the attempt's
// heartbeats before its worker died): the retry's calls are answered
// from them, each once, while its requests match, so what was answered
// is not paid for again. The answers are recorded as the model gave them
// (not marked reused: they are this run's own calls).
func (s *Set) Resume(recs []board.Recording) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		if r.Kind != KindLLM {
			continue
		}
		if s.resumed == nil {
			s.resumed = map[callKey]board.Recording{}
		}
		s.resumed[callKey{r.Kind, r.Label, r.Visit, r.Call}] = r
	}
}

// resumedAnswer is the checkpointed answer to call c, when its request
// (sha256 sum) is the one recorded.
func (s *Set) resumedAnswer(c *callInfo, sum string) (*Response, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := callKey{KindLLM, c.label, c.visit, c.call}
	rec, ok := s.resumed[k]
	if !ok {
		return nil, false
	}
	delete(s.resumed, k)
	if rec.RequestSHA256 != sum {
		return nil, false
	}
	resp, err := decodeResponse(rec.Response)
	if err != nil {
		return nil, false
	}
	c.log.Info().Int("call", c.call).Msg("answered before its worker was lost: taken from the checkpoint, not paid again")
	return resp, true
}
