package budget

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/plans"
)

var day0 = time.Date(2026, 3, 31, 23, 0, 0, 0, time.UTC)

// A call is held only while it fits every budget that applies to it,
// with what is spent and held in the budget's UTC period; settled calls
// count their real cost, released and expired holds nothing.
func TestReserve(t *testing.T) {
	coderDay := plans.Budget{Agent: "coder", Period: plans.PeriodDay, MaxCostUSD: 1, At: "plan.yaml:4"}
	type step struct {
		after  time.Duration // from day0
		c      Charge
		settle float64 // -1: release; -2: leave held
		want   string  // "" ok, else the error
	}
	call := func(agent string, usd float64) Charge {
		return Charge{Plan: "p", Agent: agent, Model: "gpt-4o", USD: usd, Tokens: 100}
	}
	for _, tc := range []struct {
		name  string
		bs    []plans.Budget
		steps []step
	}{
		{"settled spending counts its real cost", []plans.Budget{coderDay}, []step{
			{0, call("coder", 0.6), 0.5, ""},
			{time.Minute, call("coder", 0.5), 0.5, ""},
			{2 * time.Minute, call("coder", 0.01), 0, "budget of agent coder per day $1.00 (plan.yaml:4): the next call (agent coder, model gpt-4o) could cost up to $0.01, and $1.00 is spent or held today (UTC day 2026-03-31): it was not sent"},
		}},
		{"a hold counts until it is settled", []plans.Budget{coderDay}, []step{
			{0, call("coder", 0.7), -2, ""},
			{time.Minute, call("coder", 0.4), 0, "budget of agent coder per day $1.00 (plan.yaml:4): the next call (agent coder, model gpt-4o) could cost up to $0.40, and $0.70 is spent or held today (UTC day 2026-03-31): it was not sent"},
		}},
		{"a released hold counts nothing", []plans.Budget{coderDay}, []step{
			{0, call("coder", 0.7), -1, ""},
			{time.Minute, call("coder", 0.7), 0.7, ""},
		}},
		{"a hold of a dead run expires", []plans.Budget{coderDay}, []step{
			{0, call("coder", 0.7), -2, ""},
			{11 * time.Minute, call("coder", 0.7), 0.7, ""},
		}},
		{"a new UTC day starts afresh", []plans.Budget{coderDay}, []step{
			{0, call("coder", 1), 1, ""},
			{time.Hour, call("coder", 1), 1, ""},
		}},
		{"a month counts every day of it", []plans.Budget{{Plan: "p", Period: plans.PeriodMonth, MaxCostUSD: 1}}, []step{
			{-48 * time.Hour, call("coder", 0.6), 0.6, ""},
			{0, call("other", 0.6), 0, "budget of plan p per month $1.00: the next call (agent other, model gpt-4o) could cost up to $0.60, and $0.60 is spent or held this month (UTC month 2026-03): it was not sent"},
		}},
		{"other agents are not limited", []plans.Budget{coderDay}, []step{
			{0, call("coder", 1), 1, ""},
			{time.Minute, call("reviewer", 5), 5, ""},
		}},
		{"tokens", []plans.Budget{{Model: "GPT-4o", Period: plans.PeriodDay, MaxTokens: 150}}, []step{
			{0, call("coder", 0), 0, ""},
			{time.Minute, call("coder", 0), 0, "budget of model GPT-4o per day 150 tokens: the next call (agent coder, model gpt-4o) could use up to 100 tokens, and 100 are used or held today (UTC day 2026-03-31): it was not sent"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Open(t.TempDir())
			for i, s := range tc.steps {
				l.Now = func() time.Time { return day0.Add(s.after) }
				h, err := l.Reserve(tc.bs, s.c, 10*time.Minute, 0)
				got := ""
				if err != nil {
					got = err.Error()
				}
				if got != s.want {
					t.Fatalf("call %d: %q\nwant %q", i, got, s.want)
				}
				if err != nil {
					if h != nil {
						t.Fatalf("call %d: refused and held", i)
					}
					continue
				}
				switch s.settle {
				case -1:
					err = h.Release()
				case -2:
				default:
					err = h.Settle(s.settle, s.c.Tokens)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A line torn by a crash mid-write is skipped, and the next record still
// stands on its own line.
func TestTornLine(t *testing.T) {
	l := Open(t.TempDir())
	l.Now = func() time.Time { return day0 }
	bs := []plans.Budget{{Agent: "a", Period: plans.PeriodDay, MaxCostUSD: 1}}
	h, err := l.Reserve(bs, Charge{Agent: "a", USD: 0.5}, time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.Settle(0.5, 1)
	f, _ := os.OpenFile(l.monthFile(day0), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"id":"x","op":"settle","t":"2026-03-31T23:00:00Z","agent":"a","usd":0.4`)
	f.Close()
	if _, err := l.Reserve(bs, Charge{Agent: "a", USD: 0.6}, time.Hour, 0); err == nil {
		t.Fatal("crossed the budget")
	}
	h, err = l.Reserve(bs, Charge{Agent: "a", USD: 0.4}, time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.Settle(0.4, 1)
	recs, err := l.Records(day0, day0)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(Sum(recs, day0)); got != 2 {
		t.Fatalf("%d calls, want 2: %+v", got, recs)
	}
}

// Goroutines of separate Ledgers on one directory (as separate processes
// are: each its own lock file description) never together cross it.
func TestConcurrentReserve(t *testing.T) {
	dir := t.TempDir()
	bs := []plans.Budget{{Plan: "p", Period: plans.PeriodDay, MaxCostUSD: 1}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := Open(dir)
			for range 5 {
				h, err := l.Reserve(bs, Charge{Plan: "p", USD: 0.1}, time.Hour, 0)
				var ex *ExceededError
				if errors.As(err, &ex) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				granted++
				mu.Unlock()
				h.Settle(0.1, 1)
			}
		}()
	}
	wg.Wait()
	if granted != 10 {
		t.Fatalf("%d calls of $0.10 granted against $1.00, want 10", granted)
	}
	if _, err := os.Stat(filepath.Join(dir, "ledger.lock")); err != nil {
		t.Fatal(err)
	}
}
