package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
)

// checker compares a replay with its recording as the steps finish, and
// stops the replay at the first step whose path or result differs.
type checker struct {
	s    *script
	stop func(error)
	ext  *externals
	b    *board.Board // the replay's
	// steps counts the replay board's step records (Board.Steps copies
	// them all: asking it after every step would cost the square of the run).
	steps int

	mu sync.Mutex
	// seen: of each segment's visits, those replayed, a bit for each
	// visit's last record (segment.last): a map of the visits was 5 MB
	// at 100k steps.
	seen  [][]uint64
	path  visitPath // the visits finished so far (written out only for a divergence)
	first *Divergence
}

// visitPath is the visits a replay finished, in order: each as the
// place of its record in the recording (4 bytes, where its label and
// visit took 24 and the label's copy), or, a visit the recording does
// not have, as itself.
type visitPath struct {
	at    []int32 // a place in the recording; -1-j: other[j]
	other []visitKey
}

func (p *visitPath) add(at int, recorded bool, k visitKey) {
	if recorded && at <= math.MaxInt32 {
		p.at = append(p.at, int32(at))
		return
	}
	p.at = append(p.at, int32(-1-len(p.other)))
	p.other = append(p.other, k)
}

// names are the visits as LABEL#VISIT.
func (p *visitPath) names(rec *board.Board) []string {
	out := make([]string, len(p.at))
	for i, at := range p.at {
		var k visitKey
		if at >= 0 {
			r := rec.StepKeyed(int(at))
			k = visitKey{r.Label, r.Visit}
		} else {
			k = p.other[-1-at]
		}
		out[i] = fmt.Sprintf("%s#%d", k.label, k.visit)
	}
	return out
}

var errDiverged = errors.New("replay diverged")

func newChecker(s *script) *checker {
	n := 0
	seen := make([][]uint64, len(s.segs))
	for i, g := range s.segs {
		n += g.len()
		seen[i] = make([]uint64, (g.len()+63)/64)
	}
	// Sized for the recording: grown step by step, its regrowing was the
	// part of a replay's per-step check that grew with the run.
	return &checker{s: s, seen: seen, path: visitPath{at: make([]int32, 0, n)}}
}

func (c *checker) StepStarted(label string, visit int, parent string) {
	if f := c.s.fork; f != nil && label == f.label && visit == f.visit {
		f.live.Store(true)
	}
}

func (c *checker) StepFinished(now board.StepRecord) {
	if c.s.live() {
		return
	}
	c.mu.Lock()
	c.steps++
	n := c.steps
	c.mu.Unlock()
	if c.ext != nil {
		c.ext.apply(c.b, n)
	}
	k := visitKey{now.Label, now.Visit}
	g := c.s.cur()
	at, was, ok := g.find(k)
	c.mu.Lock()
	if ok {
		i := at - g.from
		c.seen[c.s.seg][i/64] |= 1 << (i % 64)
	}
	c.path.add(at, ok, k)
	c.mu.Unlock()
	if !ok {
		c.diverge(&Divergence{Kind: KindPath, Label: now.Label, Visit: now.Visit,
			Message: "the recording never ran this step visit (the path differs)", Now: outcome(now)})
		return
	}
	if engine.Interrupted(now) || engine.Interrupted(was) || c.stopped() {
		return // cut short (a limit, an interrupt): what it got to is not an outcome
	}
	if cw := engine.CanceledBy(was); cw != engine.NotCanceled {
		// Canceled by a failed sibling: how far it got is a race, not an outcome.
		if engine.CanceledBy(now) == cw && now.Status == was.Status {
			return
		}
		c.diverge(&Divergence{Kind: KindResult, Label: now.Label, Visit: now.Visit,
			Message: "a failed sibling's fail_fast canceled it when recorded, not now", Recorded: outcome(was), Now: outcome(now)})
		return
	}
	// The same bytes need no normal forms (two decodes and two encodings
	// per step visit): a replayed result is encoded as the recorded one
	// was, a large string in it held by the same key.
	same := bytes.Equal(was.Result, now.Result)
	var a, b string
	if !same {
		a, b = normalResult(was.Result, was.Text), normalResult(now.Result, now.Text)
		same = a == b
		if n, ok := withoutNewUsage(was.Result, now.Result); !same && ok {
			b = normalResult(n, now.Text)
			same = a == b
		}
	}
	if was.Status == now.Status && was.Goto == now.Goto && was.Error == now.Error && same {
		return
	}
	d := &Divergence{Kind: KindResult, Label: now.Label, Visit: now.Visit, Message: "the step's outcome differs",
		Recorded: outcome(was), Now: outcome(now)}
	if !same {
		d.Diff = UnifiedDiff("recorded result", "replayed result", a, b)
	}
	c.diverge(d)
}

// replayed reports whether the replay finished visit k of segment g
// (the i-th).
func (c *checker) replayed(i int, g *segment, k visitKey) bool {
	j, ok := g.index(k)
	return ok && c.seen[i][j/64]&(1<<(j%64)) != 0
}

func (c *checker) stopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first != nil
}

func (c *checker) diverge(d *Divergence) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first != nil {
		return
	}
	d.Path = c.pathLocked(d.Label, d.Visit)
	c.first = d
	c.stop(errDiverged)
}

// pathLocked is the steps that led to a divergence: the visits replayed
// before it, ending with it.
func (c *checker) pathLocked(label string, visit int) []string {
	p := c.path.names(c.s.rec)
	here := fmt.Sprintf("%s#%d", label, visit)
	if label != "" && (len(p) == 0 || p[len(p)-1] != here) {
		p = append(p, here)
	}
	return p
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

// verdict says how the replay differed from the recording, or nil when it
// did not. A model request that changed is shown as a diff of the prompts.
func (c *checker) verdict(runErr error, replayed *board.Board) *Divergence {
	var ad *agents.Divergence
	if errors.As(runErr, &ad) {
		d := promptDivergence(ad)
		c.mu.Lock()
		d.Path = c.pathLocked(d.Label, d.Visit)
		c.mu.Unlock()
		return d
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first != nil {
		return c.first
	}
	if c.s.live() {
		return nil
	}
	for i, g := range c.s.segs[:c.s.seg+1] {
		for j := range g.len() {
			if s := g.at(j); finished(s) && !c.replayed(i, g, visitKey{s.Label, s.Visit}) {
				return &Divergence{Kind: KindPath, Label: s.Label, Visit: s.Visit, Path: c.pathLocked("", 0),
					Message: "the replay ended, but the recording goes on with this step visit"}
			}
		}
	}
	if c.s.seg != len(c.s.segs)-1 || !c.s.cur().complete() {
		return nil
	}
	d := boardDivergence(c.s.rec, replayed)
	if d != nil && c.ext != nil {
		// Writes from outside are the usual suspects: say which were made
		// again and where, and which the replay never got to.
		if done := Describe(c.ext.done); done != "" {
			d.Message += "; outside writes made again: " + done
		}
		if left := Describe(c.ext.pending()); left != "" {
			d.Message += "; outside writes not made again: " + left
		}
	}
	return d
}

// promptDivergence shows a changed model request as a diff of its prompt.
func promptDivergence(d *agents.Divergence) *Divergence {
	out := &Divergence{Kind: KindRequest, Label: d.Label, Visit: d.Visit, Call: d.Call}
	if d.Recorded == nil {
		out.Message = fmt.Sprintf("it makes model call %d, which the recording does not have", d.Call)
		return out
	}
	out.Message = fmt.Sprintf("model call %d: the request differs from the recorded one", d.Call)
	was, now := promptText(d.Recorded), promptText(d.Now)
	if was == now {
		was, now = prettyJSON(d.Recorded), prettyJSON(d.Now) // the prompt is the same: show what else changed
	}
	out.Diff = UnifiedDiff("recorded request", "replayed request", was, now)
	return out
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

// normalResult is a step result as pretty JSON, without what is not an
// outcome: the fields that measure time, transport noise (retries) and the
// names runner invents (a backup folder: a replay in the same checkout
// must not overwrite the recorded run's backups).
//
// text gives the text of a large string the record holds apart, its key
// in raw (board.StepRecord.Text): compared by that key, which is its
// SHA-256, without building or decoding the text.
func normalResult(raw json.RawMessage, text func(string) string) string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.MarshalIndent(digestHeld(digestLong(dropNoise(v)), text), "", "  ")
	return string(out) + "\n"
}

// longText is the length from which a string is compared, and shown in
// a diff, by its SHA-256: a 50 MiB answer was otherwise copied into the
// pretty form of both results and into every entry's normal form, and
// the replay's peak grew by several times the answer.
const longText = 4 << 10

// digestLong replaces the long strings of a decoded value by their
// length and digest: equal exactly when the strings are.
func digestLong(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) >= longText {
			// Through a small buffer: sha256's hash is no io.StringWriter,
			// so io.WriteString copied the whole string each time (300 MB
			// allocated for one 50 MiB answer in a replay).
			h := sha256.New()
			var buf [32 << 10]byte
			for s := x; len(s) > 0; {
				n := copy(buf[:], s)
				h.Write(buf[:n])
				s = s[n:]
			}
			return fmt.Sprintf("[%d bytes, sha256:%x]", len(x), h.Sum(nil))
		}
	case map[string]any:
		for k, e := range x {
			x[k] = digestLong(e)
		}
	case []any:
		for i, e := range x {
			x[i] = digestLong(e)
		}
	}
	return v
}

// digestHeld replaces the keys of the large strings a record holds apart
// by what digestLong makes of their texts: the key is the text's SHA-256.
func digestHeld(v any, text func(string) string) any {
	if text == nil {
		return v
	}
	switch x := v.(type) {
	case string:
		if t := text(x); len(t) != len(x) || t != x {
			return fmt.Sprintf("[%d bytes, %s]", len(t), x)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = digestHeld(e, text)
		}
	case []any:
		for i, e := range x {
			x[i] = digestHeld(e, text)
		}
	}
	return v
}

// usageDetail are the keys of a model step's usage that a file saved
// by an older runner does not have: its replay adds them.
var usageDetail = []string{"cache_read_input_tokens", "cache_creation_input_tokens", "reasoning_tokens"}

// withoutNewUsage is the replayed result now without the usage keys the
// recorded result was saved without; ok is false when there are none to
// take out.
func withoutNewUsage(was, now json.RawMessage) (json.RawMessage, bool) {
	var w, n struct {
		Usage map[string]any `json:"usage"`
	}
	if json.Unmarshal(was, &w) != nil || json.Unmarshal(now, &n) != nil || w.Usage == nil || n.Usage == nil {
		return nil, false
	}
	var drop []string
	for _, k := range usageDetail {
		if _, had := w.Usage[k]; !had {
			if _, has := n.Usage[k]; has {
				drop = append(drop, k)
			}
		}
	}
	if len(drop) == 0 {
		return nil, false
	}
	var whole map[string]any
	if json.Unmarshal(now, &whole) != nil {
		return nil, false
	}
	for _, k := range drop {
		delete(n.Usage, k)
	}
	whole["usage"] = n.Usage
	out, err := json.Marshal(whole)
	return out, err == nil
}

var noiseKeys = map[string]bool{
	"duration_ms": true, "started_at": true, "finished_at": true, "ts": true, "id": true, // time, ids
	"retries":    true, // transport noise
	"backup_dir": true, // an invented name
}

func dropNoise(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			if noiseKeys[k] {
				delete(x, k)
			} else {
				x[k] = dropNoise(x[k])
			}
		}
	case []any:
		for i := range x {
			x[i] = dropNoise(x[i])
		}
	}
	return v
}

// boardDivergence compares the two boards' entries with ids, times and
// sequence numbers set aside (parallel steps may interleave differently).
func boardDivergence(rec, now *board.Board) *Divergence {
	if rec.Len() == now.Len() {
		if same, _ := sameBoard(rec.All(), now.All()); same {
			return nil
		}
	}
	a, b := normalEntries(rec.All()), normalEntries(now.All())
	return &Divergence{Kind: KindBoard, Message: "every step matched, but the board's entries differ",
		Diff: UnifiedDiff("recorded entries", "replayed entries", strings.Join(a, "\n")+"\n", strings.Join(b, "\n")+"\n")}
}

func normalEntries(es iter.Seq[board.Entry]) []string {
	var out []string
	for e := range es {
		out = append(out, normalEntry(e))
	}
	sort.Strings(out)
	return out
}

func normalEntry(e board.Entry) string {
	e.ID, e.Seq = "", 0
	if c, ok := e.Content.(string); ok {
		e.Content = digestLong(c) // the common large value, not copied
	}
	data, _ := json.Marshal(e)
	var v map[string]any
	json.Unmarshal(data, &v)
	delete(v, "ts")
	out, _ := json.Marshal(digestLong(dropNoise(v)))
	return string(out)
}
