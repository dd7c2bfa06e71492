package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/planrunner/runner/agents"
	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
)

type visitKey struct {
	label string
	visit int
}

// checker compares a replay with its recording as the steps finish, and
// stops the replay at the first step whose path or result differs.
type checker struct {
	rec      *board.Board
	recorded map[visitKey]board.StepRecord // the last record of each visit
	order    []board.StepRecord            // completed records, in order
	children map[visitKey][]string         // a group visit's children, in the order they finished
	complete bool                          // the recorded run ran to its end
	fork     *fork
	stop     func(error)

	mu    sync.Mutex
	seen  map[visitKey]bool
	first string // the first divergence, as shown to the user
	ended string // where an unfinished recording ran out
}

var errEndOfRecording = errors.New("the recording ends here")

func newChecker(rec *board.Board, fk *fork) *checker {
	c := &checker{rec: rec, recorded: map[visitKey]board.StepRecord{}, children: map[visitKey][]string{},
		fork: fk, seen: map[visitKey]bool{}}
	st := rec.Run().Status
	c.complete = st == board.StatusSucceeded || st == board.StatusFailed
	for _, s := range rec.Steps() {
		c.recorded[visitKey{s.Label, s.Visit}] = s
		if s.Parent != "" { // a child's visit is its group's
			k := visitKey{s.Parent, s.Visit}
			c.children[k] = append(c.children[k], s.Label)
		}
		if finished(s) {
			c.order = append(c.order, s)
		}
	}
	return c
}

// groupOrder lists a group visit's children in the order the recording saw
// them finish.
func (c *checker) groupOrder(group string, visit int) []string {
	return c.children[visitKey{group, visit}]
}

func finished(s board.StepRecord) bool {
	return s.Status == engine.StatusSucceeded || s.Status == engine.StatusFailed || s.Status == engine.StatusSkipped
}

func (c *checker) isLive() bool { return c.fork != nil && c.fork.live.Load() }

// saved serves a local step's recorded result (--offline). A visit the
// recording does not have ends the replay: the path diverged, or an
// unfinished recording ran out.
func (c *checker) saved(label string, visit int) (board.StepRecord, bool) {
	s, ok := c.recorded[visitKey{label, visit}]
	if ok && finished(s) {
		return s, true
	}
	c.missing(label, visit)
	return board.StepRecord{Label: label, Visit: visit, Status: engine.StatusFailed,
		Error: fmt.Sprintf("replay: the recording has no result for step %s visit %d", label, visit)}, true
}

func (c *checker) missing(label string, visit int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.complete {
		if c.ended == "" && c.first == "" {
			c.ended = fmt.Sprintf("%s (visit %d)", label, visit)
			c.stop(errEndOfRecording)
		}
		return
	}
	c.divergeLocked(fmt.Sprintf("replay diverged at step %s (visit %d): the recording never ran this step visit (the path differs)\n", label, visit))
}

func (c *checker) StepStarted(label string, visit int, parent string) {
	if c.fork != nil && label == c.fork.label && visit == c.fork.visit {
		c.fork.live.Store(true)
	}
}

func (c *checker) StepFinished(now board.StepRecord) {
	if c.isLive() {
		return
	}
	k := visitKey{now.Label, now.Visit}
	was, ok := c.recorded[k]
	c.mu.Lock()
	c.seen[k] = true
	c.mu.Unlock()
	if !ok || !finished(was) {
		c.missing(now.Label, now.Visit)
		return
	}
	if now.Status == engine.StatusInterrupted || c.stopped() {
		return
	}
	a, b := normalResult(was.Result), normalResult(now.Result)
	if was.Status == now.Status && was.Goto == now.Goto && was.Error == now.Error && a == b {
		return
	}
	var d strings.Builder
	fmt.Fprintf(&d, "replay diverged at step %s (visit %d):\n", now.Label, now.Visit)
	fmt.Fprintf(&d, "  recorded: %s\n  now:      %s\n", outcome(was), outcome(now))
	if a != b {
		d.WriteString(unifiedDiff("recorded result", "replayed result", a, b))
	}
	c.mu.Lock()
	c.divergeLocked(d.String())
	c.mu.Unlock()
}

func (c *checker) stopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first != "" || c.ended != ""
}

func (c *checker) divergeLocked(text string) {
	if c.first == "" && c.ended == "" {
		c.first = text
		c.stop(errDiverged)
	}
}

func outcome(s board.StepRecord) string {
	out := s.Status
	if s.Goto != "" {
		out += ", goto " + s.Goto
	}
	if s.Error != "" {
		msg, _, _ := strings.Cut(s.Error, "\n")
		out += ": " + msg
	}
	return out
}

// verdict says how the replay differed from the recording, or "" when it
// did not. A model request that changed is shown as a diff of the prompts.
func (c *checker) verdict(runErr error, replayed *board.Board) string {
	var d *agents.Divergence
	if errors.As(runErr, &d) {
		return promptDivergence(d)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first != "" {
		return c.first
	}
	if c.isLive() || c.ended != "" {
		return ""
	}
	for _, s := range c.order {
		if !c.seen[visitKey{s.Label, s.Visit}] {
			return fmt.Sprintf("replay diverged: the replay ended, but the recording goes on with step %s (visit %d)\n", s.Label, s.Visit)
		}
	}
	if !c.complete {
		return ""
	}
	return boardDivergence(c.rec, replayed)
}

// promptDivergence shows a changed model request as a diff of its prompt.
func promptDivergence(d *agents.Divergence) string {
	var b strings.Builder
	if d.Recorded == nil {
		fmt.Fprintf(&b, "replay diverged at step %s (visit %d): it makes model call %d, which the recording does not have\n", d.Label, d.Visit, d.Call)
		return b.String()
	}
	fmt.Fprintf(&b, "replay diverged at step %s (visit %d), model call %d: the request differs from the recorded one\n", d.Label, d.Visit, d.Call)
	was, now := promptText(d.Recorded), promptText(d.Now)
	if was == now {
		was, now = prettyJSON(d.Recorded), prettyJSON(d.Now) // the prompt is the same: show what else changed
	}
	b.WriteString(unifiedDiff("recorded request", "replayed request", was, now))
	return b.String()
}

// promptText renders a canonical request as the text a person reads.
func promptText(raw json.RawMessage) string {
	var req agents.Request
	if err := json.Unmarshal(raw, &req); err != nil {
		return string(raw)
	}
	var b strings.Builder
	if req.System != "" {
		fmt.Fprintf(&b, "[system]\n%s\n", strings.TrimRight(req.System, "\n"))
	}
	for _, m := range req.Messages {
		fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, strings.TrimRight(m.Content, "\n"))
	}
	return b.String()
}

func prettyJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out) + "\n"
}

// normalResult is a step result as pretty JSON, with the fields that
// measure time set aside.
func normalResult(raw json.RawMessage) string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.MarshalIndent(dropTimes(v), "", "  ")
	return string(out) + "\n"
}

var timeKeys = map[string]bool{"duration_ms": true, "started_at": true, "finished_at": true, "ts": true, "id": true}

func dropTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			if timeKeys[k] {
				delete(x, k)
			} else {
				x[k] = dropTimes(x[k])
			}
		}
	case []any:
		for i := range x {
			x[i] = dropTimes(x[i])
		}
	}
	return v
}

// boardDivergence compares the two boards' entries with ids, times and
// sequence numbers set aside (parallel steps may interleave differently).
func boardDivergence(rec, now *board.Board) string {
	a, b := normalEntries(rec), normalEntries(now)
	if strings.Join(a, "\n") == strings.Join(b, "\n") {
		return ""
	}
	return "replay diverged: every step matched, but the board's entries differ\n" +
		unifiedDiff("recorded entries", "replayed entries", strings.Join(a, "\n")+"\n", strings.Join(b, "\n")+"\n")
}

func normalEntries(b *board.Board) []string {
	var out []string
	for _, e := range b.Entries() {
		e.ID, e.Seq = "", 0
		data, _ := json.Marshal(e)
		var v map[string]any
		json.Unmarshal(data, &v)
		delete(v, "ts")
		out = append(out, mustJSON(dropTimes(v)))
	}
	sort.Strings(out)
	return out
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
