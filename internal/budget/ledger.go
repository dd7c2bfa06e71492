// Package budget is the ledger of model spending shared by every run on
// the machine, against which budgets (plans.Budgets: per agent, model or
// plan, per calendar day or month in UTC) are checked before each call.
//
// The ledger is a directory of append-only files of JSON lines, one file
// per UTC month, written under an OS lock (flock) on a lock file beside
// them and fsynced after each append: concurrent runs in separate
// processes take turns, and a crash mid-write leaves at most a torn last
// line, which readers skip. A call reserves its worst case before it is
// sent (a hold) and settles it with its real cost after; a hold that is
// never settled (its process died) expires, so it does not count for
// ever.
//
// It may import the standard library, internal/plans and
// internal/sys/safefs (its OS lock) only.
package budget

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/sys/safefs"
)

// DirEnv names the ledger's directory in place of the default one.
const DirEnv = "RUNNER_BUDGET_DIR"

// Dir is where the ledger is: $RUNNER_BUDGET_DIR, else runner/budget in
// the user's config directory ("" when there is none).
func Dir(getenv func(string) string) string {
	if d := getenv(DirEnv); d != "" {
		return d
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "runner", "budget")
}

// Record is one line of the ledger.
type Record struct {
	ID string `json:"id"`
	Op string `json:"op"` // OpHold, OpSettle or OpRelease
	// Time is when the call was reserved: the day and month it counts in.
	Time   time.Time `json:"t"`
	Run    string    `json:"run,omitempty"`
	Plan   string    `json:"plan,omitempty"`
	Agent  string    `json:"agent,omitempty"`
	Model  string    `json:"model,omitempty"`
	USD    float64   `json:"usd"`
	Tokens int       `json:"tokens"`
	// Expires is when a hold stops counting unless settled.
	Expires time.Time `json:"exp,omitzero"`
}

// Ledger ops.
const (
	OpHold    = "hold"
	OpSettle  = "settle"
	OpRelease = "release"
)

// Charge is a call's cost, or the most it could cost.
type Charge struct {
	Run, Plan, Agent, Model string
	USD                     float64
	Tokens                  int
}

// Ledger is the ledger in one directory.
type Ledger struct {
	dir string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	mu  sync.Mutex // flock orders processes; this, goroutines sharing one Ledger
}

// Open is the ledger in dir; nothing is read or made until it is used.
func Open(dir string) *Ledger { return &Ledger{dir: dir} }

// Path is the ledger's directory.
func (l *Ledger) Path() string { return l.dir }

func (l *Ledger) now() time.Time {
	if l.Now != nil {
		return l.Now().UTC()
	}
	return time.Now().UTC()
}

// ExceededError is a call refused because its worst case would cross a
// budget. It was not sent.
type ExceededError struct {
	Budget plans.Budget
	// Spent is what the budget's scope has spent in its period, with what
	// calls under way hold; Next, the most the refused call could use.
	SpentUSD, NextUSD     float64
	SpentTokens, NextTok  int
	Agent, Model          string
	PeriodStart, PeriodTo time.Time
}

func (e *ExceededError) Error() string {
	b := e.Budget
	period := "today (UTC day " + e.PeriodStart.Format("2006-01-02") + ")"
	if b.Period == plans.PeriodMonth {
		period = "this month (UTC month " + e.PeriodStart.Format("2006-01") + ")"
	}
	where := ""
	if b.At != "" {
		where = " (" + b.At + ")"
	}
	if b.MaxCostUSD > 0 && e.SpentUSD+e.NextUSD > b.MaxCostUSD {
		return fmt.Sprintf("budget of %s per %s %s%s: the next call (agent %s, model %s) could cost up to %s, and %s is spent or held %s: it was not sent",
			b.Scope(), b.Period, usd(b.MaxCostUSD), where, e.Agent, e.Model, usd(e.NextUSD), usd(e.SpentUSD), period)
	}
	return fmt.Sprintf("budget of %s per %s %d tokens%s: the next call (agent %s, model %s) could use up to %d tokens, and %d are used or held %s: it was not sent",
		b.Scope(), b.Period, b.MaxTokens, where, e.Agent, e.Model, e.NextTok, e.SpentTokens, period)
}

// usd writes dollars as runner does elsewhere (board.FormatUSD), without
// importing it.
func usd(x float64) string {
	switch {
	case x == 0:
		return "$0.00"
	case x < 0.001:
		return fmt.Sprintf("$%.6f", x)
	case x < 0.01:
		return fmt.Sprintf("$%.4f", x)
	}
	return fmt.Sprintf("$%.2f", x)
}

// Applies reports whether budget b limits charge c.
func Applies(b plans.Budget, c Charge) bool {
	switch {
	case b.Agent != "":
		return b.Agent == c.Agent
	case b.Model != "":
		return strings.EqualFold(b.Model, c.Model)
	}
	return b.Plan != "" && b.Plan == c.Plan
}

// periodOf is the UTC day or month holding t: its start and its end.
func periodOf(period string, t time.Time) (time.Time, time.Time) {
	t = t.UTC()
	if period == plans.PeriodMonth {
		from := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		return from, from.AddDate(0, 1, 0)
	}
	from := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return from, from.AddDate(0, 0, 1)
}

// Hold is a call's reservation in the ledger.
type Hold struct {
	l    *Ledger
	rec  Record
	done bool
}

// Reserve checks that charge c, the most a call could cost, fits every
// budget in bs that applies to it, with what is spent and held in each
// budget's period, and holds it until Settle or Release (or ttl passes).
// A call that does not fit is refused with an *ExceededError and nothing
// is held. raise is added to every budget for this call (what a person
// allowed this run beyond it).
func (l *Ledger) Reserve(bs []plans.Budget, c Charge, ttl time.Duration, raise float64) (*Hold, error) {
	var apply []plans.Budget
	for _, b := range bs {
		if Applies(b, c) {
			apply = append(apply, b)
		}
	}
	if len(apply) == 0 {
		return nil, nil
	}
	now := l.now()
	var h *Hold
	err := l.locked(func(f *os.File) error {
		recs, err := l.read(now, now)
		if err != nil {
			return err
		}
		spent := Sum(recs, now)
		for _, b := range apply {
			from, to := periodOf(b.Period, now)
			var s Charge
			for _, e := range spent {
				if Applies(b, e.Charge) && !e.Time.Before(from) && e.Time.Before(to) {
					s.USD += e.USD
					s.Tokens += e.Tokens
				}
			}
			over := (b.MaxCostUSD > 0 && s.USD+c.USD > b.MaxCostUSD+raise+1e-12) ||
				(b.MaxTokens > 0 && s.Tokens+c.Tokens > b.MaxTokens)
			if over {
				return &ExceededError{Budget: b, SpentUSD: s.USD, NextUSD: c.USD, SpentTokens: s.Tokens, NextTok: c.Tokens,
					Agent: c.Agent, Model: c.Model, PeriodStart: from, PeriodTo: to}
			}
		}
		rec := Record{ID: newID(), Op: OpHold, Time: now, Run: c.Run, Plan: c.Plan, Agent: c.Agent, Model: c.Model,
			USD: c.USD, Tokens: c.Tokens, Expires: now.Add(ttl)}
		if err := l.append(rec); err != nil {
			return err
		}
		h = &Hold{l: l, rec: rec}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Settle replaces the hold with what the call really cost.
func (h *Hold) Settle(usdCost float64, tokens int) error {
	if h == nil || h.done {
		return nil
	}
	h.done = true
	rec := h.rec
	rec.Op, rec.USD, rec.Tokens, rec.Expires = OpSettle, usdCost, tokens, time.Time{}
	return h.l.locked(func(*os.File) error { return h.l.append(rec) })
}

// Release drops the hold: the call failed before costing anything.
func (h *Hold) Release() error {
	if h == nil || h.done {
		return nil
	}
	h.done = true
	rec := h.rec
	rec.Op, rec.USD, rec.Tokens, rec.Expires = OpRelease, 0, 0, time.Time{}
	return h.l.locked(func(*os.File) error { return h.l.append(rec) })
}

// Entry is one call in the ledger as it counts now: settled (its real
// cost) or held and not expired (its most).
type Entry struct {
	Charge
	Time    time.Time
	Pending bool // held, not settled yet
}

// Sum folds records into the calls they are at now: a settled hold
// counts its real cost, a released or expired one nothing.
func Sum(recs []Record, now time.Time) []Entry {
	type state struct {
		hold, settle *Record
		released     bool
	}
	by := map[string]*state{}
	var order []string
	for i := range recs {
		r := &recs[i]
		s := by[r.ID]
		if s == nil {
			s = &state{}
			by[r.ID] = s
			order = append(order, r.ID)
		}
		switch r.Op {
		case OpHold:
			s.hold = r
		case OpSettle:
			s.settle = r
		case OpRelease:
			s.released = true
		}
	}
	var out []Entry
	for _, id := range order {
		s := by[id]
		switch {
		case s.settle != nil:
			r := s.settle
			out = append(out, Entry{Charge: Charge{Run: r.Run, Plan: r.Plan, Agent: r.Agent, Model: r.Model, USD: r.USD, Tokens: r.Tokens}, Time: r.Time})
		case s.released || s.hold == nil:
		case now.Before(s.hold.Expires):
			r := s.hold
			out = append(out, Entry{Charge: Charge{Run: r.Run, Plan: r.Plan, Agent: r.Agent, Model: r.Model, USD: r.USD, Tokens: r.Tokens}, Time: r.Time, Pending: true})
		}
	}
	return out
}

// Records reads the ledger's records of calls reserved from since to
// until (both in UTC months' files; the caller filters by Time).
func (l *Ledger) Records(since, until time.Time) ([]Record, error) {
	var recs []Record
	err := l.locked(func(*os.File) error {
		var err error
		recs, err = l.read(since, until)
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return recs, err
}

// monthFile is the file of the records of calls reserved in t's month.
func (l *Ledger) monthFile(t time.Time) string {
	return filepath.Join(l.dir, "ledger-"+t.UTC().Format("2006-01")+".jsonl")
}

// read reads the months' files from since's month to until's. Lines
// that do not parse (a torn last line after a crash) are skipped.
func (l *Ledger) read(since, until time.Time) ([]Record, error) {
	var recs []Record
	for m, _ := periodOf(plans.PeriodMonth, since); !m.After(until); m = m.AddDate(0, 1, 0) {
		data, err := os.ReadFile(l.monthFile(m))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("budget ledger: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			var r Record
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.ID != "" {
				recs = append(recs, r)
			}
		}
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Time.Before(recs[j].Time) })
	return recs, nil
}

// append writes one record to its month's file and syncs it. A file whose
// last line was torn by a crash gets a newline first, so the record
// stands on a line of its own. Callers hold the lock.
func (l *Ledger) append(r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(l.monthFile(r.Time), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("budget ledger: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte("\n"), line...)
		} else if err != nil && err != io.EOF {
			return fmt.Errorf("budget ledger: %w", err)
		}
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("budget ledger: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("budget ledger: %w", err)
	}
	return nil
}

// locked runs fn holding the ledger's lock: the process's mutex, then the
// OS lock on the lock file, which the kernel drops if the process dies.
func (l *Ledger) locked(fn func(*os.File) error) error {
	if l.dir == "" {
		return errors.New("budget ledger: no directory for it (set " + DirEnv + ")")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("budget ledger: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(l.dir, "ledger.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("budget ledger: %w", err)
	}
	defer f.Close()
	// Where the OS has no flock, runs started at the same moment may
	// together cross a budget (docs/cost.md says so).
	if err := safefs.Flock(f); err != nil {
		return fmt.Errorf("budget ledger: lock: %w", err)
	}
	defer safefs.Unflock(f)
	return fn(f)
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
